"""
Load question pairs from the formats duplicate-question work meets into one `datasets.Dataset`.

Every source (BiMPM's headerless QQP tsv, Kaggle/GLUE Quora files, MRPC, generic csv/tsv/json/
parquet, a Hub data set) ends up with the same columns: `question1`, `question2` (stripped
strings), `label` (int64, 0/1) and, where the source knows question identities, `qid1`/`qid2`
(strings). Downstream code (groups, tokenisation, the trainer) can then rely on that shape alone.

The reading itself is `datasets.load_dataset("csv"/"json"/"parquet")`, so data stays in Arrow and
is cached; what this module adds is format sniffing, column resolution, label normalisation,
cleaning (repeated pairs collapsed, optional NFKC/lowercasing; see `cleaning.py`) and error
messages that name the file and the problem instead of a pandas/Arrow traceback.

`streaming=True` gives a `datasets.IterableDataset` over the same columns for files larger than
memory: rows are read, validated and cleaned batch by batch as they are consumed (no cache is
written), so an error surfaces when its row is reached, and repeated pairs are not collapsed.
"""

from __future__ import annotations

import codecs
import csv
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from ..hub_access import HubUnreachableError
from ..hub_access import hub_offline as _hub_offline
from .arrow_columns import column_arrow
from .cleaning import NORMALIZATIONS, check_normalization, deduplicate_pairs, normalize_texts

__all__ = ["NORMALIZATIONS", "PAIR_FORMATS", "HubUnreachableError", "load_pairs"]

PAIR_FORMATS: tuple[str, ...] = ("bimpm", "quora", "mrpc", "csv", "tsv", "json", "parquet", "hub")

# Column sets tried, in order, when the caller names no columns: (question1, question2, label).
KNOWN_COLUMN_SETS: tuple[tuple[str, str, str], ...] = (
    ("question1", "question2", "is_duplicate"),  # Quora / Kaggle / GLUE-QQP files
    ("question1", "question2", "label"),  # GLUE-QQP on the Hub
    ("sentence1", "sentence2", "label"),  # GLUE MRPC/PAWS style
    ("text1", "text2", "label"),
    ("#1 String", "#2 String", "Quality"),  # MRPC original files
)
# Question-id column pairs picked up automatically when present.
KNOWN_ID_COLUMNS: tuple[tuple[str, str], ...] = (("qid1", "qid2"), ("#1 ID", "#2 ID"))

BIMPM_COLUMNS = ["label", "question1", "question2", "pair_id"]
MRPC_HEADER = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]

_TEXT_SUFFIXES = {".csv", ".tsv", ".txt"}
_SUFFIX_FORMATS = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}
_DATA_SUFFIXES = _TEXT_SUFFIXES | set(_SUFFIX_FORMATS)

_POSITIVE_LABELS = ("1", "1.0", "true", "yes", "duplicate")
_NEGATIVE_LABELS = ("0", "0.0", "false", "no", "not_duplicate")

# `owner/name` or a bare `name`, optionally `:config` (e.g. `nyu-mll/glue:qqp`).
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?(:[\w.-]+)?$")
_NUMBER = r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$"
_SNIFF_BYTES = 64 * 1024
_MAX_FIRST_LINE_BYTES = 16 * 1024 * 1024  # a header (or a BiMPM row) longer than this is not sniffed whole
_BATCH_ROWS = 10_000  # rows per Arrow batch when normalising (eager map and streaming)
_TEXT_KINDS = {"bimpm", "mrpc", "quora", "csv", "tsv"}


@dataclass(frozen=True)
class _TextLayout:
    """How a csv/tsv file was read, for the checks that look at the file itself (short rows)."""

    path: Path
    delimiter: str
    quoted: bool  # csv quoting (","-files); tsv files are read with quoting off
    header: bool
    names: tuple[str, ...]


@overload
def load_pairs(
    path_or_name: str,
    *,
    format: str | None = ...,
    question1_column: str | None = ...,
    question2_column: str | None = ...,
    label_column: str | None = ...,
    id1_column: str | None = ...,
    id2_column: str | None = ...,
    split: str = ...,
    cache_dir: str | None = ...,
    deduplicate: bool = ...,
    normalization: str | None = ...,
    streaming: Literal[False] = ...,
) -> datasets.Dataset: ...
@overload
def load_pairs(
    path_or_name: str,
    *,
    format: str | None = ...,
    question1_column: str | None = ...,
    question2_column: str | None = ...,
    label_column: str | None = ...,
    id1_column: str | None = ...,
    id2_column: str | None = ...,
    split: str = ...,
    cache_dir: str | None = ...,
    deduplicate: bool = ...,
    normalization: str | None = ...,
    streaming: Literal[True],
) -> datasets.IterableDataset: ...
@overload
def load_pairs(
    path_or_name: str,
    *,
    format: str | None = ...,
    question1_column: str | None = ...,
    question2_column: str | None = ...,
    label_column: str | None = ...,
    id1_column: str | None = ...,
    id2_column: str | None = ...,
    split: str = ...,
    cache_dir: str | None = ...,
    deduplicate: bool = ...,
    normalization: str | None = ...,
    streaming: bool,
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
    is its id when the source has ids, else its normalised text (as `assign_duplicate_groups`).

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

    layout: _TextLayout | None = None
    if format == "hub" or (format is None and not os.path.exists(source) and _looks_like_hub_id(source)):
        raw = _load_hub(source, split=split, cache_dir=cache_dir, streaming=streaming)
        kind = "hub"
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"pair file not found: {source}")
        if not path.is_file():
            raise ValueError(f"{source} is a directory, not a pair file; pass one file")
        kind = format or _detect_format(path)
        raw, layout = _read_file(path, kind, cache_dir=cache_dir, streaming=streaming)

    found = _column_names(raw, source) if streaming else raw.column_names
    columns = _resolve_columns(
        found, source, kind,
        question1_column, question2_column, label_column, id1_column, id2_column,
    )  # fmt: skip
    if streaming:
        return _stream(raw, columns, source, kind=kind, normalization=normalization, layout=layout)
    try:
        pairs = _normalise(raw, columns, source, normalization=normalization, layout=layout)
    except pa.ArrowInvalid as err:
        raise _invalid_utf8_error(err, source, kind) from err
    if deduplicate:
        pairs, _ = deduplicate_pairs(pairs, source=source, stacklevel=2)
    return pairs


# --------------------------------------------------------------------------------------------
# Format detection
# --------------------------------------------------------------------------------------------
def _looks_like_hub_id(name: str) -> bool:
    """A Hub id has at most one `/`, no path prefix and no data-file extension."""
    return bool(_HUB_ID.match(name)) and Path(name.split(":")[0]).suffix.lower() not in _DATA_SUFFIXES


def _detect_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in _SUFFIX_FORMATS:
        return _SUFFIX_FORMATS[suffix]
    if suffix not in _TEXT_SUFFIXES:
        raise ValueError(
            f"cannot detect the pair format of {path} from its extension {suffix or '(none)'!r}; "
            f"pass format= one of {PAIR_FORMATS}"
        )
    line = _first_line(path)
    fields = line.split("\t")
    # BiMPM: no header, `label<TAB>q1<TAB>q2<TAB>pair_id`; a header never has a 0/1 and an int there.
    if len(fields) == 4 and fields[0].strip() in {"0", "1"} and fields[3].strip().isdigit():
        return "bimpm"
    if [f.strip() for f in fields] == MRPC_HEADER:
        return "mrpc"
    header = set(_parse_header(line, _delimiter_for(path, line)))
    if {"question1", "question2", "is_duplicate"} <= header:
        return "quora"
    return "tsv" if _delimiter_for(path, line) == "\t" else "csv"


def _first_line(path: Path) -> str:
    """The first line of a text file, BOM stripped; ValueError if the file is not UTF-8 text."""
    with open(path, "rb") as handle:
        head = handle.read(_SNIFF_BYTES)
        if b"\x00" in head:
            raise ValueError(f"{path} is not a text file (it holds NUL bytes); expected a csv/tsv pair file")
        # A first line longer than the sniffed block (a BiMPM row with a very long question) is
        # read on to its end, so that sniffing sees all of its fields.
        while b"\n" not in head and len(head) < _MAX_FIRST_LINE_BYTES:
            more = handle.read(_SNIFF_BYTES)
            if not more:
                break
            head += more
    if b"\n" in head:
        head = head[: head.index(b"\n") + 1]
    # The block may end inside a multi-byte character: drop up to 3 trailing bytes.
    for cut in range(4):
        try:
            text = head[: len(head) - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    else:
        raise ValueError(_not_utf8_message(path))
    return text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""


def _has_rows_after_first_line(path: Path) -> bool:
    """Whether anything but blank lines follows the first line (the header)."""
    with open(path, "rb") as handle:
        handle.readline()
        while chunk := handle.read(_SNIFF_BYTES):
            if chunk.strip():
                return True
    return False


def _utf8_error(path: Path) -> tuple[int, int, bytes] | None:
    """(byte offset, line number, bad bytes) of the first invalid UTF-8 sequence, or None."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = lines = 0
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(1 << 20)
            pending = decoder.getstate()[0]
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as err:
                data = pending + chunk
                where = offset - len(pending) + err.start
                return where, lines + data[: err.start].count(b"\n") + 1, data[err.start : err.end]
            if not chunk:
                return None
            offset += len(chunk)
            lines += chunk.count(b"\n")


def _not_utf8_message(path: Path) -> str:
    found = _utf8_error(path)
    where = "" if found is None else f": invalid byte(s) {found[2]!r} at byte offset {found[0]} (line {found[1]})"
    return f"{path} is not UTF-8 text{where}; re-encode the file as UTF-8 (e.g. iconv -f <its encoding> -t utf-8)"


def _delimiter_for(path: Path, first_line: str) -> str:
    if path.suffix.lower() == ".tsv":
        return "\t"
    if path.suffix.lower() == ".csv":
        return "," if "," in first_line or "\t" not in first_line else "\t"
    return "\t" if "\t" in first_line else ","


def _parse_header(line: str, delimiter: str) -> list[str]:
    if delimiter == "\t":  # tsv files are read unquoted (GLUE convention), quotes in names stripped
        names = line.split("\t")
    else:
        names = next(csv.reader([line], delimiter=delimiter), [])
    return [name.strip().strip('"').strip() for name in names]


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------
def _read_file(
    path: Path, kind: str, *, cache_dir: str | None, streaming: bool
) -> tuple[datasets.Dataset | datasets.IterableDataset, _TextLayout | None]:
    if kind in {"json", "parquet"}:
        if kind == "json":
            # Reject binary, non-UTF-8 and empty files with a clear message before the json reader.
            if not _first_line(path).strip() and not _has_rows_after_first_line(path):
                raise ValueError(f"{path} is empty; expected JSON (lines) of question pairs")
        elif _parquet_rows(path) == 0:  # (datasets fails on it with "BatchSize must be greater than 0")
            raise ValueError(f"{path} has no data rows")
        raw = _load_local(path, kind, dict(data_files=str(path)), cache_dir, streaming=streaming)
        return raw, None

    line = _first_line(path)
    if not line.strip():
        raise ValueError(f"{path} is empty or starts with a blank line; expected a header or a data row")
    if kind == "bimpm":
        delimiter, names, header = "\t", BIMPM_COLUMNS, None
    elif kind == "mrpc":
        delimiter, header = "\t", 0
        names = _parse_header(line, delimiter)
    else:
        delimiter = {"tsv": "\t", "csv": ","}.get(kind) or _delimiter_for(path, line)
        header = 0
        names = _parse_header(line, delimiter)
    if header == 0:
        names = _unique_names(names, path)
        if not _has_rows_after_first_line(path):
            raise ValueError(f"{path} has a header ({line[:200]!r}) but no data rows")
    kwargs: dict[str, Any] = dict(
        data_files=str(path),
        delimiter=delimiter,
        column_names=names,  # with header=0 this replaces the file's header (BOM, quotes already stripped)
        header=header,
        index_col=False,  # extra fields in a row are an error, never silently an index column
        # Every column read as text: labels/ids are normalised by us, and pandas must not turn
        # a question such as "NA" or "null" into a missing value.
        features=datasets.Features({name: datasets.Value("string") for name in names}),
        keep_default_na=False,
        na_filter=False,
        encoding="utf-8-sig",
    )
    if delimiter == "\t":
        kwargs["quoting"] = csv.QUOTE_NONE  # tsv texts hold bare quote characters (BiMPM, GLUE, MRPC)
    layout = _TextLayout(path, delimiter, quoted=delimiter != "\t", header=header == 0, names=tuple(names))
    return _load_local(path, "csv", kwargs, cache_dir, streaming=streaming), layout


def _parquet_rows(path: Path) -> int | None:
    """Row count from the parquet footer; None if the file is not parquet (the reader then says why)."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows
    except (pa.ArrowException, OSError):
        return None


def _unique_names(names: list[str], path: Path) -> list[str]:
    out: list[str] = []
    for i, name in enumerate(names):
        name = name or f"column{i + 1}"
        if name in out:
            raise ValueError(f"{path}: duplicate column name {name!r} in header {names}")
        out.append(name)
    return out


def _load_local(
    path: Path, builder: str, kwargs: dict[str, Any], cache_dir: str | None, *, streaming: bool = False
) -> datasets.Dataset | datasets.IterableDataset:
    try:
        with warnings.catch_warnings():
            # pandas only warns when the first data row has more fields than the header and
            # then drops them; a later row with extra fields is an error. Make both errors.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return datasets.load_dataset(builder, split="train", cache_dir=cache_dir, streaming=streaming, **kwargs)
    except Exception as err:  # noqa: BLE001 - any reader failure becomes one clear message
        raise _reader_error(path, builder, err) from err


def _reader_error(path: Path, builder: str, err: BaseException) -> ValueError:
    """One message for any failure of the csv/json/parquet readers, naming the file."""
    root = _innermost(err)
    if isinstance(root, UnicodeDecodeError):
        return ValueError(_not_utf8_message(path))
    message = f"cannot parse {path} as {builder}: {type(root).__name__}: {root}"
    if "EOF inside string" in str(root):
        message += " (a quoted field is never closed: is the file truncated, or is a quote unbalanced?)"
    return ValueError(message)


def _invalid_utf8_error(err: pa.ArrowInvalid, source: str, kind: str) -> Exception:
    """
    The json reader keeps invalid UTF-8 inside strings; Arrow's string kernels then fail on it
    ("Invalid UTF8 sequence"). For a local file that becomes the usual message with the byte
    offset; any other Arrow error is returned unchanged.
    """
    if kind == "hub" or "utf8" not in str(err).lower() or not Path(source).is_file():
        return err
    return ValueError(_not_utf8_message(Path(source)))


def _innermost(err: BaseException) -> BaseException:
    """The innermost cause: `datasets` wraps reader errors in DatasetGenerationError."""
    while err.__cause__ is not None or (err.__context__ is not None and not err.__suppress_context__):
        err = err.__cause__ or err.__context__  # type: ignore[assignment]
    return err


def _root_message(err: BaseException) -> str:
    root = _innermost(err)
    return f"{type(root).__name__}: {root}"


def _first_short_row(layout: _TextLayout) -> tuple[int, int] | None:
    """
    (data row, fields) of the first row with fewer fields than the header, or None.

    pandas' C reader pads a short row with empty strings (even with `na_filter=False` there is no
    way to tell them from empty fields), so a row cut short (a truncated last line) would pass
    as a row with empty trailing values. Arrow's csv reader counts the fields of every row; it
    runs only when the file's last column has an empty value, so well-formed files pay nothing.
    """
    found: list[tuple[int, int]] = []

    def on_invalid(row: Any) -> str:
        if row.actual_columns < row.expected_columns and not found:
            found.append((row.number - int(layout.header), row.actual_columns))
        return "error"

    read = pa_csv.ReadOptions(
        column_names=[f"c{i}" for i in range(len(layout.names))],
        skip_rows=int(layout.header),
        use_threads=False,  # row numbers are only known single-threaded
        block_size=1 << 22,
    )
    parse = pa_csv.ParseOptions(
        delimiter=layout.delimiter,
        quote_char='"' if layout.quoted else False,
        newlines_in_values=layout.quoted,
        invalid_row_handler=on_invalid,
    )
    convert = pa_csv.ConvertOptions(column_types={f"c{i}": pa.string() for i in range(len(layout.names))})
    try:
        for _ in pa_csv.open_csv(layout.path, read_options=read, parse_options=parse, convert_options=convert):
            pass
    except (pa.ArrowException, OSError, ValueError):
        pass  # only the field count matters here; pandas already judged everything else
    return found[0] if found else None


class _ShortRows:
    """
    Finds the first row with too few fields, looking at the file only once and only when a table
    read from it has an empty value in its last column (a short row always has one).
    """

    def __init__(self, layout: _TextLayout | None, source: str) -> None:
        self.layout, self.source = layout, source
        self.checked = False
        self.short: tuple[int, int] | None = None  # (1-based data row, fields)

    def first_in(self, table: pa.Table, start: int) -> int | None:
        """Position in `table` (whose first row is data row `start + 1`) of the first short row, or None."""
        if self.layout is None:
            return None
        if not self.checked:
            last = table.column(self.layout.names[-1])
            if not (pc.sum(pc.equal(pc.utf8_length(last), 0)).as_py() or 0):
                return None
            self.short, self.checked = _first_short_row(self.layout), True
        if self.short is not None and start < self.short[0] <= start + len(table):
            return self.short[0] - start - 1
        return None

    def error(self) -> ValueError:
        assert self.layout is not None and self.short is not None
        row, fields = self.short
        return ValueError(
            f"{self.source}: data row {row} has {fields} field(s), expected {len(self.layout.names)} "
            f"({', '.join(self.layout.names)}); is the file truncated, or is a line cut short?"
        )


def _load_hub(
    name: str, *, split: str, cache_dir: str | None, streaming: bool = False
) -> datasets.Dataset | datasets.IterableDataset:
    hint = "pass a local file (csv/tsv/json/parquet) instead"
    if _hub_offline():
        # Checked by us at call time: datasets reads these variables only once, at import.
        raise HubUnreachableError(f"cannot load {name!r} from the Hugging Face Hub: offline mode is set; {hint}")
    repo, _, config = name.partition(":")
    kwargs: dict[str, Any] = {"streaming": True} if streaming else {}
    try:
        loaded = datasets.load_dataset(repo, config or None, split=split, cache_dir=cache_dir, **kwargs)
    except datasets.exceptions.DatasetNotFoundError as err:
        raise ValueError(f"{name!r} is neither a local file nor a data set on the Hub ({err}); {hint}") from err
    except Exception as err:  # noqa: BLE001
        if _is_connection_error(err):
            raise HubUnreachableError(f"cannot load {name!r}: the Hugging Face Hub is unreachable; {hint}") from err
        raise ValueError(f"cannot load {name!r} from the Hub: {_root_message(err)}") from err
    expected = datasets.IterableDataset if streaming else datasets.Dataset
    if not isinstance(loaded, expected):
        raise ValueError(f"{name!r} split {split!r} did not give one {expected.__name__} (got {type(loaded).__name__})")
    return loaded


def _is_connection_error(err: BaseException) -> bool:
    names = {"ConnectionError", "ConnectTimeout", "ReadTimeout", "Timeout", "OfflineModeIsEnabled",
             "LocalEntryNotFoundError", "ConnectError", "TimeoutException"}  # fmt: skip
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, (ConnectionError, TimeoutError)) or type(seen).__name__ in names:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


# --------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------
def _column_names(raw: datasets.IterableDataset, source: str) -> list[str]:
    """Column names of a streamed source: from its features, else from its first row."""
    if raw.column_names is not None:
        return list(raw.column_names)
    try:
        first = next(iter(raw.take(1)), None)
    except Exception as err:  # any reader failure: one message naming the source
        raise ValueError(f"cannot read the first row of {source}: {_root_message(err)}") from err
    if first is None:
        raise ValueError(f"{source} has no data rows")
    return list(first)


def _resolve_columns(
    found: list[str],
    source: str,
    kind: str,
    q1: str | None,
    q2: str | None,
    label: str | None,
    id1: str | None,
    id2: str | None,
) -> dict[str, str]:
    """Map output names (question1, question2, label[, qid1, qid2]) to source column names."""
    flags_hint = "name them with question1_column=, question2_column=, label_column= (id1_column=, id2_column=)"
    candidates = [(q1 or a, q2 or b, label or c) for a, b, c in KNOWN_COLUMN_SETS]
    chosen = next((c for c in candidates if all(name in found for name in c)), None)
    if chosen is None:
        # Report against the first set, which holds the flags if all three were given.
        missing = [name for name in dict.fromkeys(candidates[0]) if name not in found]
        raise ValueError(
            f"{source}: missing column(s) {missing} (format {kind!r}); columns found: {found}; {flags_hint}"
            + _delimiter_hint(found, kind)
        )
    mapping = {"question1": chosen[0], "question2": chosen[1], "label": chosen[2]}

    if (id1 is None) != (id2 is None):
        raise ValueError(f"{source}: give both id1_column and id2_column, or neither")
    if id1 is not None:
        missing = [name for name in (id1, id2) if name not in found]
        if missing:
            raise ValueError(f"{source}: missing id column(s) {missing}; columns found: {found}; {flags_hint}")
        mapping.update(qid1=id1, qid2=id2)  # type: ignore[arg-type]
    else:
        ids = next((pair for pair in KNOWN_ID_COLUMNS if all(name in found for name in pair)), None)
        if ids is not None and not set(ids) & set(mapping.values()):
            mapping.update(qid1=ids[0], qid2=ids[1])

    used = list(mapping.values())
    if len(set(used)) != len(used):
        raise ValueError(f"{source}: one source column is given two roles: {mapping}")
    return mapping


def _delimiter_hint(found: list[str], kind: str) -> str:
    """A header read as one column usually means the file uses another delimiter than the one read."""
    if kind not in _TEXT_KINDS or len(found) != 1:
        return ""
    read = "\t" if kind in {"tsv", "mrpc", "bimpm"} else ","
    names = {",": "','", "\t": "tab", ";": "';'", "|": "'|'"}
    seen = next((mark for mark in names if mark != read and mark in found[0]), None)
    if seen is None:
        return ""
    fix = {",": "pass format='csv'", "\t": "pass format='tsv'"}.get(
        seen, "only ',' (csv) and tab (tsv) are read: convert it"
    )
    return f". The header was read as one column: the file looks {names[seen]}-separated, not {names[read]}-separated; {fix}"


# --------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------
def _output_features(mapping: dict[str, str]) -> datasets.Features:
    return datasets.Features({name: datasets.Value("int64" if name == "label" else "string") for name in mapping})


def _normalise(
    raw: datasets.Dataset,
    mapping: dict[str, str],
    source: str,
    *,
    normalization: str | None = None,
    layout: _TextLayout | None = None,
) -> datasets.Dataset:
    if len(raw) == 0:
        raise ValueError(f"{source} has no data rows")
    for role in ("question1", "question2"):
        _check_text_column(raw, mapping[role], source)
    short_rows = _ShortRows(layout, source)
    if short_rows.first_in(raw.data.table, 0) is not None:
        raise short_rows.error()

    ds = raw.select_columns(list(mapping.values()))
    ds = ds.rename_columns({src: out for out, src in mapping.items() if src != out})
    # One pass in Arrow batches: validate + map labels (row numbers via indices), strip (and
    # normalise) texts, ids to strings, and drop the rows left without a question. Dropping
    # inside `map` (which may return fewer rows) rather than with `filter` keeps the result a
    # plain Arrow table: `filter` adds an indices mapping that makes every later column read a
    # row-by-row gather. Errors raised inside map propagate unchanged.
    total = len(ds)
    ds = ds.with_format("arrow").map(
        _normalise_batch,
        batched=True,
        batch_size=_BATCH_ROWS,
        with_indices=True,
        remove_columns=ds.column_names,
        features=_output_features(mapping),
        fn_kwargs={"source": source, "label_source": mapping["label"], "normalization": normalization},
        desc="Normalising pairs",
    )
    dropped = total - len(ds)
    if len(ds) == 0:
        raise ValueError(f"{source}: no pairs left: all {total} row(s) have an empty, null or whitespace-only question")
    if dropped:
        warnings.warn(
            f"dropped {dropped} of {total} row(s) from {source} with an empty, null or whitespace-only question",
            UserWarning,
            stacklevel=3,
        )
    for name in ("qid1", "qid2"):
        if name in mapping:  # an empty id would merge unrelated questions in duplicate groups
            column = column_arrow(ds, name)
            empty = column.null_count + (pc.sum(pc.equal(pc.utf8_length(column), 0)).as_py() or 0)
            if empty:
                raise ValueError(
                    f"{source}: id column {mapping[name]!r} has {empty} empty value(s); fix them or leave out the ids"
                )
    return ds.with_format(None)


def _check_text_column(raw: datasets.Dataset, name: str, source: str) -> None:
    """Catch a numeric column mapped as a question (e.g. an id column given by a wrong flag)."""
    _check_text_type(raw.features[name], name, source)
    _check_not_all_numbers(column_arrow(raw, name), name, source)


def _check_text_type(feature: Any, name: str, source: str) -> None:
    dtype = getattr(feature, "dtype", None)
    if dtype in {"string", "large_string"}:
        return
    if dtype is not None and (dtype.startswith(("int", "uint", "float")) or dtype == "bool"):
        raise ValueError(
            f"{source}: column {name!r} holds numbers ({dtype}), not question text; check the column flags"
        )
    if type(feature).__name__ == "Json":
        raise ValueError(
            f"{source}: column {name!r} mixes JSON value types (e.g. numbers and text); questions must be text"
        )
    raise ValueError(f"{source}: column {name!r} must hold text, found {feature}")


def _check_arrow_text_type(kind: pa.DataType, name: str, source: str) -> None:
    """`_check_text_type` for one streamed batch, from its Arrow type (a batch of nulls passes)."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
        return
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        raise ValueError(f"{source}: column {name!r} holds numbers ({kind}), not question text; check the column flags")
    if _is_json_type(kind):
        raise ValueError(
            f"{source}: column {name!r} mixes JSON value types (e.g. numbers and text); questions must be text"
        )
    raise ValueError(f"{source}: column {name!r} must hold text, found {kind}")


def _check_not_all_numbers(column: pa.ChunkedArray | pa.Array, name: str, source: str) -> None:
    column = pc.utf8_trim_whitespace(column)
    non_empty = pc.sum(pc.greater(pc.utf8_length(column), 0)).as_py() or 0
    numeric = pc.sum(pc.match_substring_regex(column, _NUMBER)).as_py() or 0
    if non_empty and numeric == non_empty:
        raise ValueError(f"{source}: column {name!r} holds numbers only, not question text; check the column flags")


def _convert_batch(
    batch: pa.Table, normalization: str | None, source: str, label_source: str
) -> tuple[pa.Table, pa.Array, int | None]:
    """
    Output columns of one batch before dropping: (table, keep mask, position of the first invalid
    label or None). Questions are normalised (optionally) and stripped; ids become strings.
    """
    out = {}
    first_invalid = None
    for name in batch.column_names:
        column = batch.column(name)
        if name == "label":
            out[name], first_invalid = _labels_to_int(column, source, label_source)
        elif name in {"question1", "question2"}:
            out[name] = pc.utf8_trim_whitespace(normalize_texts(column.cast(pa.string()), normalization))
        else:  # qid1/qid2 (ints in json/parquet files) become strings
            out[name] = pc.utf8_trim_whitespace(column.cast(pa.string()))
    table = pa.table(out)
    keep = pc.and_(
        pc.greater(pc.utf8_length(table.column("question1")), 0),
        pc.greater(pc.utf8_length(table.column("question2")), 0),
    )
    return table, pc.fill_null(keep, False), first_invalid


def _normalise_batch(
    batch: pa.Table, indices: list[int], *, source: str, label_source: str, normalization: str | None = None
) -> pa.Table:
    table, keep, first_invalid = _convert_batch(batch, normalization, source, label_source)
    if first_invalid is not None:
        raise _label_error(
            batch.column("label"), first_invalid, f"data row {indices[first_invalid] + 1}", source, label_source
        )
    return table.filter(keep)


def _labels_to_int(column: pa.ChunkedArray, source: str, label_source: str) -> tuple[pa.Array, int | None]:
    """Int/float/bool/string/JSON labels as int64 0/1, and the position of the first invalid one (or None)."""
    text = _label_text(column)
    if text is None:
        raise ValueError(f"{source}: label column {label_source!r} has unsupported type {column.type}")
    positive = pc.is_in(text, value_set=pa.array(_POSITIVE_LABELS))
    valid = pc.fill_null(pc.or_(positive, pc.is_in(text, value_set=pa.array(_NEGATIVE_LABELS))), False)
    first_invalid = None if pc.all(valid).as_py() else pc.index(valid, False).as_py()
    return pc.cast(pc.fill_null(positive, False), pa.int64()), first_invalid


def _label_text(column: pa.ChunkedArray) -> pa.ChunkedArray | None:
    kind = column.type
    if _is_json_type(kind):
        # Mixed value types in one JSON column (1, "yes", 0.0) arrive as JSON text: unquote strings.
        storage = pa.chunked_array([chunk.storage for chunk in column.chunks], type=kind.storage_type)
        text = pc.replace_substring_regex(pc.utf8_trim_whitespace(storage), r'^"(.*)"$', r"\1")
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        text = column
    elif pa.types.is_null(kind) or pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        text = column.cast(pa.string())  # True -> "true", 1.0 -> "1", 1.5 -> "1.5" (rejected below)
    else:
        return None
    return pc.utf8_lower(pc.utf8_trim_whitespace(text))


def _is_json_type(kind: pa.DataType) -> bool:
    """Arrow's JSON extension type: what `datasets` gives a JSON column whose values mix types."""
    return getattr(kind, "extension_name", None) == "arrow.json"


def _label_error(column: pa.ChunkedArray, position: int, where: str, source: str, label_source: str) -> ValueError:
    value = column[position].as_py()
    if _is_json_type(column.type):
        value = _label_text(column.slice(position, 1))[0].as_py()
    return ValueError(
        f"{source}: invalid label {value!r} in {where} (column {label_source!r}); "
        f"accepted: 0/1, true/false, yes/no, duplicate/not_duplicate"
    )


# --------------------------------------------------------------------------------------------
# Streaming
# --------------------------------------------------------------------------------------------
def _stream(
    raw: datasets.IterableDataset,
    mapping: dict[str, str],
    source: str,
    *,
    kind: str,
    normalization: str | None,
    layout: _TextLayout | None,
) -> datasets.IterableDataset:
    """
    The streaming counterpart of `_normalise`: a generator over the source's Arrow batches.

    A generator (not `IterableDataset.map`) because it alone sees reader errors (it re-raises them
    naming the file) and the end of a pass (for the total of dropped rows). Shards are kept:
    each shard of the source is one shard of the result (workers of a DataLoader split them).
    """
    if raw.features is not None:
        for role in ("question1", "question2"):
            if mapping[role] in raw.features:
                _check_text_type(raw.features[mapping[role]], mapping[role], source)
    n_shards = max(raw.n_shards, 1)
    return datasets.IterableDataset.from_generator(
        _stream_rows,
        features=_output_features(mapping),
        gen_kwargs={
            "shards": list(range(n_shards)),
            "n_shards": n_shards,
            "raw": raw,
            "mapping": mapping,
            "source": source,
            "kind": kind,
            "normalization": normalization,
            "layout": layout,
        },
    )


def _stream_rows(
    shards: list[int],
    *,
    n_shards: int,
    raw: datasets.IterableDataset,
    mapping: dict[str, str],
    source: str,
    kind: str,
    normalization: str | None,
    layout: _TextLayout | None,
) -> Iterator[dict[str, Any]]:
    for shard in shards:
        part = raw.shard(num_shards=n_shards, index=shard) if n_shards > 1 else raw
        try:
            yield from _stream_shard(
                part, shard if n_shards > 1 else None, mapping, source, kind, normalization, layout
            )
        except pa.ArrowInvalid as err:
            raise _invalid_utf8_error(err, source, kind) from err


def _stream_shard(
    part: datasets.IterableDataset,
    shard: int | None,
    mapping: dict[str, str],
    source: str,
    kind: str,
    normalization: str | None,
    layout: _TextLayout | None,
) -> Iterator[dict[str, Any]]:
    def where(row: int) -> str:  # row: 0-based position in this shard
        return f"data row {row + 1}" if shard is None else f"row {row + 1} of shard {shard}"

    batches = part.with_format("arrow").iter(batch_size=_BATCH_ROWS)
    seen = dropped = 0
    short_rows = _ShortRows(layout, source)
    while True:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                batch = next(batches)
        except StopIteration:
            break
        except Exception as err:  # reader failures name the file, as when loading eagerly
            if layout is None and _is_connection_error(err):
                raise HubUnreachableError(f"streaming {source!r}: the Hugging Face Hub became unreachable") from err
            raise _reader_error(Path(source), "csv" if kind in _TEXT_KINDS else kind, err) from err

        short = short_rows.first_in(batch, seen)
        if short is not None:
            batch = batch.slice(0, short)
        columns = batch.select(list(mapping.values())).rename_columns(list(mapping))
        for role in ("question1", "question2"):
            _check_arrow_text_type(columns.column(role).type, mapping[role], source)
            if seen == 0:  # the eager check covers the whole column; a stream can only look at its start
                _check_not_all_numbers(columns.column(role), mapping[role], source)
        table, keep, first_invalid = _convert_batch(columns, normalization, source, mapping["label"])
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
            raise _label_error(
                columns.column("label"), first_invalid, where(seen + first_invalid), source, mapping["label"]
            )
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
