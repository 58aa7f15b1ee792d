"""
The texts of a corpus file, for building a `DuplicateIndex` (recipes/search.py, recipes/app.py).

A corpus file is read as:
  * one text per line, for a `.txt` file whose first line has no tab (blank lines skipped);
  * a table (csv/tsv/json/jsonl/parquet) when `text_column` names its text column (`id_column`
    optionally its ids);
  * otherwise a question-pair file (any format `hfsiamese.data.load_pairs` reads): the questions
    of both columns, each distinct question once (by id where the file has ids, else by
    normalised text, as everywhere in hfsiamese), with its id where the file has ids.
`corpus_format` forces one of `lines`, `table`, `pairs`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from ..data import load_pairs
from ..data.question_ids import distinct_questions

CORPUS_FORMATS = ("auto", "lines", "table", "pairs")
_TABLE_BUILDERS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}


def read_corpus(
    corpus: str | Path, corpus_format: str = "auto", text_column: str | None = None, id_column: str | None = None
) -> tuple[list[str], list[Any] | None]:
    """The texts (and ids, where the file has them) of the corpus file."""
    path = Path(corpus)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    if corpus_format not in CORPUS_FORMATS:
        raise ValueError(f"corpus_format must be one of {CORPUS_FORMATS}, got {corpus_format!r}")
    kind = corpus_format
    if kind == "auto":
        if text_column is not None:
            kind = "table"
        elif path.suffix.lower() == ".txt" and "\t" not in _first_line(path):
            kind = "lines"
        else:
            kind = "pairs"
    if kind == "lines":
        with open(path, encoding="utf-8") as handle:
            return [line.strip() for line in handle if line.strip()], None
    if kind == "table":
        if text_column is None:
            raise ValueError("--corpus_format table needs --text_column")
        builder = _TABLE_BUILDERS.get(path.suffix.lower())
        if builder is None:
            raise ValueError(f"cannot read {path} as a table: use a {'/'.join(_TABLE_BUILDERS)} file")
        options = {"delimiter": "\t"} if path.suffix.lower() == ".tsv" else {}
        table = datasets.load_dataset(builder, data_files=str(path), split="train", **options)
        for flag, column in (("--text_column", text_column), ("--id_column", id_column)):
            if column is not None and column not in table.column_names:
                raise ValueError(f"{flag} {column!r} is not a column of {path}; columns: {table.column_names}")
        texts = list(table[text_column])
        ids = list(table[id_column]) if id_column else None
        return texts, ids
    pairs = load_pairs(str(path))
    return distinct_questions(pairs)


def _first_line(path: Path) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.readline()


__all__ = ["CORPUS_FORMATS", "read_corpus"]
