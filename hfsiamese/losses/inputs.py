"""Input checks shared by the losses, so every loss names a wrong input the same way."""

from __future__ import annotations

import torch


def check_embeddings(embeddings_a: torch.Tensor, embeddings_b: torch.Tensor, negatives: torch.Tensor | None = None) -> None:
    """Both sides (and explicit negatives, if any) must be `(batch, dim)` of one shape."""
    if embeddings_a.shape != embeddings_b.shape or embeddings_a.dim() != 2:
        raise ValueError(
            f"embeddings_a and embeddings_b must both be (batch, dim), got {tuple(embeddings_a.shape)} "
            f"and {tuple(embeddings_b.shape)}"
        )
    if negatives is not None and negatives.shape != embeddings_a.shape:
        raise ValueError(f"negatives must be (batch, dim) = {tuple(embeddings_a.shape)}, got {tuple(negatives.shape)}")


def check_duplicate_pair_inputs(
    loss_name: str,
    embeddings_a: torch.Tensor,
    embeddings_b: torch.Tensor,
    labels: torch.Tensor | None,
    negatives: torch.Tensor | None,
) -> None:
    """Inputs of a loss trained on duplicate pairs: labels, when given, must all be 1."""
    check_embeddings(embeddings_a, embeddings_b, negatives)
    if labels is not None and bool((labels != 1).any()):
        raise ValueError(f"{loss_name} trains on duplicate pairs only, but labels hold non-duplicates (label != 1)")


def check_labelled_pair_inputs(
    loss_name: str,
    embeddings_a: torch.Tensor,
    embeddings_b: torch.Tensor,
    labels: torch.Tensor | None,
    negatives: torch.Tensor | None,
) -> torch.Tensor:
    """Inputs of a loss trained on labelled pairs; returns the labels as a bool mask of duplicates."""
    check_embeddings(embeddings_a, embeddings_b)
    if labels is None:
        raise ValueError(f"{loss_name} needs `labels` (0/1 per pair): it trains on labelled pairs")
    if labels.shape != embeddings_a.shape[:1]:
        raise ValueError(f"labels must be ({embeddings_a.shape[0]},), got {tuple(labels.shape)}")
    if bool(((labels != 0) & (labels != 1)).any()):
        raise ValueError(f"{loss_name} labels must be 0 or 1, got {sorted(set(labels.tolist()))}")
    if negatives is not None:
        raise ValueError(f"{loss_name} takes no explicit `negatives`: its negatives are the pairs labelled 0")
    return labels == 1
