"""The `question-duplicates` pipeline: score text pairs with a Siamese model and apply its calibrated threshold.

This file travels with every Siamese checkpoint: the modeling file imports it (relatively), so transformers
copies it beside the weights on save and fetches it with the remote code on load, and the saved config.json
declares it under `custom_pipelines`. Hence, where hfsiamese is not installed,

    pipeline("question-duplicates", model=folder_or_repo, trust_remote_code=True)

still works. Given `cross_encoder=` (a `hfsiamese.cross_encoder.CrossEncoder`, or anything with
`score_pairs(texts_a, texts_b)` and a `config.threshold`), the pipeline scores and decides its pairs with
that cross-encoder instead: the same call, the stronger pair model. It is duck-typed because, like the
modeling file, this file may import only torch, transformers, the standard library and siblings that obey
the same rule (`scoring` says what a score and a threshold are, `token_fields` which tokenizer outputs a
side is made of).
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from transformers import Pipeline

# A sibling marked "4.x" is not used here: transformers 4.x loads this file (before the model) with only the
# siblings it imports itself, as modeling_siamese.py says.
from .configuration_siamese import SiameseConfig  # noqa: F401 (4.x)
from .encoding_batches import padded_batches  # noqa: F401 (4.x)
from .encoding_policy import EncodingPolicyMixin  # noqa: F401 (4.x)
from .inference import check_truncate_dim, check_truncated_scoring
from .one_shot_classification import ClassificationMixin  # noqa: F401 (4.x)
from .padding import is_right_padded  # noqa: F401 (4.x)
from .pair_decisions import PairDecisionMixin  # noqa: F401 (4.x)
from .score_calibrator import ScoreCalibrator  # noqa: F401 (4.x)
from .scoring import check_decision_threshold, pair_probability, pair_scores, resolve_decision_threshold
from .token_fields import token_fields

PIPELINE_TASK = "question-duplicates"


def pipeline_config_entry() -> dict[str, dict[str, Any]]:
    """The `custom_pipelines` entry of config.json that points `pipeline()` at this file's class."""
    module = QuestionDuplicatesPipeline.__module__.rsplit(".", 1)[-1]
    return {
        PIPELINE_TASK: {"impl": f"{module}.{QuestionDuplicatesPipeline.__name__}", "pt": ["AutoModel"], "type": "text"}
    }


def _as_pair(item: Any) -> tuple[str, str]:
    """One pair, from a `(text_a, text_b)` tuple/list or a `{"text": ..., "text_pair": ...}` dict."""
    if isinstance(item, Mapping):
        if set(item) != {"text", "text_pair"}:
            raise ValueError(
                f"a pair given as a dict needs exactly the keys 'text' and 'text_pair', got {sorted(item)}"
            )
        pair = (item["text"], item["text_pair"])
    elif isinstance(item, (tuple, list)) and len(item) == 2:
        pair = tuple(item)
    else:
        raise ValueError(
            "each input must be a pair of texts: a (text_a, text_b) tuple or {'text': ..., 'text_pair': ...}, "
            f"got {item!r:.80}"
        )
    if not all(isinstance(text, str) for text in pair):
        raise ValueError(f"both texts of a pair must be strings, got types {[type(t).__name__ for t in pair]}")
    return pair


class QuestionDuplicatesPipeline(Pipeline):
    """
    Decides whether two texts are duplicates with a Siamese model.

    Inputs: one pair (a `(text_a, text_b)` tuple or a `{"text": ..., "text_pair": ...}` dict), a list of
    pairs (one result each) or a generator of pairs (results streamed). Output per pair: `{"score": float, "is_duplicate": bool}`, where the score is the cosine
    similarity of the two embeddings (the classification head's probability of "duplicate" when the model
    has one) and `is_duplicate` is `score >= threshold`. The threshold is `model.config.threshold`, the one
    calibrated on validation pairs during training (or by `model.calibrate`), unless `threshold=` is given.
    A model calibrated to probabilities (`method="platt"` or `"isotonic"`) also gives `"probability"`,
    the calibrated P(duplicate), and takes `probability_threshold=p` (duplicate when P(duplicate) >= p).

    With `cross_encoder=` (when building the pipeline, or per call) the pairs are scored by that
    cross-encoder (`hfsiamese.cross_encoder.CrossEncoder`, or any object with `score_pairs(texts_a, texts_b)`
    returning one score per pair and a `config`), not by the Siamese model: `score` is the cross-encoder's
    score, `threshold=` and `probability_threshold=` are in its unit and default to its `config.threshold`
    and calibration, and `max_length` counts the tokens of both texts together. Each batch of pairs
    (`batch_size=`) is one `score_pairs` call.

    Examples:

    ```python
    >>> from transformers import pipeline
    >>> pipe = pipeline("question-duplicates", model="outputs/lstm_qqp", trust_remote_code=True)
    >>> pipe(("How do I learn Python?", "What is the best way to learn Python?"))
    >>> from hfsiamese.cross_encoder import CrossEncoder
    >>> pipe(("How do I learn Python?", "What is the best way to learn Python?"),
    ...      cross_encoder=CrossEncoder.from_pretrained("outputs/cross_minilm_qqp"))
    ```
    """

    _load_tokenizer = True
    _load_processor = False
    _load_image_processor = False
    _load_video_processor = False
    _load_feature_extractor = False

    def _sanitize_parameters(
        self,
        threshold: float | None = None,
        max_length: int | None = None,
        probability_threshold: float | None = None,
        truncate_dim: int | None = None,
        cross_encoder: Any | None = None,
        **kwargs: Any,
    ) -> tuple[dict, dict, dict]:
        if kwargs:
            raise TypeError(f"{PIPELINE_TASK} pipeline got unexpected parameters {sorted(kwargs)}")
        preprocess_params = {"max_length": max_length} if max_length is not None else {}
        forward_params = {}
        postprocess_params = {}
        if cross_encoder is not None:
            _check_cross_encoder(cross_encoder)
            if truncate_dim is not None:
                raise ValueError(
                    "truncate_dim applies to the Siamese model's embeddings; a cross-encoder scores each pair whole"
                )
            # Every step reads it: preprocess keeps the texts, _forward scores them, postprocess applies its threshold.
            for params in (preprocess_params, forward_params, postprocess_params):
                params["cross_encoder"] = cross_encoder
        if max_length is not None:  # read by _forward only with a cross-encoder (which tokenises there)
            forward_params["max_length"] = max_length
        if truncate_dim is not None:
            check_truncated_scoring(self.model.config, truncate_dim)
            check_truncate_dim(truncate_dim, self.model.config.sentence_embedding_dim)
            forward_params["truncate_dim"] = truncate_dim
        if threshold is not None:
            postprocess_params["threshold"] = float(threshold)
        if probability_threshold is not None:
            postprocess_params["probability_threshold"] = float(probability_threshold)
        return preprocess_params, forward_params, postprocess_params

    def __call__(self, inputs: Any, **kwargs: Any) -> dict[str, Any] | list[dict[str, Any]] | Iterator[dict[str, Any]]:
        # A bare tuple is one pair, not a batch of two texts; the base class would treat it as a batch.
        if isinstance(inputs, (tuple, Mapping)):
            inputs = _as_pair(inputs)
            single = True
        elif isinstance(inputs, list):
            if not inputs:
                return []
            inputs = [_as_pair(item) for item in inputs]
            single = False
        elif isinstance(inputs, types.GeneratorType):
            self._threshold(**self._threshold_options(kwargs))
            return super().__call__((_as_pair(item) for item in inputs), **kwargs)
        else:
            raise ValueError(
                "pass a pair of texts, (text_a, text_b) or {'text': ..., 'text_pair': ...}, or a list of pairs; "
                f"got {type(inputs).__name__}"
            )
        # Fail before any compute when no threshold is known.
        self._threshold(**self._threshold_options(kwargs))
        outputs = super().__call__([inputs] if single else inputs, **kwargs)
        return outputs[0] if single else outputs

    def _threshold_options(self, kwargs: dict[str, Any]) -> dict[str, float | None]:
        """The options postprocess will see: the pipeline's own, updated by this call's (as `Pipeline` merges them)."""
        names = ("threshold", "probability_threshold", "cross_encoder")
        options = {name: self._postprocess_params.get(name) for name in names}
        options.update({name: kwargs[name] for name in names if kwargs.get(name) is not None})
        return options

    def _threshold(
        self,
        threshold: float | None = None,
        probability_threshold: float | None = None,
        cross_encoder: Any | None = None,
    ) -> float:
        if cross_encoder is not None:
            _check_cross_encoder(cross_encoder)
        config = self.model.config if cross_encoder is None else getattr(cross_encoder, "config", None)
        if threshold is not None:  # as `predict`: one outside the scores' range would decide every pair alike
            check_decision_threshold(config, threshold)
        return resolve_decision_threshold(config, threshold, probability_threshold)

    def preprocess(
        self, pair: tuple[str, str], max_length: int | None = None, cross_encoder: Any | None = None
    ) -> dict[str, Any]:
        if cross_encoder is not None:  # the cross-encoder tokenises both texts together, in _forward
            return {"text_a": pair[0], "text_b": pair[1]}
        if max_length is None:
            # Truncate where the model's own `encode` does, so that scores equal `predict`'s.
            max_length = self.model.default_max_length(self.tokenizer)
        # Each side is tokenised on its own: the encoder embeds every text separately; the model's default
        # prompt goes before each, as in training and `encode`.
        prompt = self.model.config.prompt_text()
        features = {}
        for side, text in zip(("a", "b"), pair):
            encoded = self.tokenizer(prompt + text, truncation=True, max_length=max_length, return_tensors="pt")
            features.update({f"{key}_{side}": value for key, value in token_fields(encoded).items()})
        return features

    def _forward(
        self,
        model_inputs: dict[str, Any],
        truncate_dim: int | None = None,
        cross_encoder: Any | None = None,
        max_length: int | None = None,
    ) -> dict[str, torch.Tensor]:
        if cross_encoder is not None:
            if truncate_dim is not None:
                raise ValueError(
                    "truncate_dim applies to the Siamese model's embeddings; a cross-encoder scores each pair whole"
                )
            return {
                "scores": _cross_encoder_scores(
                    cross_encoder, model_inputs["text_a"], model_inputs["text_b"], max_length
                )
            }
        outputs = self.model(**model_inputs, return_dict=True)
        if (
            truncate_dim is not None
        ):  # the cosine of the first `truncate_dim` dimensions, as `encode(truncate_dim=)` gives them
            a, b = (
                F.normalize(side[:, :truncate_dim], dim=-1) for side in (outputs.embeddings_a, outputs.embeddings_b)
            )
            return {"scores": (a * b).sum(dim=-1).float()}
        return {"scores": pair_scores(outputs.similarity, outputs.logits).float()}

    def postprocess(
        self,
        model_outputs: dict[str, torch.Tensor],
        threshold: float | None = None,
        probability_threshold: float | None = None,
        cross_encoder: Any | None = None,
    ) -> dict[str, Any]:
        scores = model_outputs["scores"].reshape(-1)[:1]
        score = float(scores[0])
        result = {
            "score": score,
            "is_duplicate": score >= self._threshold(threshold, probability_threshold, cross_encoder),
        }
        config = self.model.config if cross_encoder is None else getattr(cross_encoder, "config", None)
        probability = pair_probability(config, scores)
        if probability is not None:
            result["probability"] = float(probability[0])
        return result


def _check_cross_encoder(cross_encoder: Any) -> None:
    if not callable(getattr(cross_encoder, "score_pairs", None)):
        raise TypeError(
            "cross_encoder must be a cross-encoder (an object with score_pairs(texts_a, texts_b), e.g. "
            f"hfsiamese.cross_encoder.CrossEncoder), got {type(cross_encoder).__name__}"
        )


def _cross_encoder_scores(cross_encoder: Any, texts_a: Any, texts_b: Any, max_length: int | None) -> torch.Tensor:
    """One `score_pairs` call on a pair (unbatched) or a batch of pairs (the pipeline's collation lists the texts)."""
    texts_a, texts_b = ([texts] if isinstance(texts, str) else list(texts) for texts in (texts_a, texts_b))
    options = {"max_length": max_length} if max_length is not None else {}
    scores = torch.as_tensor(cross_encoder.score_pairs(texts_a, texts_b, **options)).detach().float().cpu().reshape(-1)
    if len(scores) != len(texts_a):
        raise ValueError(f"the cross-encoder's score_pairs returned {len(scores)} scores for {len(texts_a)} pairs")
    return scores


__all__ = ["QuestionDuplicatesPipeline", "PIPELINE_TASK", "pipeline_config_entry"]
