"""Siamese (bi-encoder) model: one shared encoder, L2-normalised embeddings, cosine similarity.

This file is copied next to the weights by ``save_pretrained`` (``register_for_auto_class``), so it
imports only torch, transformers and its siblings ``configuration_siamese`` and
``pipeline_question_duplicates`` (copied along with it): a checkpoint loads with
``AutoModel.from_pretrained(folder, trust_remote_code=True)`` where hfsiamese is not installed.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel
from transformers.utils import SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME, ModelOutput

from .configuration_siamese import SiameseConfig
from .pipeline_question_duplicates import pipeline_config_entry


@dataclass
class SiameseModelOutput(ModelOutput):
    """
    Output of [`SiameseModel.forward`].

    Args:
        similarity (`torch.FloatTensor` of shape `(batch_size,)`):
            Cosine similarity of each pair, in [-1, 1].
        embeddings_a (`torch.FloatTensor` of shape `(batch_size, dim)`):
            L2-normalised embeddings of the first texts.
        embeddings_b (`torch.FloatTensor` of shape `(batch_size, dim)`):
            L2-normalised embeddings of the second texts.
        embeddings_n (`torch.FloatTensor` of shape `(batch_size, dim)`, *optional*):
            L2-normalised embeddings of explicit negatives, when `input_ids_n` was given.
        logits (`torch.FloatTensor` of shape `(batch_size, 2)`, *optional*):
            Scores of (not duplicate, duplicate) from the classification head, when the model has one.
    """

    similarity: torch.FloatTensor | None = None
    embeddings_a: torch.FloatTensor | None = None
    embeddings_b: torch.FloatTensor | None = None
    embeddings_n: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None


# Transformer families whose embeddings module only looks `input_ids` up (see `embed_sides`).
_INPUTS_EMBEDS_FAMILIES = frozenset({"bert", "roberta", "xlm-roberta", "mpnet", "distilbert"})


# Dropout probabilities of transformer configs (BERT/RoBERTa/MPNet names, then DistilBERT's and others').
_DROPOUT_ATTRIBUTES = (
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "dropout",
    "attention_dropout",
    "hidden_dropout",
    "activation_dropout",
)


def _with_dropout(config: Any, probability: float) -> Any:
    """`config` with every dropout probability it declares set to `probability`."""
    if not 0.0 <= probability < 1.0:
        raise ValueError(f"encoder_dropout is a probability in [0, 1), got {probability}")
    found = [name for name in _DROPOUT_ATTRIBUTES if isinstance(getattr(config, name, None), float)]
    if not found:
        raise ValueError(
            f"encoder_dropout: {type(config).__name__} declares none of the dropout settings {_DROPOUT_ATTRIBUTES}; "
            "set its own dropout fields through its config instead"
        )
    for name in found:
        setattr(config, name, probability)
    return config


def _is_right_padded(attention_mask: torch.Tensor) -> bool:
    """Is every row of the mask of the form ``1…1 0…0``?"""
    lengths = attention_mask.sum(dim=1)
    positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)
    return torch.equal(attention_mask.bool(), positions.unsqueeze(0) < lengths.unsqueeze(1))


def _lengths_of_right_padded(attention_mask: torch.Tensor) -> torch.Tensor:
    """Token counts per row; refuses masks that are not ``1…1 0…0`` (packing needs right padding)."""
    lengths = attention_mask.sum(dim=1)
    if not _is_right_padded(attention_mask):
        raise ValueError(
            "the LSTM encoder needs right-padded inputs (attention_mask of the form 1…1 0…0); "
            "set tokenizer.padding_side = 'right'"
        )
    return lengths


def masked_mean(states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``states`` over the positions where ``attention_mask`` is 1 (padding excluded)."""
    mask = attention_mask.unsqueeze(-1).to(states.dtype)
    return (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


class LSTMEncoder(nn.Module):
    """Embedding → (bi)LSTM on packed sequences → pooling over real tokens only.

    Packing keeps padding out of the recurrence entirely (no compute on it, and no pad state fed
    into the "last" pooling), which plain ``nn.LSTM`` over a padded batch would not.
    """

    def __init__(self, config: SiameseConfig) -> None:
        super().__init__()
        self.pooling = config.pooling
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_dim, padding_idx=config.pad_token_id)
        self.dropout = nn.Dropout(config.dropout)
        self.lstm = nn.LSTM(
            config.embedding_dim,
            config.hidden_size,
            num_layers=config.num_layers,
            bidirectional=config.bidirectional,
            dropout=config.dropout if config.num_layers > 1 else 0.0,
            batch_first=True,
        )

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[1] == 0:  # a batch of empty texts only: give each one (pad) step
            input_ids = input_ids.new_full((input_ids.shape[0], 1), self.embeddings.padding_idx or 0)
            attention_mask = attention_mask.new_zeros((input_ids.shape[0], 1))
        lengths = _lengths_of_right_padded(attention_mask)
        # An empty text still needs one step for packing; its lone (pad) token has a zero embedding.
        safe_lengths = lengths.clamp(min=1)
        embedded = self.dropout(self.embeddings(input_ids))
        packed = pack_padded_sequence(embedded, safe_lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_out, (h_n, _) = self.lstm(packed)
        if self.pooling == "last":
            # h_n holds, per direction, the state after each row's own last real token.
            directions = 2 if self.lstm.bidirectional else 1
            return torch.cat([h_n[-d] for d in range(directions, 0, -1)], dim=-1)
        states, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=input_ids.shape[1])
        mask = torch.arange(states.shape[1], device=states.device).unsqueeze(0) < safe_lengths.unsqueeze(1)
        if self.pooling == "max":
            return states.masked_fill(~mask.unsqueeze(-1), float("-inf")).max(dim=1).values
        return masked_mean(states, mask)


class PairClassificationHead(nn.Module):
    """Classifies a pair from `[u, v, |u − v|, u * v]` (Conneau et al., 2017, InferSent features).

    `|u − v|` and `u * v` are symmetric in the two texts, so the head sees how they differ and
    agree per dimension, not just one similarity number.
    """

    def __init__(self, embedding_dim: int, hidden_size: int | None) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = 4 * embedding_dim
        if hidden_size:
            layers += [nn.Linear(width, hidden_size), nn.ReLU()]
            width = hidden_size
        layers.append(nn.Linear(width, 2))
        self.layers = nn.Sequential(*layers)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.layers(torch.cat([u, v, (u - v).abs(), u * v], dim=-1))


# --------------------------------------------------------------------------------------------
# Loading checks: safetensors only, and errors that name the file at fault
# --------------------------------------------------------------------------------------------
# Weight files that are pickles: unpickling one can run arbitrary code, so they are never read.
_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
_ENV_TRUE = {"1", "ON", "YES", "TRUE"}


def _offline_mode() -> bool:
    return any(os.environ.get(name, "").upper() in _ENV_TRUE for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _weights_file(name_or_path: str, kwargs: dict[str, Any]) -> str:
    """
    The safetensors file (or shard index) that `from_pretrained` will read, for error messages.

    For a local folder it also refuses, before anything is read, a folder that holds only pickled
    weights; transformers would otherwise fall back to them, or say only that a file is missing.
    """
    subfolder = kwargs.get("subfolder")
    folder = os.path.join(name_or_path, subfolder) if subfolder else name_or_path
    if not os.path.isdir(folder):
        if os.path.isabs(name_or_path) or name_or_path.startswith((".", "~")) or name_or_path.count("/") > 1:
            raise FileNotFoundError(f"model folder not found: {folder}")
        return f"{SAFE_WEIGHTS_NAME} of {name_or_path!r}"
    for name in (SAFE_WEIGHTS_NAME, SAFE_WEIGHTS_INDEX_NAME):
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    pickled = sorted(name for name in os.listdir(folder) if name.endswith(_PICKLE_SUFFIXES))
    if pickled:
        raise ValueError(
            f"{os.path.join(folder, pickled[0])}: refusing to load pickled weights ({', '.join(pickled)}); Siamese "
            f"models load from {SAFE_WEIGHTS_NAME} only, since unpickling a file can run arbitrary code. If you "
            f"trust its origin, convert it once: safetensors.torch.save_file(torch.load(path, weights_only=True), "
            f"'{SAFE_WEIGHTS_NAME}')"
        )
    raise FileNotFoundError(
        f"{folder} holds no {SAFE_WEIGHTS_NAME}: is it a saved model folder? (files: {sorted(os.listdir(folder))})"
    )


def _is_safetensors_error(err: BaseException | None) -> bool:
    # Matched by name: this file may import only torch and transformers (see the module docstring).
    while err is not None:
        if type(err).__name__ == "SafetensorError":
            return True
        err = err.__cause__ or err.__context__
    return False


@contextmanager
def _clear_loading_errors(name_or_path: str, weights: str, *, what: str = "model") -> Iterator[None]:
    """Re-raise the loaders' terse errors (an unnamed SafetensorError, a generic offline message) naming the file."""
    try:
        yield
    except Exception as err:
        if _is_safetensors_error(err):
            raise ValueError(
                f"{weights}: not a readable safetensors file ({err}); it is truncated or corrupted: "
                "save or download it again"
            ) from err
        if isinstance(err, OSError) and not os.path.exists(name_or_path) and _offline_mode():
            raise OSError(
                f"cannot load the {what} {name_or_path!r}: offline mode is set (HF_HUB_OFFLINE=1) and it is not (or not "
                "whole) in the local Hugging Face cache; pass a local folder, or download it once with network access"
            ) from err
        if isinstance(err, RuntimeError) and "ignore_mismatched_sizes" in str(err):
            raise ValueError(
                f"{weights}: tensor shapes differ from those its config describes (see the load report above): "
                "the weights and config.json belong to different models"
            ) from err
        raise


def _check_finite(model: nn.Module, weights: str) -> None:
    """NaN/inf weights: bytes flipped in the file (safetensors has no checksum) or a run that diverged."""
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and tensor.device.type != "meta" and not torch.isfinite(tensor).all():
            raise ValueError(
                f"{weights}: tensor {name!r} holds NaN or infinite values; the file is corrupted (or was saved "
                "from a run that diverged): save or download it again"
            )


def _tokenizer_file(tokenizer: Any) -> str:
    """The file a tokenizer was loaded from, for error messages."""
    name = str(getattr(tokenizer, "name_or_path", "") or "")
    if name and os.path.isdir(name):
        for file in ("tokenizer.json", "vocab.txt", "tokenizer_config.json"):
            if os.path.isfile(os.path.join(name, file)):
                return os.path.join(name, file)
    return name or "the tokenizer given (built in memory, not loaded from a file)"


def _truncated_count(features: Any, max_length: int | None) -> int:
    """Texts of a tokenised batch that were cut at `max_length`."""
    encodings = getattr(features, "encodings", None)
    if encodings:  # fast tokenizers keep the cut-off tokens of each text
        return sum(bool(encoding.overflowing) for encoding in encodings)
    if max_length is None:
        return 0
    # Python tokenizers keep no overflow: count texts that reached the limit (an upper bound).
    return int((features["attention_mask"].sum(dim=1) >= max_length).sum())


class SiamesePreTrainedModel(PreTrainedModel):
    config_class = SiameseConfig
    base_model_prefix = "siamese"
    main_input_name = "input_ids_a"
    supports_gradient_checkpointing = True
    _supports_sdpa = True


class SiameseModel(SiamesePreTrainedModel):
    r"""
    A Siamese network: ONE encoder embeds both texts of a pair (shared weights), each embedding is
    pooled and L2-normalised, and the pair's score is their cosine similarity. A calibrated
    `config.threshold` turns the score into duplicate / not duplicate.

    Example:

    ```python
    >>> from transformers import AutoModel, AutoTokenizer
    >>> model = AutoModel.from_pretrained("outputs/lstm_qqp", trust_remote_code=True)
    >>> model.predict(["How do I learn Python?"], ["What is the best way to learn Python?"])
    ```
    """

    def __init__(self, config: SiameseConfig) -> None:
        super().__init__(config)
        if config.encoder_type == "lstm":
            self.encoder = LSTMEncoder(config)
            pooled_dim = config.hidden_size * (2 if config.bidirectional else 1)
        else:
            encoder_config = AutoConfig.for_model(**config.encoder_config)
            self.encoder = AutoModel.from_config(encoder_config)
            pooled_dim = encoder_config.hidden_size
        self.projection = nn.Linear(pooled_dim, config.projection_dim) if config.projection_dim else None
        embedding_dim = config.projection_dim or pooled_dim
        self.classifier = (
            PairClassificationHead(embedding_dim, config.classifier_hidden_size) if config.classifier_head else None
        )
        self._tokenizer = None
        self.post_init()

    # ----------------------------------------------------------------------------------------
    # Construction helpers
    # ----------------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike | None, *model_args: Any, **kwargs: Any) -> Any:
        """
        [`PreTrainedModel.from_pretrained`] with safetensors weights only and errors naming the file.

        Pickled weights (`pytorch_model.bin`) are refused, since unpickling can run code. What
        transformers would pass with a warning (missing tensors left random, another model type's
        config) or report without the file's name (a truncated or corrupted `model.safetensors`,
        weights holding NaN/inf) is a ValueError naming the file; under HF_HUB_OFFLINE=1 a Hub id
        that is not cached fails at once, saying so.
        """
        if kwargs.pop("use_safetensors", None) is False:
            raise ValueError("Siamese models load safetensors weights only (use_safetensors=False would unpickle)")
        if pretrained_model_name_or_path is None:  # weights given as state_dict=...: nothing on disk to check
            return super().from_pretrained(pretrained_model_name_or_path, *model_args, use_safetensors=True, **kwargs)
        source = str(pretrained_model_name_or_path)
        weights = _weights_file(source, kwargs)
        want_info = kwargs.pop("output_loading_info", False)
        with _clear_loading_errors(source, weights):
            model, info = super().from_pretrained(
                pretrained_model_name_or_path, *model_args, use_safetensors=True, output_loading_info=True, **kwargs
            )
        if info["missing_keys"]:
            missing = sorted(info["missing_keys"])
            raise ValueError(
                f"{weights} lacks {len(missing)} tensor(s) of this model ({', '.join(missing[:5])}): they would be "
                "left random. The file is incomplete or holds another model's weights"
            )
        _check_finite(model, weights)
        return (model, info) if want_info else model

    @classmethod
    def from_encoder_pretrained(
        cls,
        encoder_name_or_path: str,
        *,
        pooling: str = "mean",
        projection_dim: int | None = None,
        encoder_dropout: float | None = None,
        **config_kwargs: Any,
    ) -> SiameseModel:
        """
        Wrap a pretrained `AutoModel` checkpoint (e.g. all-MiniLM-L6-v2) as the shared encoder (safetensors weights only).

        `encoder_dropout` overrides every dropout probability the encoder's config declares (hidden
        states and attention). `encoder_kwargs` go to `AutoModel.from_pretrained` (e.g.
        `{"attn_implementation": "eager"}`); the other keyword arguments to [`SiameseConfig`].
        """
        encoder_kwargs = dict(config_kwargs.pop("encoder_kwargs", {}))
        if encoder_kwargs.pop("use_safetensors", None) is False:
            raise ValueError("Siamese models load safetensors weights only (use_safetensors=False would unpickle)")
        source = str(encoder_name_or_path)
        weights = _weights_file(source, encoder_kwargs)
        if encoder_dropout is not None:
            encoder_kwargs["config"] = _with_dropout(
                encoder_kwargs.get("config") or AutoConfig.from_pretrained(encoder_name_or_path), encoder_dropout
            )
        with _clear_loading_errors(source, weights, what="encoder"):
            encoder = AutoModel.from_pretrained(encoder_name_or_path, use_safetensors=True, **encoder_kwargs)
        _check_finite(encoder, weights)
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
        return model

    def get_input_embeddings(self) -> nn.Module:
        if self.config.encoder_type == "lstm":
            return self.encoder.embeddings
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        if self.config.encoder_type == "lstm":
            self.encoder.embeddings = value
        else:
            self.encoder.set_input_embeddings(value)

    def save_pretrained(self, save_directory: str | os.PathLike, *args: Any, **kwargs: Any) -> None:
        """
        [`PreTrainedModel.save_pretrained`], with config.json also naming the `question-duplicates` pipeline
        (`custom_pipelines`), whose code is saved beside the modeling code, so that
        `pipeline("question-duplicates", model=folder, trust_remote_code=True)` works without hfsiamese.
        """
        self.config.custom_pipelines = {**(getattr(self.config, "custom_pipelines", None) or {}), **pipeline_config_entry()}
        super().save_pretrained(save_directory, *args, **kwargs)

    def push_to_hub(
        self,
        repo_id: str,
        *,
        tokenizer: Any | None = None,
        model_card: Any | None = None,
        commit_message: str | None = None,
        private: bool | None = None,
        token: str | bool | None = None,
        revision: str | None = None,
        create_pr: bool = False,
        **save_kwargs: Any,
    ) -> Any:
        """
        Upload, in ONE commit, everything a downstream `from_pretrained(repo_id, trust_remote_code=True)`
        needs: weights (safetensors), config.json (with `auto_map`, the calibrated `threshold` and the
        pipeline entry), the modeling code, the tokenizer, and a model card.

        Unlike transformers' model push (weights, config and code with a generic card), the tokenizer is
        part of a Siamese model: an LSTM's vocabulary IS its tokenizer. It is `tokenizer`, else the one
        saved beside the folder this model was loaded from. The card is `model_card` (a
        `huggingface_hub.ModelCard` or its text), else the README.md of that folder (the card the recipe
        wrote after training), else one generated by `hfsiamese.model_card` where hfsiamese is installed.
        """
        import tempfile

        from huggingface_hub import HfApi

        tokenizer = tokenizer if tokenizer is not None else self._saved_tokenizer()
        if tokenizer is None:
            raise ValueError(
                "push_to_hub needs the tokenizer (pass tokenizer=...): this model was not loaded from a folder "
                "that holds one, and without it the uploaded model cannot be used"
            )
        self.check_tokenizer(tokenizer)
        api = HfApi(token=token)
        with tempfile.TemporaryDirectory() as folder:
            self.save_pretrained(folder, **save_kwargs)
            tokenizer.save_pretrained(folder)
            card = self._card_text(model_card, repo_id, tokenizer)
            if card is not None:
                with open(os.path.join(folder, "README.md"), "w", encoding="utf-8") as handle:
                    handle.write(card)
            repo = api.create_repo(repo_id, private=private, exist_ok=True)
            return api.upload_folder(
                repo_id=repo.repo_id if hasattr(repo, "repo_id") else repo_id,
                folder_path=folder,
                commit_message=commit_message or "Upload Siamese model, tokenizer and card",
                revision=revision,
                create_pr=create_pr,
            )

    def _saved_tokenizer(self) -> Any | None:
        if self._tokenizer is not None:
            return self._tokenizer
        if self.name_or_path and os.path.isdir(self.name_or_path):
            try:
                return self._resolve_tokenizer(None)
            except (OSError, ValueError):
                return None
        return None

    def _card_text(self, model_card: Any | None, repo_id: str, tokenizer: Any) -> str | None:
        if model_card is not None:
            return model_card if isinstance(model_card, str) else str(model_card)
        saved = os.path.join(self.name_or_path, "README.md") if self.name_or_path else ""
        if saved and os.path.isfile(saved):
            with open(saved, encoding="utf-8") as handle:
                return handle.read()
        try:  # only where hfsiamese is installed: this file also runs as remote code without it
            from hfsiamese.model_card import build_model_card
        except ImportError:
            warnings.warn("no model card to upload: pass model_card=... (hfsiamese is not installed to generate one)")
            return None
        return str(build_model_card(self, model_name=repo_id.split("/")[-1], tokenizer=tokenizer, repo_id=repo_id))

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
        if self.config.encoder_type == "lstm":
            return self._finish(self.encoder(input_ids, attention_mask))
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        return self._finish(self._pool(states, attention_mask))

    def _pool(self, states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return states[:, 0] if self.config.pooling == "cls" else masked_mean(states, attention_mask)

    def _finish(self, pooled: torch.Tensor) -> torch.Tensor:
        if self.projection is not None:
            pooled = self.projection(pooled)
        return F.normalize(pooled.float(), p=2, dim=-1)

    def embed_sides(
        self, sides: Sequence[tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]]
    ) -> list[torch.Tensor]:
        """
        Embed several sides (`(input_ids, attention_mask, token_type_ids)` each) of one forward.

        Transformer encoders with `config.sub_batch_size` set run all texts together, sorted by
        length, in sub-batches padded only to their own longest text: a batch padded to its longest
        question computes ~40% padding on QQP even with length-grouped batches, ~9% this way, and
        the batch (hence the in-batch negatives) is unchanged. Left-padded inputs take one call per
        side instead.
        """
        size = self.config.sub_batch_size
        masks = [mask if mask is not None else (ids != self.config.pad_token_id).long() for ids, mask, _ in sides]
        if self.config.encoder_type == "lstm" or not size or not all(_is_right_padded(mask) for mask in masks):
            return [self.embed(ids, mask, types) for (ids, _, types), mask in zip(sides, masks, strict=True)]
        width = max(ids.shape[1] for ids, _, _ in sides)
        pad_id = self.encoder.config.pad_token_id or 0
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
        chunks = order.split(size)
        # Sorted ascending, so each sub-batch's longest text is its last one; one host sync for all.
        widths = lengths[order][torch.tensor([len(c) for c in chunks], device=order.device).cumsum(0) - 1].tolist()
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
        return getattr(self.encoder.config, "model_type", None) in _INPUTS_EMBEDS_FAMILIES and isinstance(
            self.encoder.get_input_embeddings(), nn.Embedding
        )

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
        similarity = (embeddings_a * embeddings_b).sum(dim=-1)
        logits = self.classifier(embeddings_a, embeddings_b) if self.classifier is not None else None
        output = SiameseModelOutput(
            similarity=similarity,
            embeddings_a=embeddings_a,
            embeddings_b=embeddings_b,
            embeddings_n=embeddings_n,
            logits=logits,
        )
        return output if return_dict is not False else output.to_tuple()

    # ----------------------------------------------------------------------------------------
    # Inference helpers
    # ----------------------------------------------------------------------------------------
    def check_tokenizer(self, tokenizer: Any) -> None:
        """
        Refuse a tokenizer that is not this model's, naming its file: ids past the embedding table
        would fail deep inside the forward (or, within it, embed the wrong words). An LSTM's
        vocabulary IS its tokenizer, so sizes (and the pad id) must be equal; a transformer's
        table may have spare rows, so its tokenizer must only not be larger.
        """
        if not hasattr(tokenizer, "__len__"):
            return
        rows, size = self.get_input_embeddings().num_embeddings, len(tokenizer)
        lstm = self.config.encoder_type == "lstm"
        if size > rows or (lstm and size != rows):
            raise ValueError(
                f"{_tokenizer_file(tokenizer)}: the tokenizer has {size} tokens but the model's embedding table has "
                f"{rows} rows{' (config.vocab_size)' if lstm else ''}: it is not the tokenizer this model was trained "
                "with; use the tokenizer saved beside the model"
                + ("" if lstm else " (or, after adding tokens, model.resize_token_embeddings(len(tokenizer)))")
            )
        pad = getattr(tokenizer, "pad_token_id", None)
        if lstm and pad is not None and pad != self.config.pad_token_id:
            raise ValueError(
                f"{_tokenizer_file(tokenizer)}: the tokenizer pads with id {pad} but the model's pad_token_id is "
                f"{self.config.pad_token_id}: it is not the tokenizer this model was trained with"
            )

    def _resolve_tokenizer(self, tokenizer: Any | None) -> Any:
        if tokenizer is None:
            if self._tokenizer is None:
                if not self.name_or_path:
                    raise ValueError("pass tokenizer=...: this model was not loaded from a folder that holds one")
                # AutoTokenizer reads config.json, whose model type is this very (already running) code;
                # without trust_remote_code it would prompt where hfsiamese is not installed.
                self._tokenizer = AutoTokenizer.from_pretrained(self.name_or_path, trust_remote_code=True)
            tokenizer = self._tokenizer
        self.check_tokenizer(tokenizer)
        return tokenizer

    def _default_max_length(self, tokenizer: Any) -> int:
        """
        Tokens kept per text when `encode` gets no `max_length`: the tokenizer's `model_max_length`,
        at most 512 (as `tokenize_pairs`) and at most the encoder's positions. A tokenizer saved
        without a limit says 1e30, which would let one 100k-character text pad its whole batch.
        """
        limit = min(int(getattr(tokenizer, "model_max_length", None) or 512), 512)
        positions = (self.config.encoder_config or {}).get("max_position_embeddings")
        return min(limit, int(positions)) if self.config.encoder_type == "transformer" and positions else limit

    @torch.inference_mode()
    def encode(
        self,
        texts: Sequence[str] | dict[str, torch.Tensor],
        tokenizer: Any | None = None,
        *,
        batch_size: int = 64,
        max_length: int | None = None,
        show_progress_bar: bool = False,
    ) -> torch.Tensor:
        """
        Embed one side: a list of texts (tokenised with `tokenizer`, or the tokenizer saved beside
        the model) or an already tokenised batch (`input_ids`, `attention_mask`). Texts are sorted by
        length so that batches carry little padding; the result is in input order, on CPU, float32.
        Texts longer than `max_length` tokens (default: the tokenizer's `model_max_length`, at most
        512) are truncated, with a warning giving their count.
        """
        was_training = self.training
        self.eval()
        try:
            if isinstance(texts, str):
                raise TypeError("encode expects a list of texts, not a single string")
            if isinstance(texts, dict) or hasattr(texts, "keys"):
                batch = {k: v.to(self.device) for k, v in texts.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
                return self._embed_batch(batch).cpu()
            texts = list(texts)
            if not texts:
                return torch.empty(0, self.config.sentence_embedding_dim)
            bad = next((i for i, text in enumerate(texts) if not isinstance(text, str)), None)
            if bad is not None:
                raise TypeError(f"encode expects texts (str), but item {bad} is {texts[bad]!r}; drop or fill it first")
            tokenizer = self._resolve_tokenizer(tokenizer)
            if max_length is None:
                max_length = self._default_max_length(tokenizer)
            truncated = 0
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
            starts = range(0, len(texts), batch_size)
            if show_progress_bar:
                from tqdm.auto import tqdm

                starts = tqdm(starts, desc="Encoding", unit="batch")
            chunks = []
            for start in starts:
                chunk = [texts[i] for i in order[start : start + batch_size]]
                features = tokenizer(chunk, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
                truncated += _truncated_count(features, max_length)
                features = {k: v.to(self.device) for k, v in features.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
                chunks.append(self._embed_batch(features).cpu())
            if truncated:
                warnings.warn(
                    f"{truncated} of {len(texts)} texts were longer than max_length={max_length} tokens and were truncated",
                    UserWarning,
                    stacklevel=3,
                )
            embeddings = torch.cat(chunks)
            result = torch.empty_like(embeddings)
            result[torch.tensor(order)] = embeddings
            return result
        finally:
            self.train(was_training)

    def similarity(
        self, texts_a: Sequence[str], texts_b: Sequence[str], tokenizer: Any | None = None, **encode_kwargs: Any
    ) -> torch.Tensor:
        """Cosine similarity of each pair `(texts_a[i], texts_b[i])`."""
        if len(texts_a) != len(texts_b):
            raise ValueError(f"texts_a and texts_b must have the same length, got {len(texts_a)} and {len(texts_b)}")
        a = self.encode(texts_a, tokenizer, **encode_kwargs)
        b = self.encode(texts_b, tokenizer, **encode_kwargs)
        return (a * b).sum(dim=-1)

    def predict(
        self,
        texts_a: Sequence[str],
        texts_b: Sequence[str],
        tokenizer: Any | None = None,
        *,
        threshold: float | None = None,
        **encode_kwargs: Any,
    ) -> dict[str, torch.Tensor]:
        """
        Scores and duplicate decisions (`score >= threshold`, by default the calibrated
        `config.threshold`). With a classification head, the score is the head's probability of
        "duplicate" (and `probabilities` holds both classes); otherwise it is the cosine similarity.
        """
        threshold = self.config.threshold if threshold is None else threshold
        if threshold is None:
            raise ValueError("no threshold: calibrate one (SiameseTrainer.evaluate) or pass threshold=...")
        scores, probabilities = self._pair_scores(texts_a, texts_b, tokenizer, **encode_kwargs)
        result = {"scores": scores, "is_duplicate": scores >= threshold}
        if probabilities is not None:
            result["probabilities"] = probabilities
        return result

    def score_pairs(
        self, texts_a: Sequence[str], texts_b: Sequence[str], tokenizer: Any | None = None, **encode_kwargs: Any
    ) -> torch.Tensor:
        """The score `config.threshold` applies to: the head's P(duplicate) if the model has a
        classification head, else the cosine similarity."""
        return self._pair_scores(texts_a, texts_b, tokenizer, **encode_kwargs)[0]

    def classify(
        self,
        texts: Sequence[str],
        support_texts: Sequence[str],
        support_labels: Sequence[Any],
        tokenizer: Any | None = None,
        *,
        strategy: str = "nearest",
        threshold: float | None = None,
        unknown_label: Any = None,
        **encode_kwargs: Any,
    ) -> dict[str, Any]:
        """
        One-shot classification against a small labelled support set, without retraining: each text
        takes the label of its most similar support example (`strategy="nearest"`) or of the closest
        class centroid (`"centroid"`: the re-normalised mean embedding of the class). When even the
        best score is below `threshold` (default `config.threshold`) the text gets `unknown_label`:
        "none of them".

        The score is the one `config.threshold` was calibrated for (cosine similarity, or the head's
        P(duplicate) when the model has a classification head), so the calibrated threshold applies
        as is to `"nearest"`. Centroid cosines run higher than pair cosines for spread-out classes;
        calibrate a threshold for them on held-out data if "none of them" matters.

        Returns:
            `labels` (a list, one per text), `scores` (best score per text), `classes` (the distinct
            support labels, in first-seen order), `class_scores` (`(len(texts), len(classes))`: per
            class, the best score for "nearest" or the centroid score), and for "nearest" also
            `support_indices` (the index of the matched support example).

        Example:

        ```python
        >>> out = model.classify(["I forgot my password"], ["How do I reset my password?", "Where is my parcel?"],
        ...                      ["account", "shipping"])
        >>> out["labels"]
        ['account']
        ```
        """
        if strategy not in ("nearest", "centroid"):
            raise ValueError(f"strategy must be 'nearest' or 'centroid', got {strategy!r}")
        if isinstance(texts, str) or isinstance(support_texts, str):
            raise TypeError("classify expects lists of texts, not a single string")
        support_labels = list(support_labels)
        if len(support_texts) != len(support_labels):
            raise ValueError(
                f"support_texts and support_labels must have the same length, got {len(support_texts)} and {len(support_labels)}"
            )
        if not support_labels:
            raise ValueError("the support set is empty: pass at least one labelled example")
        threshold = self.config.threshold if threshold is None else threshold
        if threshold is None:
            raise ValueError(
                "no threshold to say 'none of them': calibrate one (SiameseTrainer.evaluate) or pass threshold=... "
                "(threshold=float('-inf') always picks a class)"
            )
        classes = list(dict.fromkeys(support_labels))
        class_of_support = torch.tensor([classes.index(label) for label in support_labels])
        queries = self.encode(texts, tokenizer, **encode_kwargs)
        support = self.encode(list(support_texts), tokenizer, **encode_kwargs)
        if strategy == "centroid":
            centroids = torch.zeros(len(classes), support.shape[1]).index_add_(0, class_of_support, support)
            support = F.normalize(centroids, p=2, dim=-1)
            class_of_support = torch.arange(len(classes))
        scores = self._score_matrix(queries, support)
        class_scores = torch.full((len(queries), len(classes)), float("-inf"))
        class_scores = class_scores.scatter_reduce(
            1, class_of_support.expand(len(queries), -1), scores, reduce="amax", include_self=True
        )
        best_scores, best_support = scores.max(dim=1)
        labels = [
            classes[class_of_support[index]] if score >= threshold else unknown_label
            for score, index in zip(best_scores.tolist(), best_support.tolist())
        ]
        result = {"labels": labels, "scores": best_scores, "classes": classes, "class_scores": class_scores}
        if strategy == "nearest":
            result["support_indices"] = best_support
        return result

    def _score_matrix(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Scores of every (a_i, b_j): cosine, or the head's P(duplicate) when there is a head."""
        if self.classifier is None:
            return a @ b.T
        with torch.inference_mode():
            rows = []
            for row in a.to(self.device):
                logits = self.classifier(row.expand(len(b), -1), b.to(self.device))
                rows.append(logits.float().softmax(dim=-1)[:, 1].cpu())
        return torch.stack(rows) if rows else torch.empty(0, len(b))

    def _pair_scores(
        self, texts_a: Sequence[str], texts_b: Sequence[str], tokenizer: Any | None, **encode_kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if len(texts_a) != len(texts_b):
            raise ValueError(f"texts_a and texts_b must have the same length, got {len(texts_a)} and {len(texts_b)}")
        a = self.encode(texts_a, tokenizer, **encode_kwargs)
        b = self.encode(texts_b, tokenizer, **encode_kwargs)
        if self.classifier is None:
            return (a * b).sum(dim=-1), None
        with torch.inference_mode():
            probabilities = self.classifier(a.to(self.device), b.to(self.device)).float().softmax(dim=-1).cpu()
        return probabilities[:, 1], probabilities


__all__ = ["SiameseModel", "SiameseModelOutput", "SiamesePreTrainedModel", "LSTMEncoder"]
