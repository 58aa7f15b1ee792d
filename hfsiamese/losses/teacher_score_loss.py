"""`TeacherScoreLoss`: what the losses learning a teacher's scores declare, once."""

from __future__ import annotations

from hfsiamese.losses.base import SiameseLoss


class TeacherScoreLoss(SiameseLoss):
    """
    A loss on a teacher's scores of each row's positive and ``k`` negatives (``teacher_scores``,
    `hfsiamese.losses.teacher_scores`): it needs those negatives (``k`` per row) and the scores, and
    uses no labels, group ids or in-batch negatives.
    """

    uses_negatives = True
    requires_teacher_scores = True

    @property
    def requires_negatives(self) -> bool:
        return True


__all__ = ["TeacherScoreLoss"]
