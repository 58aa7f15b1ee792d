"""
What the losses learning a teacher's scores share: the ``teacher_scores`` input's checks, and the
student's scores of the same rows.

A row is a query, its positive and ``k`` negatives; the teacher scored the query with each of them,
``[score(q, p), score(q, n_1), ..., score(q, n_k)]``: the data's ``teacher_scores`` column, which
`hfsiamese.data.SiamesePairCollator` batches as ``(batch, 1 + k)`` floats. The negatives' embeddings
come flat, ``k`` per row (``(batch * k, dim)``: row ``i``'s are ``i*k .. i*k + k - 1``).
"""

from __future__ import annotations

import torch

#: The data column (and batch key) of the teacher's scores.
TEACHER_SCORES_COLUMN = "teacher_scores"


def teacher_scores_inputs(
    loss_name: str, anchors: torch.Tensor, negatives: torch.Tensor | None, teacher_scores: torch.Tensor | None
) -> dict[str, torch.Tensor]:
    """
    The checked ``teacher_scores`` (in the anchors' dtype, no gradient) and the ``negatives`` as
    ``(batch, k, dim)``; a missing input or a count that does not match is a one-line error naming it.
    """
    if teacher_scores is None:
        raise ValueError(
            f"{loss_name} needs the teacher's scores: the training rows need a `{TEACHER_SCORES_COLUMN}` column "
            "(a list of floats per row: [score(q,p), score(q,n1), ...])"
        )
    batch = anchors.shape[0]
    if teacher_scores.dim() != 2 or teacher_scores.shape[0] != batch:
        raise ValueError(
            f"{TEACHER_SCORES_COLUMN} must be (batch, 1 + negatives per row) with batch {batch}, "
            f"got {tuple(teacher_scores.shape)}"
        )
    per_row = teacher_scores.shape[1] - 1
    if per_row < 1:
        raise ValueError(
            f"{loss_name} compares the positive with negatives: {TEACHER_SCORES_COLUMN} needs at least 2 scores per "
            f"row ([score(q,p), score(q,n1), ...]), got {teacher_scores.shape[1]}"
        )
    if negatives is None or negatives.dim() != 2 or negatives.shape != (batch * per_row, anchors.shape[1]):
        got = "none" if negatives is None else f"negatives of shape {tuple(negatives.shape)}"
        raise ValueError(
            f"{TEACHER_SCORES_COLUMN} holds {teacher_scores.shape[1]} scores per row, so each of the {batch} rows "
            f"needs {per_row} negatives ({batch * per_row} in all, (batch * k, dim)), got {got}"
        )
    if not bool(torch.isfinite(teacher_scores).all()):
        raise ValueError(f"{TEACHER_SCORES_COLUMN} holds NaN or infinite scores")
    return {
        "teacher_scores": teacher_scores.detach().to(anchors.dtype),
        "negatives": negatives.view(batch, per_row, anchors.shape[1]),
    }


def student_scores(anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor) -> torch.Tensor:
    """
    The student's cosine of each anchor with its positive, then with each of its ``k`` negatives:
    ``(batch, 1 + k)``, laid out as ``teacher_scores`` (the embeddings are L2-normalised).
    """
    positive = (anchors * positives).sum(dim=-1, keepdim=True)
    negative = torch.einsum("bd,bkd->bk", anchors, negatives)
    return torch.cat([positive, negative], dim=1)


__all__ = ["TEACHER_SCORES_COLUMN", "student_scores", "teacher_scores_inputs"]
