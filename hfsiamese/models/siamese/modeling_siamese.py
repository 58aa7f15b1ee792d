"""Siamese (bi-encoder) model: one shared encoder, L2-normalised embeddings, cosine similarity.

This file holds the `PreTrainedModel`, how it embeds (one side, several sides in length-sorted sub-batches) and its
forward. Its parts come from sibling files: the encoders (`lstm_encoder`, `static_encoder`, `transformer_encoder`:
a pretrained `AutoModel`'s class and dropout), the layers after them (`head_layers`: Dense layers, the pair
classification head), the building of both from a config or a pretrained checkpoint (`encoder_building`), what
`forward` returns (`model_output`); and `SiameseModel` inherits its safetensors-only loading (`safe_loading`), its inference API
(`inference`: encode, predict, classify), `calibrate` and the stored score-to-probability map (`calibration`), and
its Hub sharing (`hub_sharing`: save_pretrained's pipeline entry, push_to_hub).
All of them are copied next to the weights by ``save_pretrained`` (``register_for_auto_class``), with
every file they import relatively, so they import only torch, transformers and such siblings: a
checkpoint loads with ``AutoModel.from_pretrained(folder, trust_remote_code=True)`` where hfsiamese is
not installed.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from itertools import accumulate
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel

# A sibling marked "4.x" is not used here: transformers 4.x copies a local folder's modeling file with only the
# siblings it imports itself (the Hub path, and transformers 5, follow the imports further), so a sibling that only
# another sibling imports would be missing there and the folder would not load with trust_remote_code=True.
# tests/models/siamese/test_remote_code.py keeps the list whole.
from .adapters import has_adapters  # noqa: F401 (4.x)
from .calibration import CalibrationMixin
from .configuration_siamese import WORD_VOCABULARY_ENCODERS, SiameseConfig
from .encoder_building import build_dense_layers, build_encoder, load_dense_weights, load_pretrained_encoder
from .encoding_batches import padded_batches  # noqa: F401 (4.x)
from .encoding_policy import EncodingPolicyMixin  # noqa: F401 (4.x)
from .head_layers import DenseLayer, PairClassificationHead
from .hub_sharing import HubSharingMixin
from .inference import SiameseInferenceMixin
from .lstm_encoder import LSTMEncoder
from .model_output import SiameseModelOutput
from .one_shot_classification import ClassificationMixin  # noqa: F401 (4.x)
from .padding import is_right_padded
from .pair_decisions import PairDecisionMixin  # noqa: F401 (4.x)
from .pipeline_question_duplicates import QuestionDuplicatesPipeline  # noqa: F401 (4.x)
from .pooling import pool
from .safe_loading import SafetensorsLoadingMixin, refuse_pickle_loading
from .score_calibrator import ScoreCalibrator  # noqa: F401 (4.x)
from .scoring import pair_scores  # noqa: F401 (4.x)
from .static_encoder import StaticEncoder
from .sub_batching import AUTO, TokenBudget, check_sub_batching, plan_sub_batches, resolve_token_budget
from .token_fields import token_fields  # noqa: F401 (4.x)
from .transformer_encoder import encoder_class, with_dropout


class SentenceTransformersReader:
    """
    How a sentence-transformers folder (`modules.json`) is read into a `SiameseModel`. This folder travels as remote
    code and imports nothing of hfsiamese, so the reader is a hook: `import hfsiamese` sets the library's
    (`hfsiamese.library_hooks`, over `hfsiamese.bi_encoder`); without hfsiamese nothing reads such a folder.
    """

    def load(self, model_name_or_path: str, **model_arguments: Any) -> tuple[Any, Any]:
        """The model and tokenizer the folder describes (here: refused, hfsiamese is not imported)."""
        raise ImportError(
            "from_sentence_transformers reads the folder with hfsiamese: "
            "pip install git+https://github.com/hfsiamese/hfsiamese, then import hfsiamese"
        )

    def unfaithful_loading_warning(self, source: Any, **settings: Any) -> str | None:
        """What loading `source` with `settings` would leave out of its authors' configuration (None: nothing said)."""
        return None


def _warn_if_sentence_transformers_folder(source: Any, pooling: str, config_kwargs: dict[str, Any]) -> None:
    """Warn where `from_encoder_pretrained` is given a sentence-transformers model it would load otherwise than its authors."""
    message = SiameseModel.sentence_transformers_reader.unfaithful_loading_warning(
        source,
        pooling=pooling,
        dense_layers=config_kwargs.get("dense_layers"),
        default_prompt_name=config_kwargs.get("default_prompt_name"),
    )
    if message:
        warnings.warn(message + f"({str(source)!r})", UserWarning, stacklevel=3)


# Transformer families whose embeddings module only looks `input_ids` up (see `embed_sides`).
_INPUTS_EMBEDS_FAMILIES = frozenset({"bert", "roberta", "xlm-roberta", "mpnet", "distilbert"})


class SiamesePreTrainedModel(PreTrainedModel):
    config_class = SiameseConfig
    base_model_prefix = "siamese"
    main_input_name = "input_ids_a"
    supports_gradient_checkpointing = True
    _supports_sdpa = True

    def _set_gradient_checkpointing(self, enable: bool = True, *args: Any, **kwargs: Any) -> None:
        """
        Where `activation_checkpointing_enable()` (`gradient_checkpointing_enable()`, `--gradient_checkpointing`)
        lands: the transformer encoder's layers are recomputed in the backward pass instead of keeping their
        activations. Two things transformers' own version does not do for this model:

        - an LSTM or static encoder has no layers to checkpoint: refused in one line, instead of transformers'
          generic "not compatible";
        - the encoder's input embeddings are made to require gradients (`enable_input_require_grads`). With the
          reentrant variant (`use_reentrant=True`) a checkpointed layer gives gradients only when its input requires
          them, which it does not when the embeddings are frozen (LoRA adapters). transformers does this only for
          models whose main input is `input_ids`, which a Siamese model's is not. Where the embeddings train, their
          output requires gradients anyway, so this costs nothing.
        """
        if enable and getattr(self.config, "encoder_type", None) in WORD_VOCABULARY_ENCODERS:
            raise ValueError(
                f"gradient checkpointing applies to transformer encoders; this model's encoder is {self.config.encoder_type!r}"
            )
        encoder = getattr(self, "encoder", None)
        if enable and encoder is not None and getattr(encoder, "supports_gradient_checkpointing", True) is False:
            raise ValueError(
                f"gradient checkpointing: transformers' {type(getattr(encoder, 'base_model', encoder)).__name__} does not support it "
                "(e.g. MPNet); train with LoRA adapters (--lora_r) or a smaller batch instead"
            )
        super()._set_gradient_checkpointing(enable, *args, **kwargs)
        if enable:
            self.disable_input_require_grads()  # enabling twice must not leave two hooks
            self.enable_input_require_grads()
        else:
            self.disable_input_require_grads()


class SiameseModel(
    SafetensorsLoadingMixin, SiameseInferenceMixin, CalibrationMixin, HubSharingMixin, SiamesePreTrainedModel
):
    r"""
    A Siamese network: ONE encoder embeds both texts of a pair (shared weights), each embedding is
    pooled and L2-normalised, and the pair's score is their cosine similarity (or, with a classification
    head, the head's P(duplicate): see `scoring`). A calibrated `config.threshold` turns the score into
    duplicate / not duplicate.

    Its API, by the file that holds it:

    - here: `forward` (a batch of pairs → `SiameseModelOutput`), `embed` (one side), `embed_sides`,
      `from_encoder_pretrained` (a fresh model around a pretrained `AutoModel`), `set_sub_batching`;
    - `inference.py`: `encode`, `similarity`, `score_pairs`, `predict`, `duplicate_probabilities`,
      `classify`, `check_tokenizer` (this class is its `InferenceHost`: `padding_id` and `_embed_batch`
      below);
    - `calibration.py`: `calibrate` (a new domain's decision from a few labelled pairs);
    - `hub_sharing.py`: `save_pretrained` (also naming the pipeline), `push_to_hub` (weights, code,
      tokenizer and card in one commit);
    - `safe_loading.py`: `from_pretrained` that reads safetensors only and names the file it refuses.

    Examples:

    ```python
    >>> from transformers import AutoModel, AutoTokenizer
    >>> model = AutoModel.from_pretrained("outputs/lstm_qqp", trust_remote_code=True)
    >>> model.predict(["How do I learn Python?"], ["What is the best way to learn Python?"])
    ```
    """

    # Reads sentence-transformers folders (`from_sentence_transformers`); hfsiamese sets its own at import.
    sentence_transformers_reader: ClassVar[SentenceTransformersReader] = SentenceTransformersReader()

    def __init__(self, config: SiameseConfig) -> None:
        super().__init__(config)
        self.encoder, pooled_dim = build_encoder(config)
        self.dense, pooled_dim = build_dense_layers(config, pooled_dim)
        self.projection = nn.Linear(pooled_dim, config.projection_dim) if config.projection_dim else None
        embedding_dim = config.projection_dim or pooled_dim
        self.classifier = (
            PairClassificationHead(embedding_dim, config.classifier_hidden_size) if config.classifier_head else None
        )
        self._tokenizer = None  # the tokenizer saved beside the weights, loaded by the inference API on first need
        # Runtime settings, not saved with the weights (see `set_sub_batching`).
        self.sub_batch_tokens: TokenBudget = AUTO
        self.sub_batch_size: int | None = None
        self.post_init()

    def set_sub_batching(self, max_tokens: TokenBudget = AUTO, max_texts: int | None = None) -> None:
        """
        How a transformer encoder's calls are cut (`hfsiamese.models.siamese.sub_batching`): the texts of a forward (or of an
        `encode` batch) sorted by length, in sub-batches of at most `max_tokens` padded tokens and at most
        `max_texts` texts. "auto" (the default): a token budget on CPUs, one call per side on other devices.
        `max_tokens=0` or `max_texts=0` turns sub-batching off. A runtime choice: it is not saved with the model.
        """
        check_sub_batching(max_tokens, max_texts)
        self.sub_batch_tokens, self.sub_batch_size = max_tokens, max_texts

    # ----------------------------------------------------------------------------------------
    # Construction helpers
    # ----------------------------------------------------------------------------------------
    @classmethod
    def from_encoder_pretrained(
        cls,
        encoder_name_or_path: str,
        *,
        pooling: str = "mean",
        projection_dim: int | None = None,
        encoder_dropout: float | None = None,
        dense_weights: Sequence[dict[str, torch.Tensor]] | None = None,
        **config_kwargs: Any,
    ) -> SiameseModel:
        """
        Wrap a pretrained `AutoModel` checkpoint (e.g. all-MiniLM-L6-v2) as the shared encoder (safetensors weights
        only; an encoder–decoder such as T5 contributes its encoder alone).

        `encoder_dropout` overrides every dropout probability the encoder's config declares (hidden
        states and attention). `dense_weights` are the state dicts (`linear.weight`, `linear.bias`) of the
        `dense_layers` given in the config keyword arguments, in order (a sentence-transformers folder's Dense
        modules: `hfsiamese.bi_encoder.sentence_transformers_folder` reads them). `encoder_kwargs` go to
        `from_pretrained` of the encoder (e.g. `{"attn_implementation": "eager"}`); `sub_batch_tokens` and
        `sub_batch_size` to `set_sub_batching`; the other keyword arguments to [`SiameseConfig`].
        """
        encoder_kwargs = dict(config_kwargs.pop("encoder_kwargs", {}))
        if not config_kwargs.pop("_sentence_transformers_settings_read", False) and "subfolder" not in encoder_kwargs:
            _warn_if_sentence_transformers_folder(encoder_name_or_path, pooling, config_kwargs)
        sub_batching = (config_kwargs.pop("sub_batch_tokens", AUTO), config_kwargs.pop("sub_batch_size", None))
        check_sub_batching(*sub_batching)
        refuse_pickle_loading(encoder_kwargs)
        encoder = load_pretrained_encoder(encoder_name_or_path, encoder_kwargs, encoder_dropout)
        config = SiameseConfig(
            encoder_type="transformer",
            encoder_config=encoder.config.to_dict(),
            pooling=pooling,
            projection_dim=projection_dim,
            **config_kwargs,
        )
        model = cls(config)
        model.encoder = encoder
        model.config.encoder_config = encoder.config.to_dict()
        load_dense_weights(model.dense, dense_weights, config.dense_layers)
        model.set_sub_batching(*sub_batching)
        return model

    @classmethod
    def from_sentence_transformers(cls, model_name_or_path: str | os.PathLike, **model_arguments: Any) -> SiameseModel:
        """
        A sentence-transformers model (a folder or Hub id with a `modules.json`) as its authors configured it: the
        pooling of its `Pooling` module (CLS, mean, max, last token, ...), its `Dense` layers with their weights, its
        prompts and default prompt (`config_sentence_transformers.json`) and its `max_seq_length`; embeddings equal
        to `SentenceTransformer(model_name_or_path).encode(..., normalize_embeddings=True)` (hfsiamese's are unit
        vectors, so cosine scores agree with or without a `Normalize` module). The folder is read by the same code
        `hfsiamese train` starts from it with. A module hfsiamese cannot reproduce (a `Router`, a Dense with a
        residual, a pooling that leaves the prompt out, `do_lower_case`) is a ValueError naming it; a folder without
        `modules.json` too (use `from_encoder_pretrained` and choose a pooling).

        `model_arguments` are the training recipe's model options (`pooling`, `max_length`, `prompt_name`,
        `prompt`, `projection_dim`, `classifier_head`, `attn_implementation`, ...): each given overrides the
        folder's own, and the log says so. The tokenizer comes with the model: `model.encode(texts)` needs none.
        """
        model, tokenizer = cls.sentence_transformers_reader.load(str(model_name_or_path), **model_arguments)
        model._tokenizer = tokenizer
        return model

    def get_input_embeddings(self) -> nn.Module:
        if self.config.encoder_type in WORD_VOCABULARY_ENCODERS:
            return self.encoder.embeddings
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        if self.config.encoder_type in WORD_VOCABULARY_ENCODERS:
            self.encoder.embeddings = value
        else:
            self.encoder.set_input_embeddings(value)

    # ----------------------------------------------------------------------------------------
    # Forward
    # ----------------------------------------------------------------------------------------
    def embed(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Embed one side: pooled, projected and L2-normalised vectors of shape `(batch, dim)`."""
        if attention_mask is None:
            attention_mask = (input_ids != self.config.pad_token_id).long()
        if self.config.encoder_type in WORD_VOCABULARY_ENCODERS:  # LSTM and static encoders pool themselves
            return self._finish(self.encoder(input_ids, attention_mask))
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        return self._finish(self._pool(states, attention_mask))

    def padding_id(self) -> int:
        """The id this model pads with: its own vocabulary's (LSTM, static), else the transformer encoder's (0 when it names none)."""
        if self.config.encoder_type in WORD_VOCABULARY_ENCODERS:
            return self.config.pad_token_id
        return self.encoder.config.pad_token_id or 0

    def _pool(self, states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return pool(states, attention_mask, self.config.pooling)

    def _finish(self, pooled: torch.Tensor) -> torch.Tensor:
        if self.dense is not None:
            pooled = self.dense(pooled)
        if self.projection is not None:
            pooled = self.projection(pooled)
        return F.normalize(pooled.float(), p=2, dim=-1)

    def embed_sides(
        self, sides: Sequence[tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]]
    ) -> list[torch.Tensor]:
        """
        Embed several sides (`(input_ids, attention_mask, token_type_ids)` each) of one forward.

        Transformer encoders with sub-batching on (`set_sub_batching`; by default on CPUs) run all
        texts together, sorted by length, in sub-batches cut by a token budget and padded only to
        their own longest text: a batch padded to its longest question computes ~40% padding on QQP
        even with length-grouped batches, ~9% this way, and the batch (hence the in-batch negatives)
        is unchanged. Left-padded inputs take one call per side instead.
        """
        max_tokens, max_texts = resolve_token_budget(self.sub_batch_tokens, self.sub_batch_size, self.device)
        masks = [mask if mask is not None else (ids != self.config.pad_token_id).long() for ids, mask, _ in sides]
        off = max_tokens is None and max_texts is None
        # Only transformer encoders are sub-batched: an LSTM packs its sequences and a static encoder
        # computes nothing on padding, so neither would gain from it.
        word_encoder = self.config.encoder_type in WORD_VOCABULARY_ENCODERS
        if word_encoder or off or not all(is_right_padded(mask) for mask in masks):
            return [self.embed(ids, mask, types) for (ids, _, types), mask in zip(sides, masks, strict=True)]
        width = max(ids.shape[1] for ids, _, _ in sides)
        pad_id = self.padding_id()
        input_ids = torch.cat([F.pad(ids, (0, width - ids.shape[1]), value=pad_id) for ids, _, _ in sides])
        attention_mask = torch.cat([F.pad(mask, (0, width - mask.shape[1])) for mask in masks])
        token_type_ids = None
        if any(types is not None for _, _, types in sides):
            token_type_ids = torch.cat(
                [
                    F.pad(types, (0, width - types.shape[1])) if types is not None else torch.zeros_like(ids)
                    for ids, _, types in sides
                ]
            )
        lengths = attention_mask.sum(dim=1)
        order = torch.argsort(lengths, stable=True)
        sorted_lengths = lengths[order].tolist()  # one host sync for the whole plan
        sizes = plan_sub_batches(sorted_lengths, max_tokens=max_tokens, max_texts=max_texts)
        chunks = order.split(sizes)
        # Sorted ascending, so each sub-batch's longest text is its last one.
        widths = [sorted_lengths[end - 1] for end in accumulate(sizes)]
        # One embedding lookup for the whole batch: its backward then fills one dense gradient of
        # the vocabulary table instead of one per sub-batch.
        words = self.encoder.get_input_embeddings()(input_ids) if self._encoder_takes_inputs_embeds() else None
        pooled = []
        for chunk, chunk_width in zip(chunks, widths, strict=True):
            chunk_width = max(int(chunk_width), 1)
            mask = attention_mask[chunk, :chunk_width]
            inputs: dict[str, torch.Tensor] = {"attention_mask": mask}
            if words is not None:
                inputs["inputs_embeds"] = words[chunk, :chunk_width]
            else:
                inputs["input_ids"] = input_ids[chunk, :chunk_width]
            if token_type_ids is not None:
                inputs["token_type_ids"] = token_type_ids[chunk, :chunk_width]
            pooled.append(self._pool(self.encoder(**inputs).last_hidden_state, mask))
        embeddings = self._finish(torch.cat(pooled)[torch.argsort(order)])
        return list(embeddings.split([ids.shape[0] for ids, _, _ in sides]))

    def _embed_batch(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """One tokenised batch of `encode`, in length-sorted sub-batches like `forward`."""
        side = (features["input_ids"], features.get("attention_mask"), features.get("token_type_ids"))
        return self.embed_sides([side])[0]

    def _encoder_takes_inputs_embeds(self) -> bool:
        """Families whose embedding layer does nothing with `input_ids` but look them up (with
        right padding, their position ids are the same either way); others get `input_ids`."""
        if getattr(self.encoder.config, "model_type", None) not in _INPUTS_EMBEDS_FAMILIES:
            return False
        # RoBERTa-like position ids count the tokens that are not the embeddings' `padding_idx` (MPNet's is
        # always 1): from `inputs_embeds` they count every position, the same only where that id pads the texts.
        padding_idx = getattr(getattr(self.encoder, "embeddings", None), "padding_idx", None)
        if padding_idx is not None and padding_idx != self.padding_id():
            return False
        return isinstance(self.encoder.get_input_embeddings(), nn.Embedding)

    def forward(
        self,
        input_ids_a: torch.Tensor,
        attention_mask_a: torch.Tensor | None = None,
        input_ids_b: torch.Tensor | None = None,
        attention_mask_b: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        token_type_ids_a: torch.Tensor | None = None,
        token_type_ids_b: torch.Tensor | None = None,
        input_ids_n: torch.Tensor | None = None,
        attention_mask_n: torch.Tensor | None = None,
        token_type_ids_n: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **kwargs: Any,
    ) -> SiameseModelOutput | tuple:
        r"""
        Embed both sides with the shared encoder and score each pair; `input_ids_n` (optional) are
        explicit negatives, embedded by the same encoder within the same forward (so that
        distributed wrappers see one forward per step).

        `labels` are accepted so the Trainer can pass them through; losses live in
        `hfsiamese.losses` because the in-batch losses need the whole batch of embeddings.
        """
        if input_ids_b is None:
            raise ValueError("SiameseModel.forward needs both input_ids_a and input_ids_b")
        sides = [(input_ids_a, attention_mask_a, token_type_ids_a), (input_ids_b, attention_mask_b, token_type_ids_b)]
        if input_ids_n is not None:
            sides.append((input_ids_n, attention_mask_n, token_type_ids_n))
        embeddings_a, embeddings_b, *rest = self.embed_sides(sides)
        embeddings_n = rest[0] if rest else None
        return SiameseModelOutput.returned(
            embeddings_a, embeddings_b, embeddings_n, classifier=self.classifier, return_dict=return_dict
        )


# Also here, where they were defined before the modules had files of their own: the names other code imports from here.
__all__ = [
    "SiameseModel",
    "SiameseModelOutput",
    "SiamesePreTrainedModel",
    "DenseLayer",
    "LSTMEncoder",
    "PairClassificationHead",
    "StaticEncoder",
    "encoder_class",
    "with_dropout",
]
