"""
Reading a pair source into a raw `datasets` table: a local file through `datasets.load_dataset`
("csv"/"json"/"parquet", so data stays in Arrow and is cached) or a Hub data set, eagerly or
streamed, with errors that name the file and the problem instead of a pandas/Arrow traceback.

Also the one check that needs the file itself rather than the table: rows cut short.
"""

from __future__ import annotations

import contextlib
import csv
import logging
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from hfsiamese.data.formats import (
    BIMPM_COLUMNS,
    LABEL_FIRST_COLUMNS,
    delimiter_for,
    first_line,
    has_rows_after_first_line,
    is_utf8_text,
    not_utf8_message,
    parse_header,
)
from hfsiamese.utils.hub_access import HubUnreachableError, hub_offline

__all__ = [
    "ShortRows",
    "TextLayout",
    "invalid_utf8_error",
    "is_connection_error",
    "load_hub",
    "read_file",
    "reader_error",
    "root_message",
]


@dataclass(frozen=True)
class TextLayout:
    """How a csv/tsv file was read, for the checks that look at the file itself (short rows)."""

    path: Path
    delimiter: str
    quoted: bool  # csv quoting (","-files); tsv files are read with quoting off
    header: bool
    names: tuple[str, ...]


def read_file(
    path: Path, kind: str, *, cache_dir: str | None, streaming: bool
) -> tuple[datasets.Dataset | datasets.IterableDataset, TextLayout | None]:
    """A local file of format `kind` as a raw table (every csv/tsv column as text), and its text layout."""
    if kind in {"json", "parquet"}:
        if kind == "json":
            # Reject binary, non-UTF-8 and empty files with a clear message before the json reader.
            if not first_line(path).strip() and not has_rows_after_first_line(path):
                raise ValueError(f"{path} is empty; expected JSON (lines) of question pairs")
        elif _parquet_rows(path) == 0:  # (datasets fails on it with "BatchSize must be greater than 0")
            raise ValueError(f"{path} has no data rows")
        raw = _load_local(path, kind, dict(data_files=str(path)), cache_dir, streaming=streaming)
        return raw, None

    line = first_line(path)
    if not line.strip():
        raise ValueError(f"{path} is empty or starts with a blank line; expected a header or a data row")
    if kind == "bimpm":
        delimiter, names, header = "\t", BIMPM_COLUMNS, None
    elif kind == "label_first":
        delimiter, names, header = "\t", LABEL_FIRST_COLUMNS, None
    elif kind == "mrpc":
        delimiter, header = "\t", 0
        names = parse_header(line, delimiter)
    else:
        delimiter = {"tsv": "\t", "csv": ","}.get(kind) or delimiter_for(path, line)
        header = 0
        names = parse_header(line, delimiter)
    if header == 0:
        names = _unique_names(names, path)
        if not has_rows_after_first_line(path):
            raise ValueError(f"{path} has a header ({line[:200]!r}) but no data rows")
    kwargs: dict[str, Any] = dict(
        data_files=str(path),
        delimiter=delimiter,
        column_names=names,  # with header=0 this replaces the file's header (BOM, quotes already stripped)
        header=header,
        index_col=False,  # extra fields in a row are an error, never silently an index column
        # Every column read as text: labels/ids are converted by us, and pandas must not turn
        # a question such as "NA" or "null" into a missing value.
        features=datasets.Features({name: datasets.Value("string") for name in names}),
        keep_default_na=False,
        na_filter=False,
        encoding="utf-8-sig",
    )
    if delimiter == "\t":
        kwargs["quoting"] = csv.QUOTE_NONE  # tsv texts hold bare quote characters (BiMPM, GLUE, MRPC)
    layout = TextLayout(path, delimiter, quoted=delimiter != "\t", header=header == 0, names=tuple(names))
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
        with warnings.catch_warnings(), _builder_errors_unlogged(builder):
            # pandas only warns when the first data row has more fields than the header and
            # then drops them; a later row with extra fields is an error. Make both errors.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return datasets.load_dataset(builder, split="train", cache_dir=cache_dir, streaming=streaming, **kwargs)
    except Exception as err:  # any reader failure becomes one clear message
        raise reader_error(path, builder, err, delimiter=kwargs.get("delimiter")) from err


@contextlib.contextmanager
def _builder_errors_unlogged(builder: str) -> Any:
    """
    `datasets`' packaged readers log a failure ("Failed to read file ...") before raising it; the
    error raised here says it once, so their log lines would print the same message twice more.
    """
    logger = logging.getLogger(f"datasets.packaged_modules.{builder}.{builder}")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def reader_error(path: Path, builder: str, err: BaseException, *, delimiter: str | None = None) -> ValueError:
    """One message for any failure of the csv/json/parquet readers, naming the file (and the line of a row with too many fields)."""
    root = _innermost(err)
    # A decoder's own error, or one worded by a JSON parser (pandas 2.2's ujson: "Invalid octet in UTF-8 sequence").
    worded = re.search(r"utf-?8", str(root), re.IGNORECASE) and path.is_file() and not is_utf8_text(path)
    if isinstance(root, UnicodeDecodeError) or worded:
        return ValueError(not_utf8_message(path))
    extra = re.search(r"Expected (\d+) fields in line \d+, saw (\d+)", str(root))
    if extra and delimiter:
        expected, seen = int(extra.group(1)), int(extra.group(2))
        line = _first_long_line(path, delimiter, expected)
        where = f"line {line}" if line is not None else "a line"
        cause = (
            "a text holds a tab, or the line has an extra column"
            if delimiter == "\t"
            else f"a text that holds the delimiter {delimiter!r} must be quoted, or the file uses another delimiter"
        )
        return ValueError(f"{path}: {where} has {seen} fields, expected {expected}: {cause}")
    message = f"cannot parse {path} as {builder}: {type(root).__name__}: {root}"
    if "EOF inside string" in str(root):
        message += " (a quoted field is never closed: is the file truncated, or is a quote unbalanced?)"
    return ValueError(message)


def invalid_utf8_error(err: pa.ArrowInvalid, source: str, kind: str) -> Exception:
    """
    The json reader keeps invalid UTF-8 inside strings; Arrow's string kernels then fail on it
    ("Invalid UTF8 sequence"). For a local file that becomes the usual message with the byte
    offset; any other Arrow error is returned unchanged.
    """
    if kind == "hub" or "utf8" not in str(err).lower() or not Path(source).is_file():
        return err
    return ValueError(not_utf8_message(Path(source)))


def _innermost(err: BaseException) -> BaseException:
    """The innermost cause: `datasets` wraps reader errors in DatasetGenerationError."""
    while err.__cause__ is not None or (err.__context__ is not None and not err.__suppress_context__):
        err = err.__cause__ or err.__context__  # type: ignore[assignment]
    return err


def root_message(err: BaseException) -> str:
    """The innermost cause of a reader failure, as "Type: message"."""
    root = _innermost(err)
    return f"{type(root).__name__}: {root}"


def _first_long_line(path: Path, delimiter: str, expected: int) -> int | None:
    """
    The physical line (1-based, the header counted) where the first record with more than `expected`
    fields starts. pandas counts differently once a quoted text spans lines, so the file is read again.
    """
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter, quoting=quoting)
        start = 1
        for record in reader:
            if len(record) > expected:
                return start
            start = reader.line_num + 1
    return None


def _first_short_row(layout: TextLayout) -> tuple[int, int] | None:
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


class ShortRows:
    """
    Finds the first row with too few fields, looking at the file only once and only when a table
    read from it has an empty value in its last column (a short row always has one).
    """

    def __init__(self, layout: TextLayout | None, source: str) -> None:
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


def load_hub(
    name: str, *, split: str, cache_dir: str | None, streaming: bool = False
) -> datasets.Dataset | datasets.IterableDataset:
    """A Hub data set (`owner/name[:config]`) through `datasets.load_dataset`; offline mode fails at once, saying so."""
    hint = "pass a local file (csv/tsv/json/parquet) instead"
    if hub_offline():
        # Checked by us at call time: datasets reads these variables only once, at import.
        raise HubUnreachableError(f"cannot load {name!r} from the Hugging Face Hub: offline mode is set; {hint}")
    repo, _, config = name.partition(":")
    kwargs: dict[str, Any] = {"streaming": True} if streaming else {}
    try:
        loaded = datasets.load_dataset(repo, config or None, split=split, cache_dir=cache_dir, **kwargs)
    except datasets.exceptions.DatasetNotFoundError as err:
        raise ValueError(f"{name!r} is neither a local file nor a data set on the Hub ({err}); {hint}") from err
    except Exception as err:
        if is_connection_error(err):
            raise HubUnreachableError(f"cannot load {name!r}: the Hugging Face Hub is unreachable; {hint}") from err
        raise ValueError(f"cannot load {name!r} from the Hub: {root_message(err)}") from err
    expected = datasets.IterableDataset if streaming else datasets.Dataset
    if not isinstance(loaded, expected):
        raise ValueError(f"{name!r} split {split!r} did not give one {expected.__name__} (got {type(loaded).__name__})")
    return loaded


def is_connection_error(err: BaseException) -> bool:
    """Whether a failure (or any of its causes) is the network or offline mode, whichever library raised it."""
    names = {"ConnectionError", "ConnectTimeout", "ReadTimeout", "Timeout", "OfflineModeIsEnabled",
             "LocalEntryNotFoundError", "ConnectError", "TimeoutException"}  # fmt: skip
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, (ConnectionError, TimeoutError)) or type(seen).__name__ in names:
            return True
        seen = seen.__cause__ or seen.__context__
    return False
