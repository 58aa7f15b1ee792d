"""
The keyword side of a hybrid `DuplicateIndex` search: a BM25 index (the `bm25s` package, in memory) over the texts
of an in-process store, row `i` of the BM25 index being row `i` of the store. Duplicate questions often share rare
words (product names, error codes, versions) that a small embedding blurs; BM25 weighs exactly those words most.

`bm25s` cannot append documents (every document's score depends on the whole corpus's word counts), so the index is
rebuilt from the store's texts when they changed (`LexicalSide`): lazily, at the next hybrid search after an `add`
or `delete`, a few seconds per 100k questions. It is saved with the index folder (`lexical_bm25/`, numpy arrays and
JSON, nothing pickled) and taken back when it matches the saved rows; a missing or mismatched one is rebuilt.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from hfsiamese.utils.extras import install_hint

LEXICAL_DIR_NAME = "lexical_bm25"  # in a saved index folder
# The tokenisation, written down so that a saved index is searched with the one that built it.
STOPWORDS = "en"
_SETTINGS_NAME = "hfsiamese_lexical.json"


def import_bm25s() -> Any:
    """The `bm25s` module, or an ImportError naming the extra that installs it."""
    try:
        import bm25s
    except ImportError as err:
        hint = install_hint("lexical")
        raise ImportError(f"hybrid= (keyword + dense search) needs the bm25s package: {hint}") from err
    return bm25s


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-cased words of two or more letters or digits (scikit-learn's pattern), English stopwords dropped."""
    bm25s = import_bm25s()
    return bm25s.tokenize(texts, stopwords=STOPWORDS, return_ids=False, show_progress=False)


class Bm25Index:
    """BM25 (Lucene's variant, bm25s defaults k1=1.5, b=0.75) over a list of texts, searched by their row numbers."""

    def __init__(self, retriever: Any | None, num_texts: int) -> None:
        self.retriever, self.num_texts = retriever, num_texts  # no retriever: no text has a word to match

    @classmethod
    def build(cls, texts: list[str]) -> Bm25Index:
        bm25s = import_bm25s()
        tokens = tokenize(texts)
        if not any(tokens):  # bm25s cannot index a corpus without a single word
            return cls(None, len(texts))
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        return cls(retriever, len(texts))

    def topk(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """`(scores, rows)`, both `(len(queries), min(k, num_texts))`, best first; rows sharing no word with the query
        (score 0) are -1 with score 0."""
        k = min(k, self.num_texts)
        if k == 0 or not queries or self.retriever is None:
            return np.zeros((len(queries), k), dtype=np.float32), np.full((len(queries), k), -1, dtype=np.int64)
        # numpy, in this thread: "auto" would take jax where installed (which claims accelerators)
        rows, scores = self.retriever.retrieve(
            tokenize(queries), k=k, show_progress=False, n_threads=0, backend_selection="numpy"
        )
        rows, scores = np.asarray(rows, dtype=np.int64), np.asarray(scores, dtype=np.float32)
        rows[scores <= 0] = -1
        return np.where(rows >= 0, scores, 0).astype(np.float32), rows

    def save(self, directory: Path) -> None:
        """Write the BM25 arrays into `directory/lexical_bm25` (replacing what is there), written beside it first."""
        target = directory / LEXICAL_DIR_NAME
        staging = directory / f".{LEXICAL_DIR_NAME}-saving"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        if self.retriever is not None:
            self.retriever.save(str(staging), show_progress=False)
        settings = {"num_texts": self.num_texts, "stopwords": STOPWORDS}
        (staging / _SETTINGS_NAME).write_text(json.dumps(settings) + "\n", encoding="utf-8")
        remove_saved(directory)
        os.replace(staging, target)

    @classmethod
    def load(cls, directory: Path, num_texts: int) -> Bm25Index | None:
        """The BM25 index saved in `directory/lexical_bm25`, or None where there is none, or one of another number of
        texts or tokenisation (then rebuilt from the texts)."""
        folder = directory / LEXICAL_DIR_NAME
        try:
            settings = json.loads((folder / _SETTINGS_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if settings.get("num_texts") != num_texts or settings.get("stopwords") != STOPWORDS:
            return None
        if not (folder / "params.index.json").is_file():  # saved without a retriever: no text had a word
            return cls(None, num_texts)
        bm25s = import_bm25s()
        try:
            retriever = bm25s.BM25.load(str(folder), allow_pickle=False, show_progress=False)
        except (OSError, ValueError, KeyError):
            return None
        if retriever.scores.get("num_docs") != num_texts:
            return None
        return cls(retriever, num_texts)


def remove_saved(directory: Path) -> None:
    """Remove a saved BM25 index from an index folder (saving an index without one over it)."""
    shutil.rmtree(directory / LEXICAL_DIR_NAME, ignore_errors=True)


__all__ = ["LEXICAL_DIR_NAME", "STOPWORDS", "Bm25Index", "import_bm25s", "remove_saved", "tokenize"]
