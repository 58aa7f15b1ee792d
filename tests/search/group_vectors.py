"""A stand-in bi-encoder whose embeddings are chosen by the test (geometry made to order: chains, clusters)."""

from __future__ import annotations

import hashlib
import math
from types import SimpleNamespace

import numpy as np
import torch

DIM = 8


def unit(*pairs: tuple[int, float]) -> list[float]:
    """A unit vector from `(axis, value)` pairs."""
    vector = np.zeros(DIM)
    for axis, value in pairs:
        vector[axis] = value
    return (vector / np.linalg.norm(vector)).tolist()


def at_angle(degrees: float, axes: tuple[int, int] = (4, 5)) -> list[float]:
    """A unit vector in the plane of two axes, `degrees` from the first: cos(35°) = 0.82, cos(70°) = 0.34."""
    return unit((axes[0], math.cos(math.radians(degrees))), (axes[1], math.sin(math.radians(degrees))))


class VectorModel:
    """`encode` gives each known text its vector, any other text (the index's probe questions) a seeded one."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors
        self.config = SimpleNamespace(sentence_embedding_dim=DIM, threshold=None)
        self.name_or_path = "vector-model"

    def encode(self, texts, tokenizer=None, **_: object) -> torch.Tensor:
        rows = []
        for text in texts:
            if text not in self.vectors:
                seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
                self.vectors[text] = np.random.default_rng(seed).standard_normal(DIM).tolist()
            rows.append(self.vectors[text])
        return torch.nn.functional.normalize(torch.tensor(rows, dtype=torch.float32), dim=1)


# A chain A≈B≈C≈D (35° apart; 0.82 between neighbours, 0.34 two apart), two tight clusters and a loner.
CHAIN = {"chain a": at_angle(0), "chain b": at_angle(35), "chain c": at_angle(70), "chain d": at_angle(105)}
CLUSTERS = {
    "python 1": unit((0, 1.0), (1, -0.1)),
    "python 2": unit((0, 1.0)),  # between the other two: the most central
    "python 3": unit((0, 1.0), (1, 0.12)),
    "sky 1": unit((3, 1.0)),
    "sky 2": unit((3, 1.0), (1, 0.1)),
    "loner": unit((6, 1.0)),
}
THRESHOLD = 0.8


def corpus() -> list[str]:
    """The texts in the order the tests add them (clusters interleaved with the chain)."""
    return ["python 1", "chain a", "sky 1", "chain b", "python 2", "chain c", "loner", "sky 2", "chain d", "python 3"]


def model() -> VectorModel:
    return VectorModel({**CHAIN, **CLUSTERS})
