"""The corpora of `search_scale.py`: real QQP questions held out as queries, the corpus topped up to its size.

* `recombined` (the default): the seeded synthetic recombinations of `make_pairs_file.py` (prefix of one real question
  + suffix of another): spread out, few close neighbours;
* `near_copies`: seeded near-copies of the real questions (one or two edits each: a word dropped, two neighbours
  swapped, a word replaced by another word of the corpus's vocabulary), so each real question sits in a dense cluster
  of ~`num_texts / 19k` variants, as the same question asked again and again does on a Q&A site: the neighbours an
  approximate index must tell apart (issue 37).

Both hold out the same queries for the same seed (the first draw of the generator), all texts distinct and none a
query; the queries' own near-copies are never in the corpus (they are made from corpus questions only).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.search.make_pairs_file import real_questions
from benchmarks.search.search_latency import make_texts

CORPORA = ("recombined", "near_copies")
EDITS = ("drop", "swap", "replace")
MAX_EDITS = 2


def make_corpus(kind: str, source: Path, num_texts: int, num_queries: int, seed: int) -> tuple[list[str], list[str]]:
    """(corpus, queries) of the corpus `kind` (see the module docstring)."""
    if kind == "recombined":
        return make_texts(source, num_texts, num_queries, seed)
    if kind == "near_copies":
        return near_copy_texts(source, num_texts, num_queries, seed)
    raise ValueError(f"--corpus must be one of {CORPORA}, got {kind!r}")


def near_copy_texts(source: Path, num_texts: int, num_queries: int, seed: int) -> tuple[list[str], list[str]]:
    """The real questions (but the held-out queries) and seeded near-copies of them, up to `num_texts` distinct texts."""
    rng = np.random.default_rng(seed)
    words = real_questions(source)
    real = [" ".join(w) for w in words]
    held_out = set(rng.choice(len(real), size=num_queries, replace=False).tolist())  # as `make_texts` draws them
    queries = [real[i] for i in sorted(held_out)]
    base = [w for i, w in enumerate(words) if i not in held_out]
    corpus = [" ".join(w) for w in base][:num_texts]
    vocabulary = [word for question in base for word in question]  # drawn by frequency, as a typo or synonym is
    taken = set(real)
    editable = [w for w in base if len(w) >= 2]
    while len(corpus) < num_texts:
        need = num_texts - len(corpus)
        for question in (editable[i] for i in rng.integers(0, len(editable), need)):
            text = " ".join(near_copy(question, rng, vocabulary))
            if text and text not in taken and len(corpus) < num_texts:
                taken.add(text)
                corpus.append(text)
    return corpus, queries


def near_copy(question: list[str], rng: np.random.Generator, vocabulary: list[str]) -> list[str]:
    """`question` after one to `MAX_EDITS` seeded edits: a word dropped, two neighbours swapped, a word replaced."""
    copy = list(question)
    for _ in range(int(rng.integers(1, MAX_EDITS + 1))):
        if len(copy) < 2:
            break
        edit, at = EDITS[int(rng.integers(len(EDITS)))], int(rng.integers(len(copy)))
        if edit == "drop":
            del copy[at]
        elif edit == "swap":
            at = min(at, len(copy) - 2)
            copy[at], copy[at + 1] = copy[at + 1], copy[at]
        else:
            copy[at] = vocabulary[int(rng.integers(len(vocabulary)))]
    return copy


__all__ = ["CORPORA", "make_corpus", "near_copy", "near_copy_texts"]
