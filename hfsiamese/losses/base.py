"""
`SiameseLoss`: what every loss declares, checks and returns, so the trainer and the recipes read
one contract instead of guessing with `getattr`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

import torch
from torch import nn

from hfsiamese.losses.teacher_scores import teacher_scores_inputs


@dataclass(frozen=True)
class SiameseLossOutput:
    """
    A loss value and the statistics computed with it.

    ``stats`` hold 0-d tensors on the loss's device (counts of easy/semi-hard/hard negatives, the
    terms of a sum, ...): reading them forces a host synchronisation, so the trainer adds them up
    and converts them only when it logs.
    """

    loss: torch.Tensor
    stats: dict[str, torch.Tensor] = field(default_factory=dict)

    def stats_as_floats(self) -> dict[str, float]:
        """The statistics as Python floats (one host synchronisation per value)."""
        return {name: float(value) for name, value in self.stats.items()}


class LossInputs(TypedDict, total=False):
    """
    What a loss may be given beside the two sides' embeddings (`SiameseLoss.compute`), each optional: a loss takes
    those its declarations name, and the base class checks them.
    """

    #: 0/1 per pair, ``(batch,)``: for a loss that ``requires_labels`` (otherwise all 1 if given).
    labels: torch.Tensor | None
    #: Duplicate-group id per row, ``(batch,)``: in-batch negatives of the row's own group are masked.
    group_ids: torch.Tensor | None
    #: Explicit negatives' embeddings: one per row ``(batch, dim)``, or ``k`` per row for a teacher-score loss.
    negatives: torch.Tensor | None
    #: The model's classification-head logits, for a loss that ``uses_logits``.
    logits: torch.Tensor | None
    #: The teacher's embeddings of the first and second sides, ``(batch, teacher dim)`` (``requires_teacher``).
    teacher_a: torch.Tensor | None
    teacher_b: torch.Tensor | None
    #: The teacher's scores of each row's positive and its ``k`` negatives, ``(batch, 1 + k)``.
    teacher_scores: torch.Tensor | None


class SiameseLoss(nn.Module):
    """
    Base class of the Siamese losses: declarations, shared input checks, options.

    A loss declares what it needs; the trainer passes exactly that, the recipes prepare the data
    for it, and the model gets a classification head when asked:

    - ``requires_labels``: trains on labelled pairs (duplicates AND non-duplicates, labels 0/1);
      the trainer passes ``labels``. Otherwise it trains on duplicate pairs only, and labels, if
      given, must all be 1.
    - ``uses_negatives``: takes one explicit negative embedding per row (``negatives=``) when the
      data has a negative column.
    - ``requires_negatives``: cannot run without explicit negatives (a property where an option
      decides, as for the plain triplet loss without in-batch negatives).
    - ``uses_logits``: needs the logits of the model's classification head (``logits=``).
    - ``uses_in_batch_negatives``: the batch's other rows serve as negatives, so a batch must not
      hold two pairs of one duplicate group (or must pass ``group_ids`` to mask them).
    - ``requires_teacher``: learns a teacher's embeddings of both sides (``teacher_a=``,
      ``teacher_b=`` to `compute`); only `hfsiamese.distillation.DistillationTrainer` passes them.
    - ``requires_teacher_scores``: learns a teacher's scores of each row's query with its positive
      and its ``k`` negatives (``teacher_scores=``, ``(batch, 1 + k)``, from the data's
      ``teacher_scores`` column); ``negatives`` then hold ``k`` rows per row, ``(batch * k, dim)``,
      row ``i``'s at ``i*k .. i*k + k - 1``, and reach `_compute` as ``(batch, k, dim)``.

    Subclasses implement `_compute` (the inputs already checked) and take their options as
    keyword arguments of ``__init__``, stored under the same names: `get_config_dict` reads them
    back, for the model card and the training arguments.
    """

    requires_labels: bool = False
    uses_negatives: bool = False
    uses_logits: bool = False
    uses_in_batch_negatives: bool = False
    requires_teacher: bool = False
    requires_teacher_scores: bool = False
    #: What makes explicit negatives optional, named in the error when a loss requiring them gets none.
    negatives_optional_with: str | None = None

    @property
    def requires_negatives(self) -> bool:
        return False

    def compute(
        self, embeddings_a: torch.Tensor, embeddings_b: torch.Tensor, **inputs: Unpack[LossInputs]
    ) -> SiameseLossOutput:
        """Check the inputs (`LossInputs`, each optional) against the declarations, then compute the loss and its
        statistics."""
        unknown = sorted(set(inputs) - set(LossInputs.__annotations__))
        if unknown:  # a keyword signature would refuse it: so does this one (a misspelt input is not ignored)
            raise TypeError(f"{type(self).__name__}.compute() got unexpected keyword arguments {unknown}")
        labels, negatives, logits = inputs.get("labels"), inputs.get("negatives"), inputs.get("logits")
        self.check_inputs(embeddings_a, embeddings_b, labels=labels, negatives=negatives, logits=logits)
        given = {"labels": labels, "group_ids": inputs.get("group_ids"), "negatives": negatives, "logits": logits}
        if self.requires_teacher:  # only a loss that declares it takes the teacher's embeddings
            teacher_a, teacher_b = inputs.get("teacher_a"), inputs.get("teacher_b")
            self.check_teacher(embeddings_a, teacher_a, teacher_b)
            assert teacher_a is not None and teacher_b is not None  # checked just above
            given.update(teacher_a=teacher_a.to(embeddings_a.dtype), teacher_b=teacher_b.to(embeddings_b.dtype))
        if self.requires_teacher_scores:  # only a loss that declares it takes the teacher's scores
            scores = inputs.get("teacher_scores")
            given.update(teacher_scores_inputs(type(self).__name__, embeddings_a, negatives, scores))
        return self._compute(embeddings_a, embeddings_b, **given)

    def forward(
        self, embeddings_a: torch.Tensor, embeddings_b: torch.Tensor, **inputs: Unpack[LossInputs]
    ) -> torch.Tensor:
        """The scalar loss (`compute` without the statistics)."""
        return self.compute(embeddings_a, embeddings_b, **inputs).loss

    def _compute(
        self,
        embeddings_a: torch.Tensor,
        embeddings_b: torch.Tensor,
        *,
        labels: torch.Tensor | None,
        group_ids: torch.Tensor | None,
        negatives: torch.Tensor | None,
        logits: torch.Tensor | None,
    ) -> SiameseLossOutput:
        raise NotImplementedError(f"{type(self).__name__} must implement _compute")

    def check_teacher(
        self, embeddings_a: torch.Tensor, teacher_a: torch.Tensor | None, teacher_b: torch.Tensor | None
    ) -> None:
        """A teacher-learning loss's inputs: the teacher's embeddings of both sides, one row per pair."""
        name = type(self).__name__
        if teacher_a is None or teacher_b is None:
            raise ValueError(
                f"{name} needs the teacher's embeddings of both sides (teacher_a, teacher_b): "
                "train it with hfsiamese distill (hfsiamese.distillation.DistillationTrainer)"
            )
        if teacher_a.shape != teacher_b.shape or teacher_a.dim() != 2 or teacher_a.shape[0] != embeddings_a.shape[0]:
            raise ValueError(
                f"teacher_a and teacher_b must both be (batch, teacher dim) with batch {embeddings_a.shape[0]}, got "
                f"{tuple(teacher_a.shape)} and {tuple(teacher_b.shape)}"
            )

    def check_inputs(
        self,
        embeddings_a: torch.Tensor,
        embeddings_b: torch.Tensor,
        *,
        labels: torch.Tensor | None = None,
        negatives: torch.Tensor | None = None,
        logits: torch.Tensor | None = None,
    ) -> None:
        """The checks every loss shares, chosen by its declarations: one wording for one mistake."""
        name = type(self).__name__
        if embeddings_a.shape != embeddings_b.shape or embeddings_a.dim() != 2:
            raise ValueError(
                f"embeddings_a and embeddings_b must both be (batch, dim), got {tuple(embeddings_a.shape)} "
                f"and {tuple(embeddings_b.shape)}"
            )
        # A teacher-score loss's negatives are k per row, checked against its scores (`teacher_scores_inputs`).
        one_per_row = not self.requires_teacher_scores
        if negatives is not None and self.uses_negatives and one_per_row and negatives.shape != embeddings_a.shape:
            raise ValueError(
                f"negatives must be (batch, dim) = {tuple(embeddings_a.shape)}, got {tuple(negatives.shape)}"
            )
        if self.requires_labels:
            if labels is None:
                raise ValueError(f"{name} needs `labels` (0/1 per pair): it trains on labelled pairs")
            if labels.shape != embeddings_a.shape[:1]:
                raise ValueError(f"labels must be ({embeddings_a.shape[0]},), got {tuple(labels.shape)}")
            if bool(((labels != 0) & (labels != 1)).any()):
                raise ValueError(f"{name} labels must be 0 or 1, got {sorted(set(labels.tolist()))}")
        elif labels is not None and bool((labels != 1).any()):
            raise ValueError(f"{name} trains on duplicate pairs only, but labels hold non-duplicates (label != 1)")
        if negatives is not None and not self.uses_negatives:
            raise ValueError(f"{name} takes no explicit `negatives`: its negatives are the pairs labelled 0")
        if negatives is None and self.requires_negatives:
            alternative = f", or {self.negatives_optional_with}" if self.negatives_optional_with else ""
            per_anchor = "one explicit negative" if one_per_row else "explicit negatives"
            raise ValueError(f"{name} needs `negatives` ({per_anchor} per anchor){alternative}")
        if self.uses_logits and logits is None:
            raise ValueError(
                f"{name} needs the logits of a classification head: build the model with SiameseConfig(classifier_head=True)"
            )

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """The options this loss takes: the keyword arguments of its ``__init__``."""
        parameters = inspect.signature(cls.__init__).parameters
        return tuple(name for name in parameters if name != "self")

    @classmethod
    def accepted_options(cls, options: Mapping[str, Any]) -> tuple[str, ...]:
        """
        The options this loss takes when built with `options`: its own (`option_names`). A loss that
        wraps another one named in its options (`MatryoshkaLoss`) takes the inner loss's options too.
        """
        return cls.option_names()

    def get_config_dict(self) -> dict[str, Any]:
        """The loss's options and their values (the model card shows them), as sentence-transformers losses give them."""
        return {name: getattr(self, name) for name in self.option_names()}

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={value!r}" for name, value in self.get_config_dict().items())


def require_non_negative(name: str, value: float) -> None:
    """A margin or weight below 0 turns the loss upside down: refuse it when the loss is built."""
    if value < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")


def require_one_of(name: str, value: str, choices: tuple[str, ...]) -> None:
    """An option that names one of a loss's variants: anything else is refused when the loss is built."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


__all__ = ["LossInputs", "SiameseLoss", "SiameseLossOutput", "require_non_negative", "require_one_of"]
