"""
Length-sorted sub-batches for transformer encoders: a runtime choice, never a checkpoint property.

A step's texts (both sides, and negatives) sorted by length and cut into sub-batches, each padded
only to its own longest text, compute ~9% padding on QQP instead of ~40%, with the batch (and so
the in-batch negatives) unchanged. That pays where the encoder's cost grows with the tokens it is
given and a call costs little (CPUs); on a GPU many small calls leave it idle (12× slower measured
on an H100 with sub-batches of 32 texts), so there the default is one call per side.

Sub-batches are cut by a token budget: as many texts as fit in `max_tokens` padded tokens (count ×
the sub-batch's longest text), so short texts travel in large groups and long ones in small ones.
`max_texts` caps the count instead (the earlier fixed-size rule). 0 turns sub-batching off.
"""

from __future__ import annotations

from typing import Literal

import torch

AUTO: Literal["auto"] = "auto"
# Padded tokens per encoder call on CPUs when the budget is "auto" (MiniLM-L6 on 2 cores,
# benchmarks/README.md, "Sub-batches by token budget"): with gradients, small calls keep the
# activations saved for backward in cache (a batch-64 step: 0.96 s at 512, 1.32 s at 2048, 2.3 s in
# one call); without them (encode, evaluation) larger calls cost no more and pay less per-call overhead.
CPU_TOKEN_BUDGET = 512
CPU_INFERENCE_TOKEN_BUDGET = 2048

TokenBudget = int | Literal["auto"] | None


def check_sub_batching(max_tokens: TokenBudget, max_texts: int | None) -> None:
    """Settings a user may pass: a token budget (int ≥ 0, "auto" or None) and a text cap (int ≥ 0 or None)."""
    if not (max_tokens is None or max_tokens == AUTO or (_is_count(max_tokens))):
        raise ValueError(f"sub_batch_tokens must be a non-negative integer, 'auto' or None, got {max_tokens!r}")
    if not (max_texts is None or _is_count(max_texts)):
        raise ValueError(f"sub_batch_size must be a non-negative integer or None (0: off), got {max_texts!r}")


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def resolve_token_budget(
    max_tokens: TokenBudget, max_texts: int | None, device: torch.device
) -> tuple[int | None, int | None]:
    """
    The `(max_tokens, max_texts)` that apply on `device`, or `(None, None)` for one call per side.
    "auto" means `CPU_TOKEN_BUDGET` on CPUs (`CPU_INFERENCE_TOKEN_BUDGET` when gradients are off) and
    off elsewhere; an explicit `max_texts` wins over "auto".
    """
    if max_texts == 0 or max_tokens == 0:
        return None, None
    if max_tokens == AUTO:
        if max_texts:
            return None, max_texts
        if device.type != "cpu":
            return None, None
        return (CPU_TOKEN_BUDGET if torch.is_grad_enabled() else CPU_INFERENCE_TOKEN_BUDGET), None
    if max_tokens is None and not max_texts:
        return None, None
    return max_tokens, max_texts


def plan_sub_batches(
    sorted_lengths: list[int], *, max_tokens: int | None = None, max_texts: int | None = None
) -> list[int]:
    """
    Sizes of consecutive sub-batches over lengths sorted in ascending order: each holds at most
    `max_texts` texts and at most `max_tokens` padded tokens (its count × its last, longest length);
    a text longer than the budget goes alone. Greedy, so the sub-batches are as few as the rules allow.
    """
    sizes: list[int] = []
    start = 0
    for index, length in enumerate(sorted_lengths):
        count = index - start + 1
        over_texts = max_texts is not None and count > max_texts
        over_tokens = max_tokens is not None and count * max(length, 1) > max_tokens
        if (over_texts or over_tokens) and count > 1:
            sizes.append(count - 1)
            start = index
    if sorted_lengths:
        sizes.append(len(sorted_lengths) - start)
    return sizes


__all__ = [
    "AUTO",
    "CPU_INFERENCE_TOKEN_BUDGET",
    "CPU_TOKEN_BUDGET",
    "TokenBudget",
    "check_sub_batching",
    "plan_sub_batches",
    "resolve_token_budget",
]
