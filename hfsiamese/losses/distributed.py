r"""
Cross-process plumbing for in-batch losses: gather the other processes' embeddings with gradients.

With N processes of B pairs each, an in-batch loss that only looks at its own batch gives every
anchor B − 1 negatives. Gathering the candidate side (``embeddings_b``, explicit ``negatives``,
``group_ids``) of all processes gives it N×B − 1, as one process would see on the concatenated
batch. The local anchors stay the rows; the positive of local row ``i`` is then column
``rank_offset(B) + i`` of the gathered matrix.

Why the gradient is right. ``torch.distributed.nn.functional.all_gather`` is differentiable: its
backward sums, over all processes, the gradients each one computed for a slice, and hands every
process the sum for its own slice. So if process ``r`` computes ``L_r``, the gradient that reaches
its encoder is the gradient of ``Σ_r' L_r'`` through its own embeddings. DDP then *averages* the
parameter gradients over processes, i.e. gives ``∇θ (1/N) Σ_r L_r``. For this to equal the
gradient of the single-process loss ``L`` on the concatenated batch, ``(1/N) Σ_r L_r`` must equal
``L``: with ``L`` a mean of terms, each process returns its local sum of terms × N / (the total
number of terms over all processes); see `global_mean`.

What is equal, precisely: for N processes holding batches ``X_0 … X_{N−1}`` of B pairs each and
the same encoder weights θ, (1) the mean over processes of the returned loss values equals the
loss one process computes on the concatenation ``X_0 ‖ … ‖ X_{N−1}`` (rank order), and (2) the
gradient DDP leaves on every process (the average of the local ones) equals ∇θ of that loss. Up to
floating-point rounding, and for a deterministic forward (dropout draws other masks). A single
process's own loss value is its share, not the whole-batch loss (the Trainer logs the mean over
processes). With ``gather_across_devices=False`` neither holds: each process sees B − 1 negatives.

Requirement: all processes pass batches of the same size (accelerate's default
``even_batches=True`` guarantees it); `check_equal_batch_sizes` turns a violation into an error.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_nn


def world_size() -> int:
    """Number of processes of the default group; 1 when torch.distributed is not initialised."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


def rank() -> int:
    """This process's rank in the default group; 0 when torch.distributed is not initialised."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return 0


def rank_offset(batch_size: int) -> int:
    """Index, in the gathered batch, of this process's first pair (rank × B): the diagonal's shift."""
    return rank() * batch_size


def gather_with_grad(tensor: torch.Tensor) -> torch.Tensor:
    """
    Concatenate ``tensor`` of all processes along dim 0, in rank order, keeping the autograd graph.

    Gradients flowing into slice ``r`` of the result are summed over processes and returned to
    process ``r``'s input. Unchanged input when not distributed or with one process. Every process
    must pass the same shape.
    """
    if world_size() == 1:
        return tensor
    with warnings.catch_warnings():
        # torch 2.13 marks it deprecated in favour of the private _functional_collectives; it still works.
        warnings.filterwarnings("ignore", message=".*all_gather is deprecated", category=FutureWarning)
        parts = dist_nn.all_gather(tensor)
    return torch.cat(parts, dim=0)


def gather(tensor: torch.Tensor) -> torch.Tensor:
    """`gather_with_grad` without a graph: for ids and other tensors that take no gradient."""
    if world_size() == 1:
        return tensor
    parts = [torch.empty_like(tensor) for _ in range(world_size())]
    dist.all_gather(parts, tensor.contiguous())
    return torch.cat(parts, dim=0)


def check_equal_batch_sizes(batch_size: int, device: torch.device) -> None:
    """Raise (on every process alike) unless all processes hold ``batch_size`` pairs."""
    sizes = gather(torch.tensor([batch_size], device=device)).tolist()
    if len(set(sizes)) > 1:
        raise ValueError(
            f"gathering in-batch negatives across processes needs equal per-process batch sizes, got {sizes}: "
            "keep accelerate's even_batches=True or drop the last batch"
        )


def sum_across_processes(tensor: torch.Tensor) -> torch.Tensor:
    """Sum of a (detached) tensor over all processes; the tensor itself with one process."""
    if world_size() == 1:
        return tensor
    total = tensor.detach().clone()
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    return total


def global_mean(total: torch.Tensor, count: torch.Tensor, gathered: bool) -> torch.Tensor:
    r"""
    This process's share of a mean over the terms of all processes.

    ``total`` is the differentiable sum of this process's terms, ``count`` how many there are. With
    ``gathered`` and N processes it returns ``total · N / Σ_r count_r``, so that the mean over
    processes of the returned values is ``Σ_r total_r / Σ_r count_r``, the mean one process would
    compute on the concatenated batch. Otherwise it is ``total / count``. With no term anywhere the
    result is ``total`` itself (a sum of nothing: 0, still on the graph), never NaN.
    """
    count = count.detach().to(total.dtype)
    scale = 1.0
    if gathered and world_size() > 1:
        count = sum_across_processes(count)
        scale = float(world_size())
    return total * scale / count.clamp(min=1)


def in_batch_negative_mask(
    num_rows: int,
    num_columns: int,
    offset: int,
    row_group_ids: torch.Tensor | None,
    column_group_ids: torch.Tensor | None,
    device: torch.device,
) -> torch.Tensor:
    """
    ``(num_rows, num_columns)`` bool mask of the in-batch negatives: not the row's own positive
    (column ``offset + row``) and, with group ids, not a pair of the row's duplicate group.
    """
    rows = torch.arange(num_rows, device=device)
    columns = torch.arange(num_columns, device=device)
    mask = columns.view(1, -1) != (rows + offset).view(-1, 1)
    if row_group_ids is not None and column_group_ids is not None:
        mask &= row_group_ids.view(-1, 1) != column_group_ids.view(1, -1)
    return mask


class InBatchCandidates(NamedTuple):
    """The candidate side of an in-batch loss: this process's rows, or every process's once gathered."""

    embeddings: torch.Tensor  # the positives (`embeddings_b`) of every pair
    negatives: torch.Tensor | None  # the explicit negatives, where the loss gathers them
    group_ids: torch.Tensor | None
    offset: int  # the column of this process's first pair: local row `i`'s positive is column `offset + i`


def in_batch_candidates(
    embeddings_b: torch.Tensor,
    group_ids: torch.Tensor | None,
    gathered: bool,
    negatives: torch.Tensor | None = None,
) -> InBatchCandidates:
    """The local candidates, or (`gathered`) those of all processes, checked to hold equal batches."""
    if not gathered:
        return InBatchCandidates(embeddings_b, negatives, group_ids, 0)
    batch_size = embeddings_b.shape[0]
    check_equal_batch_sizes(batch_size, embeddings_b.device)
    return InBatchCandidates(
        gather_with_grad(embeddings_b),
        gather_with_grad(negatives) if negatives is not None else None,
        gather(group_ids) if group_ids is not None else None,
        rank_offset(batch_size),
    )
