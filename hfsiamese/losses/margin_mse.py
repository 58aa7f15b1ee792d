"""Margin-MSE: the student learns, for each negative, by how much the teacher prefers the positive."""

from __future__ import annotations

from hfsiamese.losses.base import SiameseLossOutput
from hfsiamese.losses.teacher_score_loss import TeacherScoreLoss
from hfsiamese.losses.teacher_scores import student_scores


class MarginMSELoss(TeacherScoreLoss):
    r"""
    Mean squared error between the student's and the teacher's margins, one per negative.

    A row holds a query ``q_i``, its positive ``p_i``, ``k`` negatives ``n_{i1..ik}`` and the teacher's
    scores ``t_i = [t(q_i,p_i), t(q_i,n_{i1}), ..., t(q_i,n_{ik})]`` (the ``teacher_scores`` column). With
    the student's cosine ``s`` (L2-normalised embeddings) times ``similarity_scale`` ``λ``:

    .. math::
        L = \frac{1}{Bk} \sum_i \sum_j \Big( \lambda\,\big(s(q_i,p_i) - s(q_i,n_{ij})\big)
            - \big(t(q_i,p_i) - t(q_i,n_{ij})\big) \Big)^2

    Only differences are learned, so the teacher's scores may sit on any offset (a cross-encoder's
    logits); their spread must be reachable, though: a cosine margin lies in [-2, 2], so for a teacher
    whose margins reach ±10 set ``similarity_scale`` to about 5-10 (a bi-encoder teacher's cosines: 1).
    Labels and group ids are not used; every row's ``k`` must be the same within a batch.
    Statistics (`compute`): ``student_margin`` (scaled) and ``teacher_margin``, their means.

    Reference:
        Hofstätter et al. (2020), "Improving Efficient Neural Ranking Models with Cross-Architecture
        Knowledge Distillation"; sentence-transformers' ``MarginMSELoss``.

    Examples:
        >>> loss_fn = MarginMSELoss()
        >>> q, p = (torch.nn.functional.normalize(torch.randn(2, 8), dim=-1) for _ in range(2))
        >>> n = torch.nn.functional.normalize(torch.randn(2 * 3, 8), dim=-1)  # 3 negatives per row
        >>> scores = torch.tensor([[0.9, 0.1, 0.2, 0.0], [0.8, 0.5, 0.3, 0.1]])
        >>> bool(loss_fn(q, p, negatives=n, teacher_scores=scores) >= 0)
        True
    """

    def __init__(self, similarity_scale: float = 1.0) -> None:
        super().__init__()
        if similarity_scale <= 0:
            raise ValueError(f"similarity_scale must be positive, got {similarity_scale}")
        self.similarity_scale = similarity_scale

    def _compute(
        self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits, teacher_scores
    ) -> SiameseLossOutput:
        scores = self.similarity_scale * student_scores(embeddings_a, embeddings_b, negatives)
        student_margin = scores[:, :1] - scores[:, 1:]
        teacher_margin = teacher_scores[:, :1] - teacher_scores[:, 1:]
        loss = (student_margin - teacher_margin).pow(2).mean()
        stats = {"student_margin": student_margin.detach().mean(), "teacher_margin": teacher_margin.mean()}
        return SiameseLossOutput(loss, stats)


__all__ = ["MarginMSELoss"]
