"""
`CrossEncoder`: a pair model that reads both questions together, for deciding, reranking and teaching.

A bi-encoder embeds each question alone, so one question's embedding is reused for every comparison (fast
search over millions); a cross-encoder runs full attention between the two questions, which decides
better at the same size but costs one forward per pair. hfsiamese uses it where that is affordable: to
rescore a bi-encoder's top candidates (`DuplicateIndex(..., cross_encoder=)`), and to label many more
training pairs than people did (`hfsiamese.distillation.silver_pairs`).

Its checkpoint is a plain transformers sequence-classification folder with ONE logit: transformers
(`AutoModelForSequenceClassification`), sentence-transformers' `CrossEncoder` and inference servers load
it as it is, with no remote code. What hfsiamese adds lives in config.json as plain values:
`threshold` (calibrated on validation pairs, on the score below), `calibration` (a stored score to
P(duplicate) map, as a Siamese model's), `pair_order` and `max_seq_length`. This class adds the API on
top: `predict`, `score_pairs`, `calibrate`, `rank`, loading and saving.

The score of a pair is `sigmoid(logit)` in [0, 1]; with `pair_order="both"` (the default of models trained
by hfsiamese) the logit is the mean of the two orders' logits, so `score(a, b) == score(b, a)` exactly.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer, PreTrainedModel

from hfsiamese.cross_encoder.config_kind import is_cross_encoder_config, is_cross_encoder_folder
from hfsiamese.cross_encoder.onnx_model import OnnxSequenceClassifier
from hfsiamese.cross_encoder.openvino_model import OpenVinoSequenceClassifier
from hfsiamese.cross_encoder.pair_inputs import encode_pairs
from hfsiamese.models.siamese.calibration import CalibrationMixin
from hfsiamese.models.siamese.hub_sharing import check_save_directory
from hfsiamese.models.siamese.pair_decisions import PairDecisionMixin
from hfsiamese.models.siamese.safe_loading import (
    check_complete,
    check_finite,
    clear_loading_errors,
    refuse_pickle_loading,
    weights_file,
)
from hfsiamese.models.siamese.scoring import check_threshold
from hfsiamese.models.siamese.token_fields import tokenizer_max_length, warn_truncated
from hfsiamese.utils.onnx_runtime import onnx_entry
from hfsiamese.utils.openvino_runtime import openvino_entry

PAIR_ORDERS = ("both", "given")
# sentence-transformers' CrossEncoder reads its activation from here: the same score it computes in the given order.
SENTENCE_TRANSFORMERS_ENTRY = {"activation_fn": "torch.nn.modules.activation.Sigmoid"}


class CrossEncoder(PairDecisionMixin, CalibrationMixin):
    """
    A cross-encoder over question pairs: a one-logit `AutoModelForSequenceClassification` and its tokenizer.

    Build a new one with `CrossEncoder.from_base_model("sentence-transformers/all-MiniLM-L6-v2")` (a fresh
    one-logit head on any encoder) and train it with `hfsiamese train cross_minilm_qqp`
    (`hfsiamese.cross_encoder.trainer.CrossEncoderTrainer`); load a trained one with `CrossEncoder.from_pretrained(folder)`.

    Examples:

    ```python
    >>> from hfsiamese.cross_encoder import CrossEncoder
    >>> cross = CrossEncoder.from_pretrained("outputs/cross_minilm_qqp")
    >>> cross.predict(["How do I learn Python?"], ["What is the best way to learn Python?"])
    {'scores': tensor([0.93]), 'is_duplicate': tensor([True])}
    ```
    """

    def __init__(self, model: PreTrainedModel, tokenizer: Any, *, pair_order: str | None = None) -> None:
        if not is_cross_encoder_config(model.config):
            raise ValueError(
                f"{type(model).__name__} is not a one-logit sequence-classification model (num_labels="
                f"{getattr(model.config, 'num_labels', None)}): it is no cross-encoder"
            )
        self.model = model
        self.tokenizer = tokenizer
        config = model.config
        config.pair_order = pair_order or getattr(config, "pair_order", None) or "given"
        if config.pair_order not in PAIR_ORDERS:
            raise ValueError(f"pair_order must be one of {PAIR_ORDERS}, got {config.pair_order!r}")
        config.threshold = check_threshold(getattr(config, "threshold", None))
        if config.threshold is not None and not 0.0 <= config.threshold <= 1.0:
            raise ValueError(f"a cross-encoder's threshold is a score in [0, 1], got {config.threshold}")
        config.calibration = getattr(config, "calibration", None)
        config.max_seq_length = getattr(config, "max_seq_length", None)
        # Read by `hfsiamese.models.siamese.scoring.score_unit`: scores and threshold are probabilities.
        config.score_unit = "probability"
        config.sentence_transformers = {
            **(getattr(config, "sentence_transformers", None) or {}),
            **SENTENCE_TRANSFORMERS_ENTRY,
        }

    # ------------------------------------------------------------------------------------------
    # Loading and saving
    # ------------------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(
        cls, name_or_path: str | os.PathLike, *, tokenizer: Any | None = None, **kwargs: Any
    ) -> CrossEncoder:
        """
        A trained cross-encoder (a local folder or Hub id): safetensors weights only, every tensor present and
        finite, else a ValueError naming the file. `kwargs` go to `AutoModelForSequenceClassification.from_pretrained`.
        A folder exported to ONNX (`hfsiamese export`) runs on onnxruntime instead (`kwargs`: `providers`,
        `session_options`); one exported to OpenVINO (`--format openvino`) on OpenVINO (`kwargs`: `ov_config`).
        """
        refuse_pickle_loading(kwargs)
        source = str(name_or_path)
        config = kwargs.pop("config", None)  # e.g. with its dropout changed
        if config is None:
            with clear_loading_errors(source, "config.json", what="cross-encoder"):  # offline and not cached: said so
                config = AutoConfig.from_pretrained(source)
        if onnx_entry(config):  # a folder written by hfsiamese.cross_encoder.onnx_export
            model = OnnxSequenceClassifier.from_folder(source, config, **kwargs)
            return cls(model, tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(source))
        if openvino_entry(config):  # a folder written by hfsiamese.cross_encoder.openvino_export
            model = OpenVinoSequenceClassifier.from_folder(source, config, **kwargs)
            return cls(model, tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(source))
        weights = weights_file(source, kwargs)
        with clear_loading_errors(source, weights, what="cross-encoder"):
            if not is_cross_encoder_config(config):
                raise ValueError(
                    f"{source} holds a {config.model_type} model with architectures {getattr(config, 'architectures', None)}, "
                    "not a one-logit sequence-classification model: it is no cross-encoder (start a new one with "
                    "CrossEncoder.from_base_model)"
                )
            model, info = AutoModelForSequenceClassification.from_pretrained(
                source, config=config, use_safetensors=True, output_loading_info=True, **kwargs
            )
        check_complete(info, weights)
        check_finite(model, weights)
        return cls(model, tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(source))

    @classmethod
    def from_base_model(
        cls,
        name_or_path: str | os.PathLike,
        *,
        pair_order: str = "both",
        max_seq_length: int | None = None,
        **kwargs: Any,
    ) -> CrossEncoder:
        """
        A new cross-encoder: the pretrained encoder `name_or_path` with a fresh one-logit classification head
        (randomly initialised: train it). `kwargs` go to `from_pretrained` (e.g. `attn_implementation`).
        """
        refuse_pickle_loading(kwargs)
        source = str(name_or_path)
        weights = weights_file(source, kwargs)
        with clear_loading_errors(source, weights, what="encoder"):
            if "config" in kwargs:  # e.g. with its dropout changed: the head's size is set on it
                kwargs["config"].num_labels = 1
            else:
                kwargs["num_labels"] = 1
            model = AutoModelForSequenceClassification.from_pretrained(source, use_safetensors=True, **kwargs)
            tokenizer = AutoTokenizer.from_pretrained(source)
        check_finite(model, weights)
        model.config.architectures = [type(model).__name__]  # saved so: what marks the folder as a cross-encoder
        model.config.max_seq_length = max_seq_length
        return cls(model, tokenizer, pair_order=pair_order)

    def save_pretrained(self, save_directory: str | os.PathLike, **kwargs: Any) -> None:
        """The model (safetensors) and config.json with the threshold and calibration, and the tokenizer beside them
        (a `save_directory` that is a file refused, where transformers would log it and return)."""
        check_save_directory(save_directory)
        self.model.save_pretrained(save_directory, **kwargs)
        if kwargs.get("is_main_process", True):
            self.tokenizer.save_pretrained(save_directory)

    def push_to_hub(self, repo_id: str, **kwargs: Any) -> Any:
        """Upload the model with its config (threshold, calibration) and its tokenizer to the Hub repo `repo_id`."""
        self.tokenizer.push_to_hub(
            repo_id, **{k: v for k, v in kwargs.items() if k in ("token", "private", "revision")}
        )
        return self.model.push_to_hub(repo_id, **kwargs)

    @property
    def config(self) -> Any:
        return self.model.config

    @property
    def name_or_path(self) -> str:
        return str(self.model.name_or_path)

    @property
    def device(self) -> torch.device:
        return self.model.device

    @property
    def pair_order(self) -> str:
        return self.config.pair_order

    def to(self, device: str | torch.device) -> CrossEncoder:
        self.model.to(device)
        return self

    def default_max_length(self) -> int:
        """
        Tokens kept per pair (both questions together): `config.max_seq_length`, else the tokenizer's limit, at most
        512 and never more than the model has position embeddings (a small model with a large model's tokenizer).
        """
        limit = tokenizer_max_length(self.tokenizer)
        positions = getattr(self.config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            limit = min(limit, positions)
        return min(limit, self.config.max_seq_length) if self.config.max_seq_length else limit

    # ------------------------------------------------------------------------------------------
    # Scores
    # ------------------------------------------------------------------------------------------
    @torch.inference_mode()
    def logits(
        self,
        texts_a: Sequence[str],
        texts_b: Sequence[str],
        *,
        batch_size: int = 64,
        max_length: int | None = None,
        show_progress_bar: bool = False,
        dtype: torch.dtype | None = None,
    ) -> torch.Tensor:
        """
        The raw logit of each pair read in the given order `(texts_a[i], texts_b[i])`, float32 on CPU. Pairs are
        sorted by length and batched, each batch padded to its own longest pair; `dtype` (e.g. `torch.bfloat16`)
        runs the model under autocast in that type.
        """
        texts_a, texts_b = _checked_pairs(texts_a, texts_b)
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        if max_length is not None and max_length < 1:  # 0 was taken as "the default", -1 failed in the tokenizer
            raise ValueError(f"max_length must be a positive integer or None, got {max_length}")
        max_length = max_length or self.default_max_length()
        fields, cut = encode_pairs(self.tokenizer, texts_a, texts_b, max_length)
        warn_truncated(cut, len(texts_a), max_length, stacklevel=3, what="pairs")
        lengths = np.array([len(ids) for ids in fields["input_ids"]])
        order = np.argsort(lengths, kind="stable")
        result = torch.empty(len(texts_a))
        was_training = self.model.training
        self.model.eval()
        progress = None
        if show_progress_bar:
            from tqdm.auto import tqdm

            progress = tqdm(total=len(texts_a), desc="Scoring pairs", unit="pair")
        try:
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                batch = self.tokenizer.pad([{k: v[i] for k, v in fields.items()} for i in rows], return_tensors="pt")
                batch = {name: value.to(self.device) for name, value in batch.items()}
                with torch.autocast(self.device.type, dtype=dtype, enabled=dtype is not None):
                    result[torch.from_numpy(rows)] = self.model(**batch).logits[:, 0].float().cpu()
                if progress is not None:
                    progress.update(len(rows))
        finally:
            self.model.train(was_training)
            if progress is not None:
                progress.close()
        return result

    def score_pairs(
        self,
        texts_a: Sequence[str],
        texts_b: Sequence[str],
        tokenizer: Any | None = None,
        *,
        batch_size: int = 64,
        max_length: int | None = None,
        show_progress_bar: bool = False,
        dtype: torch.dtype | None = None,
        truncate_dim: int | None = None,
    ) -> torch.Tensor:
        """
        The score `config.threshold` applies to: sigmoid of the pair's logit, in [0, 1]; with `pair_order="both"`
        of the mean of both orders' logits, so that it does not depend on which question comes first.
        (`tokenizer` is accepted for the bi-encoders' signature: a cross-encoder uses its own.)
        """
        if truncate_dim is not None:
            raise ValueError("truncate_dim applies to bi-encoder embeddings; a cross-encoder scores each pair whole")
        if tokenizer is not None and tokenizer is not self.tokenizer and len(tokenizer) != len(self.tokenizer):
            raise ValueError(
                f"the tokenizer given has {len(tokenizer)} tokens, this cross-encoder's {len(self.tokenizer)}: use its own"
            )
        options = dict(batch_size=batch_size, max_length=max_length, show_progress_bar=show_progress_bar, dtype=dtype)
        logits = self.logits(texts_a, texts_b, **options)
        if self.pair_order == "both":
            with warnings.catch_warnings():  # the same pairs the first order just warned about, if any were cut
                warnings.simplefilter("ignore")
                logits = (logits + self.logits(texts_b, texts_a, **options)) / 2
        return torch.sigmoid(logits)

    def _decision_scores(
        self, texts_a: Sequence[str], texts_b: Sequence[str], tokenizer: Any | None, **score_kwargs: Any
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """`predict`'s scores: `score_pairs`, nothing beside them."""
        return self.score_pairs(texts_a, texts_b, tokenizer, **score_kwargs), {}

    def rank(self, query: str, candidates: Sequence[str], **score_kwargs: Any) -> torch.Tensor:
        """The score of `query` against each candidate (for reranking a bi-encoder's top candidates)."""
        if not isinstance(query, str):
            raise TypeError(f"rank expects one query text, got {type(query).__name__}")
        return self.score_pairs([query] * len(candidates), list(candidates), **score_kwargs)


def _checked_pairs(texts_a: Sequence[str], texts_b: Sequence[str]) -> tuple[list[str], list[str]]:
    if isinstance(texts_a, str) or isinstance(texts_b, str):
        raise TypeError("a cross-encoder scores lists of texts, not single strings")
    texts_a, texts_b = list(texts_a), list(texts_b)
    if len(texts_a) != len(texts_b):
        raise ValueError(f"texts_a and texts_b must have the same length, got {len(texts_a)} and {len(texts_b)}")
    for name, texts in (("texts_a", texts_a), ("texts_b", texts_b)):
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"{name}[{index}] is {text!r}, not a text; drop or fill it first")
    return texts_a, texts_b


__all__ = ["PAIR_ORDERS", "CrossEncoder", "is_cross_encoder_config", "is_cross_encoder_folder"]
