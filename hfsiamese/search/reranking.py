"""
Retrieve, then rerank: a cross-encoder rescores the candidates a bi-encoder's index found.

The bi-encoder embeds each question alone, so one search over a million questions costs one query
embedding; it ranks well, but decides less well than a cross-encoder, which reads both questions of a
pair together and costs a forward per pair. Retrieve-then-rerank takes both strengths: the index
proposes a few candidates per query (`DuplicateIndex.search(..., cross_encoder=, rerank_k=)`, or its
candidate pairs in `find_duplicates(..., cross_encoder=)`), and the cross-encoder scores only those and
decides. This module is that second step on plain match dicts, so the index, the recipes and the app
share one rule: `"score"` becomes the cross-encoder's score (in [0, 1]), the bi-encoder's cosine stays
as `"retrieval_score"`, and `"is_duplicate"` / `"probability"` are the cross-encoder's (a bi-encoder
decision beside a cross-encoder score would read as that score's).

A reranker is anything with `score_pairs(texts_a, texts_b, **options)` returning one score per pair
(`hfsiamese.cross_encoder.model.CrossEncoder`), with its decision threshold in `config.threshold`.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from hfsiamese.models.siamese.scoring import pair_probability
from hfsiamese.search.rerank_options import DEFAULT_RERANK_K, check_rerank_k, default_rerank_k

NO_CROSS_ENCODER_THRESHOLD = (
    "no threshold to decide pairs with the cross-encoder: pass threshold=... (a cross-encoder score in [0, 1]), "
    "or calibrate the cross-encoder (CrossEncoder.calibrate)"
)


def resolve_cross_encoder(cross_encoder: Any, *, runtime_options: Mapping[str, Mapping[str, Any]] | None = None) -> Any:
    """A reranker: a `CrossEncoder` folder (or Hub id) is loaded (`runtime_options`: as for `hfsiamese.load_model`);
    anything else must have `score_pairs`."""
    if isinstance(cross_encoder, (str, os.PathLike)):
        from hfsiamese.cross_encoder.model import CrossEncoder
        from hfsiamese.loading import runtime_kwargs

        return CrossEncoder.from_pretrained(cross_encoder, **runtime_kwargs(cross_encoder, runtime_options))
    if not callable(getattr(cross_encoder, "score_pairs", None)):
        raise TypeError(
            f"cross_encoder must be a CrossEncoder (or its folder), an object with score_pairs(texts_a, texts_b); "
            f"got {type(cross_encoder).__name__}"
        )
    return cross_encoder


def cross_encoder_threshold(cross_encoder: Any, threshold: float | None = None) -> float | None:
    """The reranking decision threshold: `threshold` if given, else the cross-encoder's `config.threshold` (None without one)."""
    if threshold is None:
        threshold = getattr(getattr(cross_encoder, "config", None), "threshold", None)
    if threshold is None:
        return None
    if not (
        0.0 <= float(threshold) <= 1.0 or math.isinf(threshold)
    ):  # +-inf: from a probability no score reaches / all do
        raise ValueError(f"with a cross-encoder, threshold is a cross-encoder score in [0, 1], got {threshold}")
    return float(threshold)


def cross_encoder_scores(
    cross_encoder: Any, texts_a: list[str], texts_b: list[str], **score_kwargs: Any
) -> torch.Tensor:
    """The cross-encoder's scores of the pairs `(texts_a[i], texts_b[i])`, in one `score_pairs` call, as float32 on CPU."""
    cross_encoder = resolve_cross_encoder(cross_encoder)
    if not texts_a:
        return torch.empty(0)
    scores = cross_encoder.score_pairs(texts_a, texts_b, **score_kwargs)
    scores = torch.as_tensor(scores).detach().float().cpu().reshape(-1)
    if len(scores) != len(texts_a):
        raise ValueError(f"the cross-encoder's score_pairs returned {len(scores)} scores for {len(texts_a)} pairs")
    return scores


def rerank_matches(
    cross_encoder: Any,
    queries: Sequence[str],
    matches: Sequence[Sequence[dict[str, Any]]],
    *,
    threshold: float | None = None,
    **score_kwargs: Any,
) -> list[list[dict[str, Any]]]:
    """
    Each query's matches (dicts with `"text"` and the bi-encoder's `"score"`, as `DuplicateIndex.search` gives them)
    rescored by the cross-encoder and sorted by its score, best first (ties keep the retrieval order).

    Every (query, match text) pair of all queries is scored in one `score_pairs` call (`score_kwargs`, e.g.
    `batch_size`, go to it). Each returned match keeps its other keys, with `"score"`: the cross-encoder's score,
    `"retrieval_score"`: the bi-encoder's, `"is_duplicate"`: `score >= threshold` (default the cross-encoder's
    `config.threshold`; left out when neither is known), and `"probability"` where the cross-encoder stores a
    probability calibration.
    """
    if len(queries) != len(matches):
        raise ValueError(f"got {len(queries)} queries but {len(matches)} lists of matches: give one list per query")
    cross_encoder = resolve_cross_encoder(cross_encoder)
    threshold = cross_encoder_threshold(cross_encoder, threshold)
    texts_a = [query for query, found in zip(queries, matches) for _ in found]
    texts_b = [match["text"] for found in matches for match in found]
    scores = cross_encoder_scores(cross_encoder, texts_a, texts_b, **score_kwargs)
    probabilities = pair_probability(getattr(cross_encoder, "config", None), scores)
    flat = iter(_rescored(list(itertools.chain.from_iterable(matches)), scores, probabilities, threshold))
    results = []
    for found in matches:
        rescored = [next(flat) for _ in found]
        results.append(sorted(rescored, key=lambda match: -match["score"]))
    return results


def rerank_pairs(
    cross_encoder: Any, pairs: Sequence[dict[str, Any]], *, threshold: float | None = None, **score_kwargs: Any
) -> list[dict[str, Any]]:
    """
    Candidate pairs (dicts with `"text_a"`, `"text_b"` and the bi-encoder's `"score"`, as `DuplicateIndex.find_duplicates`
    gives them) rescored by the cross-encoder in one `score_pairs` call: the pairs whose cross-encoder score reaches
    `threshold` (default the cross-encoder's `config.threshold`; one of them is required), sorted by that score, best
    first, each with `"score"` (the cross-encoder's), `"retrieval_score"` (the bi-encoder's) and `"probability"` where
    the cross-encoder stores a probability calibration.
    """
    cross_encoder = resolve_cross_encoder(cross_encoder)
    threshold = cross_encoder_threshold(cross_encoder, threshold)
    if threshold is None:
        raise ValueError(NO_CROSS_ENCODER_THRESHOLD)
    pairs = list(pairs)
    scores = cross_encoder_scores(
        cross_encoder, [p["text_a"] for p in pairs], [p["text_b"] for p in pairs], **score_kwargs
    )
    probabilities = pair_probability(getattr(cross_encoder, "config", None), scores)
    rescored = _rescored(pairs, scores, probabilities, None)
    return sorted((pair for pair in rescored if pair["score"] >= threshold), key=lambda pair: -pair["score"])


def _rescored(
    items: list[dict[str, Any]], scores: torch.Tensor, probabilities: torch.Tensor | None, threshold: float | None
) -> list[dict[str, Any]]:
    """Copies of `items` with the cross-encoder's score (and decision, probability); the bi-encoder's kept as `retrieval_score`."""
    results = []
    for i, (item, score) in enumerate(zip(items, scores.tolist())):
        # The bi-encoder's decision and probability are about its cosine: dropped, not left beside another score.
        kept = {key: value for key, value in item.items() if key not in ("score", "is_duplicate", "probability")}
        result = {**kept, "score": score, "retrieval_score": item["score"]}
        if threshold is not None:
            result["is_duplicate"] = score >= threshold
        if probabilities is not None:
            result["probability"] = float(probabilities[i])
        results.append(result)
    return results


__all__ = [
    "DEFAULT_RERANK_K",
    "NO_CROSS_ENCODER_THRESHOLD",
    "check_rerank_k",
    "cross_encoder_scores",
    "cross_encoder_threshold",
    "default_rerank_k",
    "rerank_matches",
    "rerank_pairs",
    "resolve_cross_encoder",
]
