"""
What a pair's score and a threshold mean, defined once.

A Siamese model scores a pair `(a, b)` one of two ways, fixed by its config:

- without a classification head: the cosine similarity of the two L2-normalised embeddings, in
  [-1, 1] (unit `"cosine"`);
- with a classification head (`config.classifier_head`): the head's probability that the pair is a
  duplicate, in [0, 1] (unit `"probability"`).

`config.threshold` is in the unit of that score: a pair is a duplicate when `score >= threshold`.
The trainer, the model's inference API, the pipeline and the duplicate index all ask here.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

ScoreUnit = Literal["cosine", "probability"]


def score_unit(config: Any) -> ScoreUnit:
    """The unit of a model's pair scores and of its `config.threshold`."""
    return "probability" if getattr(config, "classifier_head", False) else "cosine"


def duplicate_probability(logits: torch.Tensor) -> torch.Tensor:
    """P(duplicate) from a classification head's `(n, 2)` logits, as float32."""
    return logits.float().softmax(dim=-1)[:, 1]


def pair_scores(similarity: torch.Tensor, logits: torch.Tensor | None = None) -> torch.Tensor:
    """The score a threshold applies to: the head's P(duplicate) when there are logits, else the cosine."""
    return duplicate_probability(logits) if logits is not None else similarity


__all__ = ["ScoreUnit", "duplicate_probability", "pair_scores", "score_unit"]
