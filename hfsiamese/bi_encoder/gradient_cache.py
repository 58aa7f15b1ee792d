"""Gradient caching (GradCache): large in-batch-loss batches in the memory of a mini-batch.

Gao, Zhang, Han & Callan (2021), "Scaling Deep Contrastive Learning Batch Size under Memory
Limited Setup". The in-batch loss couples all pairs of a batch, so plain gradient accumulation
would change the loss (fewer negatives). GradCache splits the backward pass instead:

1. embed every mini-batch without a graph (cheap in memory), remembering the RNG state;
2. compute the loss on the detached embeddings and backpropagate to them only: this gives
   dL/d(embedding) for every pair, with the loss's own parameters (a head) updated normally;
3. re-embed each mini-batch WITH a graph, replaying its RNG state so dropout draws the same
   masks, and backpropagate the cached embedding gradients into the encoder, one mini-batch at a
   time, so only one mini-batch's activations are alive at once.

The result equals the plain step's loss and gradients up to float rounding. No library offers
this for a transformers Trainer, hence this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

from hfsiamese.models.siamese.token_fields import TOKEN_FIELDS


def side_inputs(inputs: dict[str, torch.Tensor], side: str) -> dict[str, torch.Tensor] | None:
    """The embedding inputs of one side (`a`, `b` or `n`) of a collated batch, or None if absent."""
    if f"input_ids_{side}" not in inputs:
        return None
    return {field: inputs[f"{field}_{side}"] for field in TOKEN_FIELDS if f"{field}_{side}" in inputs}


def _chunks(features: dict[str, torch.Tensor], size: int) -> Iterator[dict[str, torch.Tensor]]:
    total = features["input_ids"].shape[0]
    for start in range(0, total, size):
        yield {key: value[start : start + size] for key, value in features.items()}


@contextmanager
def _replayed_rng(state: tuple[torch.Tensor, list[torch.Tensor]]) -> Iterator[None]:
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.set_rng_state(state[0])
        if devices:
            torch.cuda.set_rng_state_all(state[1])
        yield


def _rng_state() -> tuple[torch.Tensor, list[torch.Tensor]]:
    return torch.get_rng_state(), (torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [])


def gradient_cache_step(
    embed: Callable[..., torch.Tensor],
    sides: dict[str, dict[str, torch.Tensor]],
    compute_loss: Callable[[dict[str, torch.Tensor]], torch.Tensor],
    *,
    mini_batch_size: int,
    loss_scale: float = 1.0,
) -> torch.Tensor:
    """
    One GradCache forward/backward. `embed(**features)` embeds one side's features; `sides` maps
    side names to their features; `compute_loss(embeddings_by_side)` returns the scalar loss.
    Gradients of `loss × loss_scale` are accumulated into the parameters' `.grad`. Returns the
    loss (detached, unscaled).
    """
    cached: dict[str, torch.Tensor] = {}
    rng_states: dict[str, list] = {}
    with torch.no_grad():
        for side, features in sides.items():
            parts, states = [], []
            for chunk in _chunks(features, mini_batch_size):
                states.append(_rng_state())
                parts.append(embed(**chunk))
            cached[side] = torch.cat(parts).detach().requires_grad_(True)
            rng_states[side] = states
    loss = compute_loss(cached)
    (loss * loss_scale).backward()
    for side, features in sides.items():
        gradient = cached[side].grad
        for index, chunk in enumerate(_chunks(features, mini_batch_size)):
            with _replayed_rng(rng_states[side][index]):
                embeddings = embed(**chunk)
            start = index * mini_batch_size
            embeddings.backward(gradient[start : start + embeddings.shape[0]].to(embeddings.dtype))
    return loss.detach()
