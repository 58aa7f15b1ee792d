"""
Load question pairs from the formats duplicate-question work meets into one `datasets.Dataset`.

Every source (BiMPM's headerless QQP tsv, Kaggle/GLUE Quora files, MRPC, headerless label-first
`label<TAB>text1<TAB>text2` dumps, generic csv/tsv/json/parquet, a Hub data set) ends up with the same columns: `question1`, `question2` (stripped
strings), `label` (int64, 0/1) and, where the source knows question identities, `qid1`/`qid2`
(strings). Downstream code (groups, tokenisation, the trainer) can then rely on that shape alone.

The steps have a module each: `formats` (which kind of file), `readers` (raw table, errors naming
the file), `source_columns` (which column is what), `label_values` (labels as 0/1), `text_normalization`
(optional NFKC/lowercasing) and `deduplication` (repeated pairs collapsed). This module puts them
in order, eagerly or streamed; both convert rows with the same `_PairRows`, batch by batch.

`streaming=True` gives a `datasets.IterableDataset` over the same columns for files larger than
memory: rows are read, validated and cleaned batch by batch as they are consumed (no cache is
written), so an error surfaces when its row is reached, and repeated pairs are not collapsed.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict, Unpack, overload

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hfsiamese.data.formats import PAIR_FORMATS, TEXT_FORMATS, detect_format, looks_like_hub_id
from hfsiamese.data.label_values import invalid_label_error, labels_to_int
from hfsiamese.data.question_identity import column_arrow, deduplicate_pairs
from hfsiamese.data.readers import (
    ShortRows,
    TextLayout,
    invalid_utf8_error,
    is_connection_error,
    load_hub,
    read_file,
    reader_error,
)
from hfsiamese.data.source_columns import (
    check_arrow_text_type,
    check_not_all_numbers,
    check_text_column,
    check_text_type,
    resolve_columns,
    streamed_column_names,
)
from hfsiamese.data.text_normalization import NORMALIZATIONS, check_normalization, normalize_texts
from hfsiamese.utils.hub_access import HubUnreachableError

__all__ = ["NORMALIZATIONS", "PAIR_FORMATS", "HubUnreachableError", "load_pairs"]

_BATCH_ROWS = 10_000  # rows per Arrow batch when converting (eager map and streaming)


class _PairOptions(TypedDict, total=False):
    """The options of `load_pairs` other than `streaming`, for its overloads (which differ by `streaming` only)."""

    format: str | None
    question1_column: str | None
    question2_column: str | None
    label_column: str | None
    id1_column: str | None
    id2_column: str | None
    split: str
    cache_dir: str | None
    deduplicate: bool
    normalization: str | None


@overload
def load_pairs(
    path_or_name: str, *, streaming: Literal[False] = ..., **options: Unpack[_PairOptions]
) -> datasets.Dataset: ...
@overload
def load_pairs(
    path_or_name: str, *, streaming: Literal[True], **options: Unpack[_PairOptions]
) -> datasets.IterableDataset: ...
@overload
def load_pairs(
    path_or_name: str, *, streaming: bool, **options: Unpack[_PairOptions]
) -> datasets.Dataset | datasets.IterableDataset: ...
def load_pairs(
    path_or_name: str,
    *,
    format: str | None = None,
    question1_column: str | None = None,
    question2_column: str | None = None,
    label_column: str | None = None,
    id1_column: str | None = None,
    id2_column: str | None = None,
    split: str = "train",
    cache_dir: str | None = None,
    deduplicate: bool = True,
    normalization: str | None = None,
    streaming: bool = False,
) -> datasets.Dataset | datasets.IterableDataset:
    """
    Read question pairs from a local file or a Hub data set.

    `format=None` detects the format from the extension and (for csv/tsv/txt) the first line; see
    `PAIR_FORMATS` for explicit values. Column flags override the known column sets. Returns
    columns `question1`, `question2` (stripped strings), `label` (int64 0/1) and `qid1`, `qid2`
    (strings) when the source has question ids. Rows with an empty question are dropped with a
    warning; anything else that is wrong is a `ValueError` naming the file and the problem (a
    file that is not UTF-8: the byte offset and line of the first bad byte; re-encode it).

    `normalization` rewrites the question texts: None (as read, only stripped), "lower",
    "nfkc" (Unicode NFKC) or "nfkc_lower". Word tokenizers from `train_word_tokenizer` already
    apply NFKC + lowercasing themselves; this is for other encoders or for cleaned text.

    `deduplicate` collapses rows that repeat a pair, in either order ((q1, q2) and its mirror
    (q2, q1)), to the first one, with a warning giving the count (and the count of copies whose
    label disagreed with the kept first copy's; the first label is kept). Identity of a question
    is its id when the source has ids, else its normalised text (`hfsiamese.data.question_ids`).

    `streaming=True` returns a `datasets.IterableDataset` with the same columns, for files larger
    than memory (csv/tsv/json/parquet and the Hub, via `load_dataset(..., streaming=True)`).
    Labels are validated and questions cleaned as rows are read, so an invalid label or a
    malformed row raises when iteration reaches it. Dropped empty questions are counted on the
    fly: a warning comes at the first one, naming its row, and another with the total at the end
    of each full pass (the total cannot be known up front). `deduplicate` is ignored when
    streaming: collapsing repeats needs every pair seen so far in memory; load eagerly or
    de-duplicate the file beforehand.
    """
    source = str(path_or_name)
    if format is not None and format not in PAIR_FORMATS:
        raise ValueError(f"unknown pair format {format!r} for {source}; choose one of {PAIR_FORMATS}")
    check_normalization(normalization)

    layout: TextLayout | None = None
    if format == "hub" or (format is None and not os.path.exists(source) and looks_like_hub_id(source)):
        raw = load_hub(source, split=split, cache_dir=cache_dir, streaming=streaming)
        kind = "hub"
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"pair file not found: {source}")
        if not path.is_file():
            raise ValueError(f"{source} is a directory, not a pair file; pass one file")
        kind = format or detect_format(path)
        raw, layout = read_file(path, kind, cache_dir=cache_dir, streaming=streaming)

    found = streamed_column_names(raw, source) if streaming else raw.column_names
    columns = resolve_columns(
        found, source, kind,
        question1_column, question2_column, label_column, id1_column, id2_column,
    )  # fmt: skip
    rows = _PairRows(columns, source, normalization)
    if streaming:
        return _stream(raw, rows, kind=kind, layout=layout)
    try:
        pairs = _convert_eagerly(raw, rows, layout=layout)
    except pa.ArrowInvalid as err:
        raise invalid_utf8_error(err, source, kind) from err
    if deduplicate:
        pairs, _ = deduplicate_pairs(pairs, source=source, stacklevel=2)
    return pairs


@dataclass(frozen=True)
class _PairRows:
    """
    How rows of a source become pairs, batch by batch: the one per-row path of eager and streamed
    loading. Source columns are picked and renamed (`mapping`: output name -> source name), labels
    become 0/1, questions are stripped (and rewritten with `normalization`), ids become strings.
    """

    mapping: dict[str, str]
    source: str
    normalization: str | None

    @property
    def features(self) -> datasets.Features:
        return datasets.Features(
            {name: datasets.Value("int64" if name == "label" else "string") for name in self.mapping}
        )

    def convert(self, batch: pa.Table) -> tuple[pa.Table, pa.Array, int | None]:
        """
        One batch of source rows as output columns, before dropping: (table, keep mask: both
        questions non-empty, position of the first invalid label or None).
        """
        batch = batch.select(list(self.mapping.values())).rename_columns(list(self.mapping))
        out = {}
        first_invalid = None
        for name in batch.column_names:
            column = batch.column(name)
            if name == "label":
                out[name], first_invalid = labels_to_int(column, self.source, self.mapping["label"])
            elif name in {"question1", "question2"}:
                out[name] = pc.utf8_trim_whitespace(normalize_texts(column.cast(pa.string()), self.normalization))
            else:  # qid1/qid2 (ints in json/parquet files) become strings
                out[name] = pc.utf8_trim_whitespace(column.cast(pa.string()))
        table = pa.table(out)
        keep = pc.and_(
            pc.greater(pc.utf8_length(table.column("question1")), 0),
            pc.greater(pc.utf8_length(table.column("question2")), 0),
        )
        return table, pc.fill_null(keep, False), first_invalid

    def label_error(self, batch: pa.Table, position: int, where: str) -> ValueError:
        """The error for the invalid label at `position` of a source batch, found in `where`."""
        label_source = self.mapping["label"]
        return invalid_label_error(batch.column(label_source), position, where, self.source, label_source)


# --------------------------------------------------------------------------------------------
# Eager
# --------------------------------------------------------------------------------------------
def _convert_eagerly(raw: datasets.Dataset, rows: _PairRows, *, layout: TextLayout | None) -> datasets.Dataset:
    """The whole source through `rows`, in one cached `map`; checks that need every row run first or after."""
    source = rows.source
    if len(raw) == 0:
        raise ValueError(f"{source} has no data rows")
    for role in ("question1", "question2"):
        check_text_column(raw, rows.mapping[role], source)
    short_rows = ShortRows(layout, source)
    if short_rows.first_in(raw.data.table, 0) is not None:
        raise short_rows.error()

    ds = raw.select_columns(list(rows.mapping.values()))
    # One pass in Arrow batches (row numbers via indices, for errors). Dropping rows inside `map`
    # (which may return fewer rows) rather than with `filter` keeps the result a plain Arrow
    # table: `filter` adds an indices mapping that makes every later column read a row-by-row
    # gather. Errors raised inside map propagate unchanged.
    total = len(ds)
    ds = ds.with_format("arrow").map(
        _convert_batch,
        batched=True,
        batch_size=_BATCH_ROWS,
        with_indices=True,
        remove_columns=ds.column_names,
        features=rows.features,
        fn_kwargs={"rows": rows},
        desc="Reading pairs",
    )
    dropped = total - len(ds)
    if len(ds) == 0:
        raise ValueError(f"{source}: no pairs left: all {total} row(s) have an empty, null or whitespace-only question")
    if dropped:
        warnings.warn(
            f"dropped {dropped} of {total} row(s) from {source} with an empty, null or whitespace-only question "
            f"({_empty_rows(raw, rows, dropped)})",
            UserWarning,
            stacklevel=3,
        )
    for name in ("qid1", "qid2"):
        if name in rows.mapping:  # an empty id would merge unrelated questions in duplicate groups
            column = column_arrow(ds, name)
            empty = column.null_count + (pc.sum(pc.equal(pc.utf8_length(column), 0)).as_py() or 0)
            if empty:
                raise ValueError(
                    f"{source}: id column {rows.mapping[name]!r} has {empty} empty value(s); fix them or leave out the ids"
                )
    return ds.with_format(None)


def _empty_rows(raw: datasets.Dataset, rows: _PairRows, dropped: int, shown: int = 5) -> str:
    """Where the `dropped` rows with an empty question are, for the warning that drops them: the first few data rows,
    found batch by batch (the whole columns' trimmed copies would be gigabytes on a file of millions of pairs)."""
    positions: list[int] = []
    start = 0
    for batch in raw.data.table.select([rows.mapping["question1"], rows.mapping["question2"]]).to_batches():
        empty = None
        for column in batch.columns:
            blank = pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(column.cast(pa.string()))), 0), True)
            empty = blank if empty is None else pc.or_(empty, blank)
        positions.extend(
            (start + np.flatnonzero(empty.to_numpy(zero_copy_only=False)))[: shown - len(positions)].tolist()
        )
        start += batch.num_rows
        if len(positions) == shown:
            break
    named = ", ".join(str(position + 1) for position in positions)
    more = f" and {dropped - len(positions)} more" if dropped > len(positions) else ""
    return f"data row{'s' if dropped > 1 else ''} {named}{more}, header not counted"


def _convert_batch(batch: pa.Table, indices: list[int], *, rows: _PairRows) -> pa.Table:
    table, keep, first_invalid = rows.convert(batch)
    if first_invalid is not None:
        raise rows.label_error(batch, first_invalid, f"data row {indices[first_invalid] + 1}")
    return table.filter(keep)


# --------------------------------------------------------------------------------------------
# Streaming
# --------------------------------------------------------------------------------------------
def _stream(
    raw: datasets.IterableDataset, rows: _PairRows, *, kind: str, layout: TextLayout | None
) -> datasets.IterableDataset:
    """
    The source through `rows` as it is read: a generator over the source's Arrow batches.

    A generator (not `IterableDataset.map`) because it alone sees reader errors (it re-raises them
    naming the file) and the end of a pass (for the total of dropped rows). Shards are kept:
    each shard of the source is one shard of the result (workers of a DataLoader split them).
    """
    if raw.features is not None:
        for role in ("question1", "question2"):
            if rows.mapping[role] in raw.features:
                check_text_type(raw.features[rows.mapping[role]], rows.mapping[role], rows.source)
    n_shards = max(raw.n_shards, 1)
    return datasets.IterableDataset.from_generator(
        _stream_rows,
        features=rows.features,
        gen_kwargs={
            "shards": list(range(n_shards)),
            "n_shards": n_shards,
            "raw": raw,
            "rows": rows,
            "kind": kind,
            "layout": layout,
        },
    )


def _stream_rows(
    shards: list[int],
    *,
    n_shards: int,
    raw: datasets.IterableDataset,
    rows: _PairRows,
    kind: str,
    layout: TextLayout | None,
) -> Iterator[dict[str, Any]]:
    for shard in shards:
        part = raw.shard(num_shards=n_shards, index=shard) if n_shards > 1 else raw
        try:
            yield from _stream_shard(part, shard if n_shards > 1 else None, rows, kind, layout)
        except pa.ArrowInvalid as err:
            raise invalid_utf8_error(err, rows.source, kind) from err


def _stream_shard(
    part: datasets.IterableDataset,
    shard: int | None,
    rows: _PairRows,
    kind: str,
    layout: TextLayout | None,
) -> Iterator[dict[str, Any]]:
    source = rows.source

    def where(row: int) -> str:  # row: 0-based position in this shard
        return f"data row {row + 1}" if shard is None else f"row {row + 1} of shard {shard}"

    batches = part.with_format("arrow").iter(batch_size=_BATCH_ROWS)
    seen = dropped = 0
    short_rows = ShortRows(layout, source)
    while True:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                batch = next(batches)
        except StopIteration:
            break
        except Exception as err:  # reader failures name the file, as when loading eagerly
            if layout is None and is_connection_error(err):
                raise HubUnreachableError(f"streaming {source!r}: the Hugging Face Hub became unreachable") from err
            raise reader_error(Path(source), "csv" if kind in TEXT_FORMATS else kind, err) from err

        short = short_rows.first_in(batch, seen)
        if short is not None:
            batch = batch.slice(0, short)
        for role in ("question1", "question2"):
            column = batch.column(rows.mapping[role])
            check_arrow_text_type(column.type, rows.mapping[role], source)
            if seen == 0:  # the eager check covers the whole column; a stream can only look at its start
                check_not_all_numbers(column, rows.mapping[role], source)
        table, keep, first_invalid = rows.convert(batch)
        if first_invalid is not None:  # yield the valid rows before it, then fail at it
            table, keep = table.slice(0, first_invalid), keep.slice(0, first_invalid)
        kept = table.filter(keep)
        if len(kept) < len(table):
            if dropped == 0:
                first = seen + pc.index(keep, False).as_py()
                warnings.warn(
                    f"dropping rows of {source} with an empty, null or whitespace-only question (the first: "
                    f"{where(first)}); streaming cannot count them up front: the total comes when the stream ends",
                    UserWarning,
                    stacklevel=2,
                )
            dropped += len(table) - len(kept)
        yield from kept.to_pylist()
        if first_invalid is not None:
            raise rows.label_error(batch, first_invalid, where(seen + first_invalid))
        if short is not None:
            raise short_rows.error()
        seen += len(table)

    if shard is None and seen == 0:  # (one empty shard of many is fine)
        raise ValueError(f"{source} has no data rows")
    if shard is None and dropped == seen:
        raise ValueError(f"{source}: no pairs left: all {seen} row(s) have an empty, null or whitespace-only question")
    if dropped:
        warnings.warn(
            f"dropped {dropped} of {seen} row(s) from {source}{'' if shard is None else f' (shard {shard})'} with an "
            f"empty, null or whitespace-only question (counted while streaming, one full pass)",
            UserWarning,
            stacklevel=2,
        )
