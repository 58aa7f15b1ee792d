"""Averaging gradients over processes where DDP did not: after passes run outside its forward (the gradient
cache), or when a skipped batch's backward, the one that would have averaged the accumulated gradients, never ran."""

from __future__ import annotations

from typing import Any

import torch.distributed as dist


def all_reduce_gradients(parameters: Any) -> None:
    """Average `.grad` over processes, as DDP would have (it does not see passes run outside its forward)."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return
    world = dist.get_world_size()
    for parameter in parameters:
        if parameter.grad is not None:
            dist.all_reduce(parameter.grad)
            parameter.grad.div_(world)


__all__ = ["all_reduce_gradients"]
