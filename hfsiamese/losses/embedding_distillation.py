"""Distillation from a teacher's embeddings: the student learns where the teacher puts each text."""

from __future__ import annotations

from hfsiamese.losses.base import SiameseLoss, SiameseLossOutput, require_non_negative


class EmbeddingDistillationLoss(SiameseLoss):
    r"""
    Regression of a student's embeddings (and similarities) on a teacher's, for pairs of texts.

    With the student's L2-normalised embeddings ``a_i, b_i`` of the two sides of pair ``i`` of a
    batch of ``B`` pairs, the teacher's ``t^a_i, t^b_i`` (L2-normalised, precomputed once:
    `hfsiamese.distillation`), and the cosine matrices ``S = A Bᵀ`` (student) and ``T = T^a T^bᵀ``
    (teacher):

    .. math::
        L = w_e \cdot \frac{1}{2B} \sum_i \big( \lVert a_i - t^a_i \rVert^2 + \lVert b_i - t^b_i \rVert^2 \big)
          + w_s \cdot \frac{1}{B^2} \sum_{i,j} (S_{ij} - T_{ij})^2

    The embedding term (``w_e``, `embedding_weight`) puts each text where the teacher puts it; on unit
    vectors ``‖a − t‖² = 2 − 2 cos(a, t)``, so it is in cosine units, like the score term. It needs the
    student's embedding size to be the teacher's (`projection_dim`). The score term (``w_s``,
    `score_weight`) matches every similarity of the batch — each pair's own (the diagonal) and the B² − B
    in-batch ones — whatever the two sizes; MarginMSE-style score distillation, over the whole matrix.
    Labels and group ids are not used: the teacher's scores are the targets.

    The teacher's embeddings come as ``teacher_a`` and ``teacher_b`` (``(B, d_teacher)``), which only
    this loss takes: `hfsiamese.distillation.DistillationTrainer` passes them. Statistics (`compute`):
    ``embedding_term`` and ``score_term`` (unweighted).

    Reference:
        Reimers & Gurevych (2020), "Making Monolingual Sentence Embeddings Multilingual using Knowledge
        Distillation" (MSE on embeddings); Hofstätter et al. (2020), "Improving Efficient Neural Ranking
        Models with Cross-Architecture Knowledge Distillation" (MSE on scores).

    Examples:
        >>> loss_fn = EmbeddingDistillationLoss()
        >>> a, b, ta, tb = (torch.nn.functional.normalize(torch.randn(4, 8), dim=-1) for _ in range(4))
        >>> output = loss_fn.compute(a, b, teacher_a=ta, teacher_b=tb)
        >>> sorted(output.stats)
        ['embedding_term', 'score_term']
    """

    requires_teacher = True

    def __init__(self, embedding_weight: float = 1.0, score_weight: float = 1.0) -> None:
        super().__init__()
        require_non_negative("embedding_weight", embedding_weight)
        require_non_negative("score_weight", score_weight)
        if embedding_weight == 0 and score_weight == 0:
            raise ValueError("embedding_weight and score_weight are both 0: the distillation loss would learn nothing")
        self.embedding_weight = embedding_weight
        self.score_weight = score_weight

    def check_sizes(self, student_dim: int, teacher_dim: int) -> None:
        """Refuse embeddings of different sizes where the embedding term compares them (`hfsiamese distill` asks before
        the teacher encodes anything; each batch asks again)."""
        if self.embedding_weight and teacher_dim != student_dim:
            raise ValueError(
                f"the embedding term compares the student's {student_dim}-d embeddings with the teacher's "
                f"{teacher_dim}-d ones: give the student projection_dim={teacher_dim}, or set "
                "embedding_weight=0 (the score term works across sizes)"
            )

    def _compute(
        self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits, teacher_a, teacher_b
    ) -> SiameseLossOutput:
        # The base class checked both teacher sides (`check_teacher`); the embedding term also needs the sizes to agree.
        self.check_sizes(embeddings_a.shape[1], teacher_a.shape[1])
        zero = embeddings_a.new_zeros(())
        embedding_term = score_term = zero
        if self.embedding_weight:
            squared = (embeddings_a - teacher_a).pow(2).sum(dim=1) + (embeddings_b - teacher_b).pow(2).sum(dim=1)
            embedding_term = squared.mean() / 2
        if self.score_weight:
            score_term = (embeddings_a @ embeddings_b.T - teacher_a @ teacher_b.T).pow(2).mean()
        loss = self.embedding_weight * embedding_term + self.score_weight * score_term
        return SiameseLossOutput(loss, {"embedding_term": embedding_term.detach(), "score_term": score_term.detach()})


__all__ = ["EmbeddingDistillationLoss"]
