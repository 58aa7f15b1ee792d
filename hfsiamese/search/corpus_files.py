"""
The texts of a corpus file, for building a `DuplicateIndex` (hfsiamese search, hfsiamese app).

A corpus file is read as:
  * one text per line, for a `.txt` file whose first line has no tab (blank lines skipped);
  * a table (csv/tsv/json/jsonl/parquet) when `text_column` names its text column (`id_column`
    optionally its ids);
  * otherwise a question-pair file (any format `hfsiamese.data.load_pairs` reads): the questions
    of both columns, each distinct question once (by id where the file has ids, else by
    normalised text, as everywhere in hfsiamese), with its id where the file has ids.
`corpus_format` forces one of `lines`, `table`, `pairs`. A table's `metadata_columns` become each text's
metadata (for a database backend's search filters).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import datasets

from hfsiamese.data import load_pairs
from hfsiamese.data.question_identity import distinct_questions

CORPUS_FORMATS = ("auto", "lines", "table", "pairs")
_TABLE_BUILDERS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}


class CorpusFile(NamedTuple):
    texts: list[str]
    ids: list[Any] | None  # None: the row numbers
    metadata: list[dict[str, Any]] | None  # one dict per text, from the table's metadata columns


def read_corpus(
    corpus: str | Path,
    corpus_format: str = "auto",
    text_column: str | None = None,
    id_column: str | None = None,
    metadata_columns: Sequence[str] | None = None,
) -> CorpusFile:
    """The texts (and ids, where the file has them, and metadata where asked for) of the corpus file."""
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
    if metadata_columns and kind != "table":
        raise ValueError("--metadata_column needs a table corpus (csv/tsv/json/jsonl/parquet with --text_column)")
    if kind == "lines":
        with open(path, encoding="utf-8") as handle:
            return CorpusFile([line.strip() for line in handle if line.strip()], None, None)
    if kind == "table":
        if text_column is None:
            raise ValueError("--corpus_format table needs --text_column")
        builder = _TABLE_BUILDERS.get(path.suffix.lower())
        if builder is None:
            raise ValueError(f"cannot read {path} as a table: use a {'/'.join(_TABLE_BUILDERS)} file")
        options = {"delimiter": "\t"} if path.suffix.lower() == ".tsv" else {}
        table = datasets.load_dataset(builder, data_files=str(path), split="train", **options)
        named = [("--text_column", text_column), ("--id_column", id_column)]
        named += [("--metadata_column", column) for column in metadata_columns or ()]
        for flag, column in named:
            if column is not None and column not in table.column_names:
                raise ValueError(f"{flag} {column!r} is not a column of {path}; columns: {table.column_names}")
        texts = list(table[text_column])
        ids = list(table[id_column]) if id_column else None
        metadata = table.select_columns(list(metadata_columns)).to_list() if metadata_columns else None
        return CorpusFile(texts, ids, metadata)
    pairs = load_pairs(str(path))
    return CorpusFile(*distinct_questions(pairs), None)


def _first_line(path: Path) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.readline()


__all__ = ["CORPUS_FORMATS", "CorpusFile", "read_corpus"]
