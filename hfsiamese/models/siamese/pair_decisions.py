"""
`predict`, the one decision of both families: a pair's score against the threshold, and the calibrated P(duplicate)
where the model stores a probability map.

A bi-encoder (`SiameseInferenceMixin`) and a cross-encoder (`hfsiamese.cross_encoder.CrossEncoder`) differ only in
how they score a pair, which each says in `_decision_scores`. This file travels with every checkpoint as remote code
(`inference.py` imports it relatively), so the cross-encoder imports it from here and not the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .scoring import check_decision_threshold, pair_probability, resolve_decision_threshold

__all__ = ["PairDecisionMixin"]


class PairDecisionMixin:
    """`predict` over the scores a model's `_decision_scores` gives (mixed into both families' models)."""

    config: Any

    def _decision_scores(
        self, texts_a: Sequence[str], texts_b: Sequence[str], tokenizer: Any | None, **score_kwargs: Any
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The scores `config.threshold` applies to, and what else the family returns beside them."""
        raise NotImplementedError(f"{type(self).__name__} must implement _decision_scores")

    def predict(
        self,
        texts_a: Sequence[str],
        texts_b: Sequence[str],
        tokenizer: Any | None = None,
        *,
        threshold: float | None = None,
        probability_threshold: float | None = None,
        **score_kwargs: Any,
    ) -> dict[str, torch.Tensor]:
        """
        Scores and duplicate decisions: `scores` (see `score_pairs`) and `is_duplicate` (`scores >= threshold`, by
        default the calibrated `config.threshold`). A bi-encoder with a classification head also returns
        `probabilities` (both classes of the head). A model calibrated to probabilities (`calibrate(...,
        method="platt" | "isotonic")`) also returns `probability`, the calibrated P(duplicate) of each pair, and takes
        the decision as `probability_threshold=p` (duplicate when P(duplicate) >= p) instead of `threshold=`.
        """
        if threshold is not None:  # outside the scores' range it would call every pair one class (classify's ±inf are
            check_decision_threshold(self.config, threshold)  # its own sentinels, so the resolver does not check)
        threshold = resolve_decision_threshold(self.config, threshold, probability_threshold)
        scores, beside = self._decision_scores(texts_a, texts_b, tokenizer, **score_kwargs)
        result = {"scores": scores, "is_duplicate": scores >= threshold, **beside}
        probability = pair_probability(self.config, scores)
        if probability is not None:
            result["probability"] = probability
        return result
