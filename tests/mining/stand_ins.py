"""Stand-in models with known scores, so the expected negatives of a test are known."""

from __future__ import annotations

import types

import torch


class TableModel:
    """A bi-encoder with a fixed unit vector per text."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = {
            text: torch.nn.functional.normalize(torch.tensor(v, dtype=torch.float32), dim=0)
            for text, v in vectors.items()
        }
        self.config = types.SimpleNamespace(sentence_embedding_dim=len(next(iter(vectors.values()))), threshold=None)
        self.name_or_path = "table"
        self.encoded: list[str] = []

    def encode(self, texts, tokenizer=None, **kwargs):
        self.encoded += list(texts)
        return torch.stack([self.vectors[t] for t in texts])


class TableCrossEncoder:
    """A cross-encoder whose score of a pair is looked up (either order), 0.1 when not listed."""

    def __init__(self, scores: dict[tuple[str, str], float], threshold: float | None = 0.5, name: str = "cross"):
        self.scores = {frozenset(pair): value for pair, value in scores.items()}
        self.config = types.SimpleNamespace(threshold=threshold)
        self.name_or_path = name
        self.calls: list[int] = []  # pairs per call

    def score_pairs(self, texts_a, texts_b, tokenizer=None, **kwargs):
        self.calls.append(len(texts_a))
        return torch.tensor([self.scores.get(frozenset((a, b)), 0.1) for a, b in zip(texts_a, texts_b)])


# a and b are duplicates; c is very close to a (a likely false negative); d, e further; f far.
VECTORS = {
    "a": [1.0, 0.0, 0.0],
    "b": [0.95, 0.3, 0.0],
    "c": [0.9, 0.0, 0.45],
    "d": [0.6, 0.8, 0.0],
    "e": [0.3, 1.0, 0.0],
    "f": [0.0, 0.0, 1.0],
}
# cosines with a: b 0.954, c 0.894, d 0.6, e 0.287, f 0.0
