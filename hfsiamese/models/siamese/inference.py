"""
The inference API of a Siamese model: embed texts, score pairs, decide duplicates (and, from
`one_shot_classification`, classify against a support set).

`SiameseModel` and the onnxruntime `OnnxSiameseModel` inherit it (`model.encode(...)`, `model.predict(...)`),
so it is written against what a model provides, declared once as `InferenceHost`. What a score is and which
threshold applies comes from `scoring`; how long texts may be, from `token_fields`; the precision and threads
`encode` runs with, from `encoding_policy` (given by the installed library, decided nowhere here). This file
travels with every checkpoint as remote code (the modeling file imports it relatively), so it may import only
torch, transformers and its siblings.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from transformers import AutoTokenizer

from .configuration_siamese import WORD_VOCABULARY_ENCODERS
from .encoding_batches import dataset_chunk, padded_batches, text_chunks
from .encoding_policy import EncodingPolicyMixin
from .one_shot_classification import ClassificationMixin
from .pair_decisions import PairDecisionMixin
from .scoring import embedding_pair_scores, stored_calibrator
from .token_fields import token_fields, tokenizer_max_length, warn_truncated

logger = logging.getLogger(__name__)


def _tokenizer_file(tokenizer: Any) -> str:
    """The file a tokenizer was loaded from, for error messages."""
    name = str(getattr(tokenizer, "name_or_path", "") or "")
    if name and os.path.isdir(name):
        for file in ("tokenizer.json", "vocab.txt", "tokenizer_config.json"):
            if os.path.isfile(os.path.join(name, file)):
                return os.path.join(name, file)
    return name or "the tokenizer given (built in memory, not loaded from a file)"


def _is_dataset(value: Any) -> bool:
    """A `datasets.Dataset` (duck-typed: this file must not import `datasets`, see the module docstring)."""
    return hasattr(value, "column_names") and hasattr(value, "data") and hasattr(value, "flatten_indices")


def check_truncate_dim(truncate_dim: int, full_dim: int) -> None:
    """Refuse a `truncate_dim` that is not a size between 1 and the model's embedding size."""
    if isinstance(truncate_dim, bool) or not isinstance(truncate_dim, int) or not 1 <= truncate_dim <= full_dim:
        raise ValueError(
            f"truncate_dim must be an integer from 1 to the embedding size {full_dim}, got {truncate_dim!r}"
        )


def check_truncated_scoring(config: Any, truncate_dim: int | None) -> None:
    """Pair scores at a `truncate_dim` are cosines: refused for a model whose classification head scores its pairs."""
    if truncate_dim is not None and getattr(config, "classifier_head", False):
        raise ValueError(
            "truncate_dim: this model scores pairs with its classification head, which takes full-size embeddings"
        )


def _check_same_length(texts_a: Sequence[str], texts_b: Sequence[str]) -> None:
    if len(texts_a) != len(texts_b):
        raise ValueError(f"texts_a and texts_b must have the same length, got {len(texts_a)} and {len(texts_b)}")


@runtime_checkable
class InferenceHost(Protocol):
    """
    What a model provides to `SiameseInferenceMixin`: the contract `SiameseModel` (a `PreTrainedModel`)
    and `OnnxSiameseModel` (an onnxruntime session) both fulfil; the mixin uses nothing else of them.
    """

    config: Any
    """A `SiameseConfig`: encoder type, `threshold`, `calibration`, classification head."""
    name_or_path: str
    """The folder (or Hub id) it was loaded from: where the tokenizer saved beside the weights is looked for."""
    classifier: Any
    """The pair classification head (`PairClassificationHead`), or None: scores are then cosines."""
    _tokenizer: Any
    """The tokenizer saved beside the weights, once loaded (None until then)."""
    training: bool

    @property
    def device(self) -> torch.device: ...

    def eval(self) -> Any: ...

    def train(self, mode: bool = True) -> Any: ...

    def padding_id(self) -> int:
        """The id its inputs are padded with (what `encode` pads chunks with)."""
        ...

    def embedding_rows(self) -> int:  # a host without `get_input_embeddings` overrides it
        """Rows of its token embedding table (the mixin's default reads `get_input_embeddings()`)."""
        ...

    def _embed_batch(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """One tokenised, padded batch (`input_ids`, `attention_mask`, ...) to its L2-normalised embeddings."""
        ...


class SiameseInferenceMixin(PairDecisionMixin, EncodingPolicyMixin, ClassificationMixin):
    """
    Texts in, embeddings, scores and decisions out (mixed into a model that is an `InferenceHost`); the precision and
    threads of `encode` from `EncodingPolicyMixin`, `classify` from `ClassificationMixin`, `predict` from
    `PairDecisionMixin`.
    """

    # ----------------------------------------------------------------------------------------
    # The tokenizer
    # ----------------------------------------------------------------------------------------
    def check_tokenizer(self, tokenizer: Any) -> None:
        """
        Refuse a tokenizer that is not this model's, naming its file: ids past the embedding table
        would fail deep inside the forward (or, within it, embed the wrong words). An LSTM's
        (or static encoder's) vocabulary IS its tokenizer, so sizes (and the pad id) must be equal; a transformer's
        table may have spare rows, so its tokenizer must only not be larger.
        """
        if not hasattr(tokenizer, "__len__"):
            return
        rows, size = self.embedding_rows(), len(tokenizer)
        own_vocabulary = self.config.encoder_type in WORD_VOCABULARY_ENCODERS
        if size > rows or (own_vocabulary and size != rows):
            raise ValueError(
                f"{_tokenizer_file(tokenizer)}: the tokenizer has {size} tokens but the model's embedding table has "
                f"{rows} rows{' (config.vocab_size)' if own_vocabulary else ''}: it is not the tokenizer this model was trained "
                "with; use the tokenizer saved beside the model"
                + (
                    ""
                    if own_vocabulary
                    else " (or, after adding tokens, model.resize_token_embeddings(len(tokenizer)))"
                )
            )
        pad = getattr(tokenizer, "pad_token_id", None)
        if own_vocabulary and pad is not None and pad != self.config.pad_token_id:
            raise ValueError(
                f"{_tokenizer_file(tokenizer)}: the tokenizer pads with id {pad} but the model's pad_token_id is "
                f"{self.config.pad_token_id}: it is not the tokenizer this model was trained with"
            )

    def embedding_rows(self) -> int:
        """Rows of the token embedding table (an ONNX model, whose table is inside its graph, overrides it)."""
        return self.get_input_embeddings().num_embeddings

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

    def default_max_length(self, tokenizer: Any) -> int:
        """
        Tokens kept per text when `encode` (or the pipeline, or the sentence-transformers export) gets
        no `max_length`: the tokenizer's `model_max_length`, at most 512 (as `tokenize_pairs`), and at
        most the transformer encoder's positions.
        """
        limit = tokenizer_max_length(tokenizer)
        if getattr(self.config, "max_seq_length", None):
            limit = min(limit, self.config.max_seq_length)
        positions = (self.config.encoder_config or {}).get("max_position_embeddings")
        return min(limit, int(positions)) if self.config.encoder_type == "transformer" and positions else limit

    # ----------------------------------------------------------------------------------------
    # Embeddings
    # ----------------------------------------------------------------------------------------
    @torch.inference_mode()
    def encode(
        self,
        texts: Sequence[str] | dict[str, torch.Tensor] | Any,
        tokenizer: Any | None = None,
        *,
        batch_size: int = 64,
        max_length: int | None = None,
        show_progress_bar: bool = False,
        dtype: torch.dtype | str | None = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        truncate_dim: int | None = None,
    ) -> torch.Tensor:
        """
        Embed one side: a list of texts (tokenised with `tokenizer`, or the tokenizer saved beside the
        model), a pre-tokenised `datasets.Dataset` (its `input_ids` column, read without tokenising
        again: tokenise once with `Dataset.map(..., num_proc=N)`), or one tokenised batch (`input_ids`,
        `attention_mask`). The result is in input order, on CPU, float32.

        Texts are tokenised in large chunks on a background thread while the model embeds the previous
        chunk; each chunk is sorted by token length and cut into batches of `batch_size` padded only to
        their own longest text. Embeddings stay on the model's device until the end. Texts longer than
        `max_length` tokens (default: `default_max_length`, at most 512) are truncated, with a warning
        giving their count.

        `dtype`: "auto" runs the encoder in bf16 autocast where this machine runs this model faster in it and
        the embeddings agree with float32's (with hfsiamese imported: measured once per model and device on a small
        probe batch, logged, `model.encode_precision()`; fp32 on CPUs without native bf16; without hfsiamese, as
        remote code: float32, since nothing measures, see `encoding_policy`), else float32; `torch.bfloat16` forces
        autocast in that type, `torch.float32` forces float32. None (default): the precision fixed on this model
        (`set_encode_precision`, as a training run does for its evaluation), else the process's default: float32,
        or "auto" where the process opted in (`hfsiamese.set_cpu_policy(encode_dtype="auto")`; hfsiamese's
        commands do). Embeddings are float32 either way. Threads: torch's, unless hfsiamese's policy adapts them
        (`hfsiamese.set_cpu_policy(share_cores=True)`; its commands do).

        Texts get the model's default prompt in front (`config.default_prompt_name`, as in training), or the
        prompt named `prompt_name`, or the text `prompt` (`""`: none); a pre-tokenised input is taken as it is.
        `truncate_dim` keeps the first that many dimensions, re-normalised (for a model trained with the
        Matryoshka loss: a smaller index at nearly the same quality).
        """
        dtype = self.resolve_encode_dtype(dtype)
        if truncate_dim is not None:
            check_truncate_dim(truncate_dim, self.config.sentence_embedding_dim)
            full = self.encode(
                texts, tokenizer, batch_size=batch_size, max_length=max_length, show_progress_bar=show_progress_bar,
                dtype=dtype or torch.float32, prompt_name=prompt_name, prompt=prompt,
            )  # fmt: skip
            return F.normalize(full[:, :truncate_dim], dim=-1)
        was_training = self.training
        self.eval()
        try:
            if isinstance(texts, str):
                raise TypeError("encode expects a list of texts, not a single string")
            if batch_size < 1:
                raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
            if max_length is not None and max_length < 1:  # 0 would embed every text as the empty text
                raise ValueError(f"max_length must be a positive integer or None, got {max_length}")
            if _is_dataset(texts):
                # No tokenizer needed: the ids are there; it only says how to pad, when given.
                tokenizer = tokenizer if tokenizer is not None else self._tokenizer
                if max_length is None:
                    max_length = self.default_max_length(tokenizer)
                chunks, total = iter([dataset_chunk(texts, max_length)]), len(texts)
                pad_id, side = self._pad_id_and_side(tokenizer)
            elif isinstance(texts, dict) or hasattr(texts, "keys"):
                with self._autocast(dtype):
                    return self._embed_batch(token_fields(texts, self.device)).float().cpu()
            else:
                texts = list(texts)
                bad = next((i for i, text in enumerate(texts) if not isinstance(text, str)), None)
                if bad is not None:
                    raise TypeError(
                        f"encode expects texts (str), but item {bad} is {texts[bad]!r}; drop or fill it first"
                    )
                if not texts:
                    return torch.empty(0, self.config.sentence_embedding_dim)
                text_prompt = (
                    self.config.prompt_text(prompt_name, prompt)
                    if hasattr(self.config, "prompt_text")
                    else (prompt or "")
                )
                if text_prompt:
                    texts = [text_prompt + text for text in texts]
                tokenizer = self._resolve_tokenizer(tokenizer)
                if max_length is None:
                    max_length = self.default_max_length(tokenizer)
                chunks, total = text_chunks(texts, tokenizer, max_length), len(texts)
                pad_id, side = self._pad_id_and_side(tokenizer)
            result = torch.empty(total, self.config.sentence_embedding_dim, device=self.device)
            progress = None
            if show_progress_bar:
                from tqdm.auto import tqdm

                progress = tqdm(total=total, desc="Encoding", unit="text")
            truncated = 0
            # The threads the machine policy gives this call (hfsiamese's: fewer while another process is busy on
            # these cores), restored after; this folder's own policy leaves torch's threads as they are.
            sharing = self._thread_adapter()
            try:
                for chunk in chunks:
                    truncated += chunk.truncated
                    for batch in padded_batches(chunk, batch_size, pad_id, side):
                        if sharing is not None:
                            sharing.update()
                        features = {
                            name: value.to(self.device, non_blocking=True) for name, value in batch.features.items()
                        }
                        with self._autocast(dtype):
                            embeddings = self._embed_batch(features)
                        result[torch.from_numpy(batch.positions).to(self.device)] = embeddings.float()
                        if progress is not None:
                            progress.update(len(batch.positions))
            finally:
                if sharing is not None:
                    sharing.restore()
                    if sharing.changes:
                        logger.info("encode: core sharing %s", sharing.describe())
                if progress is not None:
                    progress.close()
            warn_truncated(truncated, total, max_length, stacklevel=3)
            return result.cpu()
        finally:
            self.train(was_training)

    def _pad_id_and_side(self, tokenizer: Any | None) -> tuple[int, str]:
        """How `encode` pads: as the tokenizer would (its pad id and side), else with the model's pad id on the right."""
        pad = getattr(tokenizer, "pad_token_id", None)
        if pad is None:
            pad = self.padding_id()
        return int(pad), getattr(tokenizer, "padding_side", "right") or "right"

    # ----------------------------------------------------------------------------------------
    # Pairs
    # ----------------------------------------------------------------------------------------
    def similarity(
        self, texts_a: Sequence[str], texts_b: Sequence[str], tokenizer: Any | None = None, **encode_kwargs: Any
    ) -> torch.Tensor:
        """Cosine similarity of each pair `(texts_a[i], texts_b[i])`."""
        _check_same_length(texts_a, texts_b)
        check_truncated_scoring(self.config, encode_kwargs.get("truncate_dim"))
        a = self.encode(texts_a, tokenizer, **encode_kwargs)
        b = self.encode(texts_b, tokenizer, **encode_kwargs)
        return (a * b).sum(dim=-1)

    def score_pairs(
        self, texts_a: Sequence[str], texts_b: Sequence[str], tokenizer: Any | None = None, **encode_kwargs: Any
    ) -> torch.Tensor:
        """The score `config.threshold` applies to: the head's P(duplicate) if the model has a
        classification head, else the cosine similarity."""
        return self._pair_scores(texts_a, texts_b, tokenizer, **encode_kwargs)[0]

    def duplicate_probabilities(
        self, texts_a: Sequence[str], texts_b: Sequence[str], tokenizer: Any | None = None, **encode_kwargs: Any
    ) -> torch.Tensor:
        """The calibrated P(duplicate) of each pair: `score_pairs` through the map `calibrate` stored."""
        calibrator = stored_calibrator(self.config)
        if calibrator is None:
            raise ValueError(
                "the model stores no probability calibration: model.calibrate(pairs, labels, method='platt' or "
                "'isotonic') first (hfsiamese calibrate)"
            )
        return calibrator.probability(self.score_pairs(texts_a, texts_b, tokenizer, **encode_kwargs))

    def _decision_scores(
        self, texts_a: Sequence[str], texts_b: Sequence[str], tokenizer: Any | None, **encode_kwargs: Any
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """`predict`'s scores; with a classification head, both classes' probabilities beside them."""
        scores, probabilities = self._pair_scores(texts_a, texts_b, tokenizer, **encode_kwargs)
        return scores, {} if probabilities is None else {"probabilities": probabilities}

    def _pair_scores(
        self, texts_a: Sequence[str], texts_b: Sequence[str], tokenizer: Any | None, **encode_kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        _check_same_length(texts_a, texts_b)
        check_truncated_scoring(self.config, encode_kwargs.get("truncate_dim"))
        a = self.encode(texts_a, tokenizer, **encode_kwargs)
        b = self.encode(texts_b, tokenizer, **encode_kwargs)
        return embedding_pair_scores(a, b, self.classifier)


__all__ = ["InferenceHost", "SiameseInferenceMixin", "check_truncate_dim", "check_truncated_scoring"]
