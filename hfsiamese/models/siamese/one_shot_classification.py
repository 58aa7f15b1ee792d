"""
`model.classify(...)`: one-shot classification against a small labelled support set, without retraining.

Each text takes the label of its most similar support example, or of the closest class centroid, scored as the
model scores a pair (`scoring`), with "none of them" below the decision threshold. Mixed into
`SiameseInferenceMixin` (whose `encode` it calls); this file travels with every checkpoint as remote code, so it
imports only torch and its siblings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from .scoring import embedding_score_matrix, pair_probability, resolve_decision_threshold

__all__ = ["ClassificationMixin"]


class ClassificationMixin:
    """`classify` (mixed into `SiameseInferenceMixin`: it uses the host's `encode`, `config` and `classifier`)."""

    def classify(
        self,
        texts: Sequence[str],
        support_texts: Sequence[str],
        support_labels: Sequence[Any],
        tokenizer: Any | None = None,
        *,
        strategy: str = "nearest",
        threshold: float | None = None,
        probability_threshold: float | None = None,
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
        calibrate a threshold for them on held-out data if "none of them" matters. A model calibrated
        to probabilities takes `probability_threshold=` instead, and returns each text's `probability`.

        Returns:
            `labels` (a list, one per text), `scores` (best score per text), `classes` (the distinct
            support labels, in first-seen order), `class_scores` (`(len(texts), len(classes))`: per
            class, the best score for "nearest" or the centroid score), and for "nearest" also
            `support_indices` (the index of the matched support example); with a probability calibration,
            `probability` (the calibrated P(duplicate) of each text's best score).

        Examples:

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
        threshold = resolve_decision_threshold(
            self.config,
            threshold,
            probability_threshold,
            purpose=" to say 'none of them'",
            hint="; threshold=float('-inf') always picks a class",
        )
        classes = list(dict.fromkeys(support_labels))
        class_of_support = torch.tensor([classes.index(label) for label in support_labels])
        queries = self.encode(texts, tokenizer, **encode_kwargs)
        support = self.encode(list(support_texts), tokenizer, **encode_kwargs)
        if strategy == "centroid":
            centroids = torch.zeros(len(classes), support.shape[1]).index_add_(0, class_of_support, support)
            support = F.normalize(centroids, p=2, dim=-1)
            class_of_support = torch.arange(len(classes))
        scores = embedding_score_matrix(queries, support, self.classifier)
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
        probability = pair_probability(self.config, best_scores)
        if probability is not None:
            result["probability"] = probability
        if strategy == "nearest":
            result["support_indices"] = best_support
        return result
