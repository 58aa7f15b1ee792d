"""
What a Siamese model's forward returns (`SiameseModelOutput`), made in one place from a batch's embeddings: the
PyTorch model and its ONNX export answer alike.

This file travels with every checkpoint as remote code (the modeling file imports it relatively), so it imports
only torch and transformers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers.utils import ModelOutput

__all__ = ["SiameseModelOutput"]


@dataclass
class SiameseModelOutput(ModelOutput):
    """
    Output of [`SiameseModel.forward`].

    Args:
        similarity (`torch.FloatTensor` of shape `(batch_size,)`):
            Cosine similarity of each pair, in [-1, 1].
        embeddings_a (`torch.FloatTensor` of shape `(batch_size, dim)`):
            L2-normalised embeddings of the first texts.
        embeddings_b (`torch.FloatTensor` of shape `(batch_size, dim)`):
            L2-normalised embeddings of the second texts.
        embeddings_n (`torch.FloatTensor` of shape `(batch_size, dim)`, *optional*):
            L2-normalised embeddings of explicit negatives, when `input_ids_n` was given.
        logits (`torch.FloatTensor` of shape `(batch_size, 2)`, *optional*):
            Scores of (not duplicate, duplicate) from the classification head, when the model has one.
    """

    similarity: torch.FloatTensor | None = None
    embeddings_a: torch.FloatTensor | None = None
    embeddings_b: torch.FloatTensor | None = None
    embeddings_n: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None

    @classmethod
    def of_pairs(
        cls,
        embeddings_a: torch.Tensor,
        embeddings_b: torch.Tensor,
        embeddings_n: torch.Tensor | None = None,
        logits: torch.Tensor | None = None,
    ) -> SiameseModelOutput:
        """The output of a batch of pairs from their unit embeddings: each pair's cosine similarity beside them."""
        return cls(
            similarity=(embeddings_a * embeddings_b).sum(dim=-1),
            embeddings_a=embeddings_a,
            embeddings_b=embeddings_b,
            embeddings_n=embeddings_n,
            logits=logits,
        )

    @classmethod
    def returned(
        cls,
        embeddings_a: torch.Tensor,
        embeddings_b: torch.Tensor,
        embeddings_n: torch.Tensor | None = None,
        *,
        classifier: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
        return_dict: bool | None = None,
    ) -> SiameseModelOutput | tuple:
        """What a Siamese forward returns for a batch of pairs: `of_pairs`, with the classification head's logits when
        the model has one (`classifier`), as a tuple when `return_dict=False` (transformers' convention)."""
        logits = classifier(embeddings_a, embeddings_b) if classifier is not None else None
        output = cls.of_pairs(embeddings_a, embeddings_b, embeddings_n, logits)
        return output if return_dict is not False else output.to_tuple()
