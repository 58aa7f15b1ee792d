"""The static encoder: a bag of learned token vectors, pooled over the real tokens — no recurrence.

The cheapest text encoder there is: a text's vector is a (weighted) mean of its tokens' vectors, one
table lookup and one sum per text, so encoding costs about what tokenising does. It is the student
that distillation (`hfsiamese.distillation`) trains from a transformer teacher, after
model2vec / static-embedding models.

This file travels with every checkpoint as remote code (the modeling file imports it relatively), so
it imports only torch and its siblings. Its forward is a plain tensor function of
`(input_ids, attention_mask)` (an embedding lookup, a product and a sum): it exports to ONNX as is.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .configuration_siamese import STATIC_POOLINGS, SiameseConfig


class StaticEncoder(nn.Module):
    """
    Embedding → (dropout) → mean or learned-weight mean over the tokens where `attention_mask` is 1.

    `"weighted_mean"` gives each vocabulary entry a learned positive weight (softplus of a scalar, about
    0.69 for every entry at initialisation, so training starts from the plain mean): a learned, SIF-like
    down-weighting of frequent, uninformative words ("how", "the", "?").

    Padding has weight exactly 0, so a text's vector does not depend on how far it is padded, on
    which side, or on the other texts of its batch; an empty text gets the zero vector.
    """

    def __init__(self, config: SiameseConfig) -> None:
        super().__init__()
        if config.pooling not in STATIC_POOLINGS:
            raise ValueError(f"the static encoder pools with one of {STATIC_POOLINGS}, got {config.pooling!r}")
        self.pooling = config.pooling
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_dim, padding_idx=config.pad_token_id)
        self.dropout = nn.Dropout(config.dropout)
        # One scalar per vocabulary entry, an Embedding so that it initialises and exports like one.
        self.token_weights = (
            nn.Embedding(config.vocab_size, 1, padding_idx=config.pad_token_id)
            if self.pooling == "weighted_mean"
            else None
        )

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        weights = attention_mask.to(self.embeddings.weight.dtype)
        if self.token_weights is not None:
            weights = weights * F.softplus(self.token_weights(input_ids).squeeze(-1))
        weights = weights / weights.sum(dim=1, keepdim=True).clamp(min=torch.finfo(weights.dtype).tiny)
        if not self.training and not _capturing_a_graph() and input_ids.shape[1]:
            # Inference: the lookup and the weighted sum in one kernel, without the (batch, length, dim) tensor of
            # token vectors the product below reads (the einsum was 41% of a static student's `encode`). The same
            # vectors to float rounding. Training keeps the product (dropout acts on the token vectors), and so does
            # an export, whose graph spells it in plain ops (an ONNX EmbeddingBag is a loop), and a batch of texts with
            # no tokens at all (`embedding_bag` takes no bags of width 0; the product gives their zero vectors).
            return F.embedding_bag(input_ids, self.embeddings.weight, per_sample_weights=weights, mode="sum")
        vectors = self.dropout(self.embeddings(input_ids))
        return torch.einsum("bl,bld->bd", weights, vectors)


def _capturing_a_graph() -> bool:
    """Whether the forward is being traced into a graph (TorchScript, `torch.export`) rather than run."""
    return torch.jit.is_tracing() or torch.compiler.is_compiling()


__all__ = ["StaticEncoder"]
