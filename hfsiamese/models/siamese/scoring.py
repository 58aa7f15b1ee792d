"""
What a pair's score and a threshold mean, defined once.

A Siamese model scores a pair `(a, b)` one of two ways, fixed by its config:

- without a classification head: the cosine similarity of the two L2-normalised embeddings, in
  [-1, 1] (unit `"cosine"`);
- with a classification head (`config.classifier_head`): the head's probability that the pair is a
  duplicate, in [0, 1] (unit `"probability"`).

`config.threshold` is in the unit of that score: a pair is a duplicate when `score >= threshold`.

Once a model is calibrated with a probability method (`model.calibrate(..., method="platt" |
"isotonic")`, stored in `config.calibration`), each score also has a *probability*: the stored map's
P(duplicate) on the domain it was fitted on (`pair_probability`). A caller may then give the decision
as `probability_threshold=p` instead of `threshold=`: it becomes the lowest score whose probability
reaches `p` (`resolve_decision_threshold`), so every decision is still `score >= threshold`.

The trainer, the model's inference API, the pipeline and the duplicate index all ask here. This
file travels with every checkpoint as remote code (the modeling file imports it relatively), so it
may import only torch, numpy, the standard library and its siblings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import torch

from .score_calibrator import ScoreCalibrator

ScoreUnit = Literal["cosine", "probability"]

# A classification head: L2-normalised embeddings of both sides, `(n, dim)` each, to `(n, 2)` logits.
PairHead = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def score_unit(config: Any) -> ScoreUnit:
    """The unit of a model's pair scores and of its `config.threshold` (a cross-encoder's config says `score_unit` itself)."""
    if getattr(config, "score_unit", None) == "probability" or getattr(config, "classifier_head", False):
        return "probability"
    return "cosine"


def pair_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """(not duplicate, duplicate) probabilities from a classification head's `(n, 2)` logits, as float32."""
    return logits.float().softmax(dim=-1)


def duplicate_probability(logits: torch.Tensor) -> torch.Tensor:
    """P(duplicate) from a classification head's `(n, 2)` logits, as float32."""
    return pair_probabilities(logits)[:, 1]


def pair_scores(similarity: torch.Tensor, logits: torch.Tensor | None = None) -> torch.Tensor:
    """The score a threshold applies to: the head's P(duplicate) when there are logits, else the cosine."""
    return duplicate_probability(logits) if logits is not None else similarity


def embedding_pair_scores(
    a: torch.Tensor, b: torch.Tensor, head: PairHead | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """
    Scores of the pairs `(a[i], b[i])` of L2-normalised embeddings, and with a `head` also both
    classes' probabilities (else `None`). The head runs where its weights are; the results come back
    on `a`'s device.
    """
    if head is None:
        return (a * b).sum(dim=-1), None
    device = _device_of(head, a)
    with torch.inference_mode():
        probabilities = pair_probabilities(head(a.to(device), b.to(device))).to(a.device)
    return probabilities[:, 1], probabilities


def embedding_score_matrix(a: torch.Tensor, b: torch.Tensor, head: PairHead | None = None) -> torch.Tensor:
    """
    Scores of every pair `(a[i], b[j])`: their cosines, or the head's P(duplicate), computed one row
    of `a` at a time (so never `len(a) * len(b)` pair features at once).
    """
    if head is None:
        return a @ b.T
    device = _device_of(head, a)
    with torch.inference_mode():
        rows = [duplicate_probability(head(row.expand(len(b), -1), b.to(device))).to(a.device) for row in a.to(device)]
    return torch.stack(rows) if rows else torch.empty(0, len(b))


def threshold_in_unit(config: Any, unit: ScoreUnit) -> float | None:
    """`config.threshold` where it is in `unit`, else `None` (a head's probability threshold is no cosine threshold)."""
    if config is None or score_unit(config) != unit:
        return None
    return getattr(config, "threshold", None)


def check_threshold(threshold: float | None) -> float | None:
    """A threshold as a float (`None` stays `None`), refusing one no pair score can be compared with."""
    if threshold is not None and not -1.0 <= float(threshold) <= 1.0:
        raise ValueError(f"threshold is a cosine similarity and must lie in [-1, 1], got {threshold}")
    return None if threshold is None else float(threshold)


def check_decision_threshold(config: Any, threshold: float | None) -> float | None:
    """
    A decision threshold in the unit of the model's pair scores (`score_unit`): a cosine in [-1, 1], a P(duplicate)
    in [0, 1]; `None` stays `None`. One outside its unit's range would call every pair one class.
    """
    if threshold is None or score_unit(config) == "cosine":
        return check_threshold(threshold)
    if not 0.0 <= float(threshold) <= 1.0:
        raise ValueError(
            f"threshold is a P(duplicate) for this model (its scores are probabilities) and must lie in [0, 1], got {threshold}"
        )
    return float(threshold)


def resolve_threshold(threshold: float | None, calibrated: float | None, *, purpose: str = "", hint: str = "") -> float:
    """
    `threshold` if given, else the `calibrated` one (`config.threshold`, set by `SiameseTrainer.evaluate`),
    as a float; the one "no threshold" error when neither is set. `purpose` says what the threshold is
    for (e.g. " to say 'none of them'"), `hint` ends the message.
    """
    chosen = threshold if threshold is not None else calibrated
    if chosen is None:
        raise ValueError(
            f"no threshold{purpose}: pass threshold=..., or calibrate the model's config.threshold "
            f"(SiameseTrainer.evaluate does it){hint}"
        )
    return float(chosen)


def stored_calibrator(config: Any, unit: ScoreUnit | None = None) -> ScoreCalibrator | None:
    """The probability map in `config.calibration` (None without one), only where scores are in `unit` if given."""
    if config is None or (unit is not None and score_unit(config) != unit):
        return None
    return ScoreCalibrator.from_config(config)


def pair_probability(config: Any, scores: torch.Tensor) -> torch.Tensor | None:
    """The calibrated P(duplicate) of each score, or None when the model stores no probability map."""
    calibrator = stored_calibrator(config)
    return None if calibrator is None else calibrator.probability(scores)


def resolve_decision_threshold(
    config: Any,
    threshold: float | None = None,
    probability_threshold: float | None = None,
    *,
    calibrator: ScoreCalibrator | None = None,
    purpose: str = "",
    hint: str = "",
) -> float:
    """
    The score threshold of a decision: `threshold` (a score), else `probability_threshold` (a P(duplicate),
    turned into the lowest score that reaches it by the stored calibrator, or `calibrator` if given), else
    `config.threshold`. Giving both is an error: a number's meaning is never guessed from its value.
    """
    if threshold is not None and probability_threshold is not None:
        raise ValueError("give threshold= (a score) or probability_threshold= (a P(duplicate)), not both")
    if probability_threshold is not None:
        calibrator = calibrator or stored_calibrator(config)
        if calibrator is None:
            raise ValueError(
                "probability_threshold needs a model calibrated to probabilities: "
                "model.calibrate(pairs, labels, method='platt' or 'isotonic') (hfsiamese calibrate)"
            )
        return calibrator.score_threshold(probability_threshold)
    return resolve_threshold(threshold, getattr(config, "threshold", None), purpose=purpose, hint=hint)


def _device_of(head: PairHead, fallback: torch.Tensor) -> torch.device:
    parameter = next(head.parameters(), None) if isinstance(head, torch.nn.Module) else None
    return parameter.device if parameter is not None else fallback.device


__all__ = [
    "PairHead",
    "ScoreUnit",
    "check_threshold",
    "duplicate_probability",
    "embedding_pair_scores",
    "embedding_score_matrix",
    "pair_probabilities",
    "pair_probability",
    "pair_scores",
    "resolve_decision_threshold",
    "resolve_threshold",
    "score_unit",
    "stored_calibrator",
    "threshold_in_unit",
]
