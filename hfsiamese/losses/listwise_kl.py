"""Listwise distillation: the student's softmax over a query's candidates learns the teacher's."""

from __future__ import annotations

import torch.nn.functional as F

from hfsiamese.losses.base import SiameseLossOutput
from hfsiamese.losses.teacher_score_loss import TeacherScoreLoss
from hfsiamese.losses.teacher_scores import student_scores


class ListwiseKLLoss(TeacherScoreLoss):
    r"""
    KL divergence from the teacher's distribution over each row's candidates to the student's.

    A row holds a query ``q_i``, its positive and ``k`` negatives (candidates ``c_{i0} = p_i``,
    ``c_{i1..ik}``) and the teacher's scores ``t_{ij}`` of the query with each (the ``teacher_scores``
    column, positive first). With the student's cosines ``s_{ij}`` (L2-normalised embeddings), the
    student's temperature ``τ`` (`temperature`) and the teacher's ``τ_t`` (`teacher_temperature`,
    ``τ`` when unset):

    .. math::
        P^t_i = \mathrm{softmax}_j(t_{ij} / τ_t), \quad P^s_i = \mathrm{softmax}_j(s_{ij} / τ), \quad
        L = \frac{1}{B} \sum_i \mathrm{KL}(P^t_i \,\Vert\, P^s_i)
          = \frac{1}{B} \sum_i \sum_j P^t_{ij} \log \frac{P^t_{ij}}{P^s_{ij}}

    The student's cosines lie in [-1, 1], so its temperature is small (0.05 by default, as
    `MultipleNegativesRankingLoss`'s); a teacher scoring in cosines too shares it (leave
    `teacher_temperature` unset), a cross-encoder's logits want their own (``teacher_temperature=1``:
    its softmax as it is). The KL is not multiplied by ``τ²`` (Hinton et al.'s gradient rescaling):
    its value is the divergence itself, 0 when the student ranks as the teacher does. Labels and
    group ids are not used; every row's ``k`` must be the same within a batch. Statistics
    (`compute`): ``teacher_positive_probability`` and ``student_positive_probability``, the mean
    probability each puts on the positive.

    References:
        Hinton, Vinyals & Dean (2015), "Distilling the Knowledge in a Neural Network"; FlagEmbedding's
        knowledge distillation (BGE M3, Chen et al. 2024); sentence-transformers' ``DistillKLDivLoss``.

    Examples:
        >>> loss_fn = ListwiseKLLoss(temperature=0.05, teacher_temperature=1.0)
        >>> q, p = (torch.nn.functional.normalize(torch.randn(2, 8), dim=-1) for _ in range(2))
        >>> n = torch.nn.functional.normalize(torch.randn(2 * 3, 8), dim=-1)  # 3 negatives per row
        >>> scores = torch.tensor([[9.0, 1.0, 2.0, 0.0], [8.0, 5.0, 3.0, 1.0]])
        >>> bool(loss_fn(q, p, negatives=n, teacher_scores=scores) >= 0)
        True
    """

    def __init__(self, temperature: float = 0.05, teacher_temperature: float | None = None) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if teacher_temperature is not None and teacher_temperature <= 0:
            raise ValueError(
                f"teacher_temperature must be positive (or unset: temperature's), got {teacher_temperature}"
            )
        self.temperature = temperature
        self.teacher_temperature = teacher_temperature

    def _compute(
        self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits, teacher_scores
    ) -> SiameseLossOutput:
        teacher_temperature = self.temperature if self.teacher_temperature is None else self.teacher_temperature
        student_log_p = F.log_softmax(student_scores(embeddings_a, embeddings_b, negatives) / self.temperature, dim=1)
        teacher_log_p = F.log_softmax(teacher_scores / teacher_temperature, dim=1)
        loss = F.kl_div(student_log_p, teacher_log_p, reduction="batchmean", log_target=True)
        stats = {
            "teacher_positive_probability": teacher_log_p[:, 0].exp().mean(),
            "student_positive_probability": student_log_p[:, 0].detach().exp().mean(),
        }
        return SiameseLossOutput(loss, stats)


__all__ = ["ListwiseKLLoss"]
