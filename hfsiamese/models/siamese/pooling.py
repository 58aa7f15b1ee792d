"""How a transformer's token states become one vector per text: sentence-transformers' pooling modes.

Each mode is computed as sentence-transformers' `Pooling` module computes it (so that a model started from
a sentence-transformers folder gives its authors' similarities), over real tokens only, whichever side the
batch is padded on: decoders pad on the left, and their last real token is the one that has read the
whole text. This file travels with every checkpoint as remote code (the modeling file imports it), so it
imports only torch.
"""

from __future__ import annotations

import torch


def masked_mean(states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``states`` over the positions where ``attention_mask`` is 1 (padding excluded)."""
    mask = attention_mask.unsqueeze(-1).to(states.dtype)
    return (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


def _first_real(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of each row's first real token (0 when right-padded; after the padding when left-padded)."""
    return attention_mask.to(torch.int32).argmax(dim=1)


def _last_real(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of each row's last real token (the last column when left-padded)."""
    width = attention_mask.shape[1]
    found, from_end = attention_mask.to(torch.int32).flip(1).max(dim=1)
    from_end = torch.where(found == 0, torch.zeros_like(from_end), from_end)
    return width - 1 - from_end


def _gather(states: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return states[torch.arange(states.shape[0], device=states.device), index]


def _sums(states: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum of the real tokens' states and their count (at least 1e-9), accumulated in float32 at least."""
    accumulate = torch.float32 if states.dtype in (torch.float16, torch.bfloat16) else states.dtype
    mask = attention_mask.unsqueeze(-1).to(states.dtype)
    total = (states * mask).sum(dim=1, dtype=accumulate)
    count = mask.sum(dim=1, dtype=accumulate).clamp(min=1e-9)
    return total, count


def pool(states: torch.Tensor, attention_mask: torch.Tensor, mode: str) -> torch.Tensor:
    """
    ``states`` `(batch, length, width)` pooled by ``mode`` (see `SiameseConfig.pooling`; several modes joined
    with "+" are concatenated in the order given) into `(batch, width × modes)`.
    """
    vectors = []
    for name in mode.split("+"):
        if name == "mean":
            total, count = _sums(states, attention_mask)
            vectors.append((total / count).to(states.dtype))
        elif name == "mean_sqrt_len":
            total, count = _sums(states, attention_mask)
            vectors.append((total / count.sqrt()).to(states.dtype))
        elif name == "cls":
            vectors.append(_gather(states, _first_real(attention_mask)))
        elif name == "last_token":
            vectors.append(_gather(states, _last_real(attention_mask)))
        elif name == "max":
            padding = attention_mask.unsqueeze(-1) == 0
            vectors.append(states.masked_fill(padding, float("-inf")).max(dim=1).values)
        elif name == "weighted_mean":
            # Weights 1, 2, 3, ... from each text's first real token on (so left padding shifts nothing).
            accumulate = torch.float32 if states.dtype in (torch.float16, torch.bfloat16) else states.dtype
            positions = torch.arange(1, states.shape[1] + 1, device=states.device, dtype=accumulate).unsqueeze(0)
            weights = (positions - _first_real(attention_mask).unsqueeze(1).to(accumulate)) * attention_mask.to(
                accumulate
            )
            total = (states * weights.unsqueeze(-1).to(states.dtype)).sum(dim=1, dtype=accumulate)
            vectors.append((total / weights.sum(dim=1, keepdim=True).clamp(min=1e-9)).to(states.dtype))
        else:
            raise ValueError(f"unknown pooling mode {name!r}")
    return vectors[0] if len(vectors) == 1 else torch.cat(vectors, dim=-1)


__all__ = ["masked_mean", "pool"]
