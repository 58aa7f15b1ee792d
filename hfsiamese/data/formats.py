"""
Which kind of pair file a path is: sniffing the extension and the first line (BiMPM, Quora,
MRPC, headerless label-first tsv, generic csv/tsv, json, parquet, or a Hub id), and telling where
a file stops being UTF-8.

Only the first line of a text file is read here; the readers (`readers.py`) do the rest.
"""

from __future__ import annotations

import codecs
import csv
import json
import re
from pathlib import Path

from hfsiamese.data.label_values import NEGATIVE_LABELS, POSITIVE_LABELS

__all__ = [
    "BIMPM_COLUMNS",
    "LABEL_FIRST_COLUMNS",
    "MRPC_HEADER",
    "PAIR_FORMATS",
    "TEXT_FORMATS",
    "delimiter_for",
    "detect_format",
    "first_line",
    "has_rows_after_first_line",
    "looks_like_hub_id",
    "is_utf8_text",
    "not_utf8_message",
    "parse_header",
]

PAIR_FORMATS: tuple[str, ...] = ("bimpm", "label_first", "quora", "mrpc", "csv", "tsv", "json", "parquet", "hub")
TEXT_FORMATS = {"bimpm", "label_first", "mrpc", "quora", "csv", "tsv"}  # read with the csv reader

BIMPM_COLUMNS = ["label", "question1", "question2", "pair_id"]
# Headerless `label<TAB>text1<TAB>text2`, as many research dumps of paraphrase/duplicate pairs come.
LABEL_FIRST_COLUMNS = ["label", "text1", "text2"]
MRPC_HEADER = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]

_TEXT_SUFFIXES = {".csv", ".tsv", ".txt"}
_SUFFIX_FORMATS = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}
_DATA_SUFFIXES = _TEXT_SUFFIXES | set(_SUFFIX_FORMATS)

# `owner/name` or a bare `name`, optionally `:config` (e.g. `nyu-mll/glue:qqp`).
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?(:[\w.-]+)?$")
_SNIFF_BYTES = 64 * 1024
_MAX_FIRST_LINE_BYTES = 16 * 1024 * 1024  # a header (or a BiMPM row) longer than this is not sniffed whole


def looks_like_hub_id(name: str) -> bool:
    """A Hub id has at most one `/`, no path prefix and no data-file extension."""
    return bool(_HUB_ID.match(name)) and Path(name.split(":")[0]).suffix.lower() not in _DATA_SUFFIXES


def detect_format(path: Path) -> str:
    """One of `PAIR_FORMATS` for a local file, from its extension and (csv/tsv/txt) its first line."""
    suffix = path.suffix.lower()
    if suffix in _SUFFIX_FORMATS:
        return _SUFFIX_FORMATS[suffix]
    if suffix not in _TEXT_SUFFIXES:
        raise ValueError(
            f"cannot detect the pair format of {path} from its extension {suffix or '(none)'!r}; "
            f"pass format= one of {PAIR_FORMATS}"
        )
    line = first_line(path)
    fields = line.split("\t")
    # BiMPM: no header, `label<TAB>q1<TAB>q2<TAB>pair_id`; a header never has a 0/1 and an int there.
    if len(fields) == 4 and fields[0].strip() in {"0", "1"} and fields[3].strip().isdigit():
        return "bimpm"
    # Label first, no header: a header's first name is never a label value.
    if len(fields) == 3 and _is_label_value(fields[0]):
        return "label_first"
    if [f.strip() for f in fields] == MRPC_HEADER:
        return "mrpc"
    header = set(parse_header(line, delimiter_for(path, line)))
    if {"question1", "question2", "is_duplicate"} <= header:
        return "quora"
    return "tsv" if delimiter_for(path, line) == "\t" else "csv"


def _is_label_value(field: str) -> bool:
    return field.strip().lower() in POSITIVE_LABELS + NEGATIVE_LABELS


def first_line(path: Path) -> str:
    """The first line of a text file, BOM stripped; ValueError if the file is not UTF-8 text."""
    with open(path, "rb") as handle:
        head = handle.read(_SNIFF_BYTES)
        refuse_binary(path, head, "a csv/tsv pair file")
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
        raise ValueError(not_utf8_message(path))
    return text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""


def has_rows_after_first_line(path: Path) -> bool:
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


def refuse_binary(path: Path, head: bytes, expected: str) -> None:
    """Refuse a file whose first bytes `head` hold a NUL byte (binary, or UTF-16), naming it and what was `expected`."""
    if b"\x00" in head:
        raise ValueError(f"{path} is not a text file (it holds NUL bytes); expected {expected}")


def check_text_file(path: Path, expected: str) -> None:
    """Refuse a file that is binary (NUL bytes) or not UTF-8, in one line naming it (`expected`: what it should hold)."""
    with open(path, "rb") as handle:
        refuse_binary(path, handle.read(_SNIFF_BYTES), expected)
    if _utf8_error(path) is not None:
        raise ValueError(not_utf8_message(path))


def check_json_file(path: Path) -> None:
    """Refuse, in one line naming the file (and the line), a JSON file that is binary, not UTF-8, or empty, and a
    `.jsonl` line that is not one JSON object: what datasets' JSON reader says in a traceback, or as StopIteration."""
    check_text_file(path, "JSON lines (one object per line)")
    found = False
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            found = True
            if path.suffix.lower() != ".jsonl":
                break  # a .json file may be one array over many lines: datasets reads it whole
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(
                    f"{path}: line {number} is not JSON ({err.msg}); expected one object per line"
                ) from err
            if not isinstance(row, dict):
                raise ValueError(f"{path}: line {number} is not a JSON object; expected one object per line")
    if not found:
        raise ValueError(f"{path} is empty: expected JSON lines (one object per line)")


def check_parquet_file(path: Path) -> None:
    """Refuse a file that is not Parquet in one line naming it (datasets logs a line of its own, then raises)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pq.read_schema(path)
    except (OSError, pa.ArrowException) as err:
        reason = (str(err).strip().splitlines() or [type(err).__name__])[-1]
        raise ValueError(
            f"{path} is not a Parquet file ({reason}); give a .parquet suffix only to a Parquet file"
        ) from err


def is_utf8_text(path: Path) -> bool:
    """Whether every byte of the file decodes as UTF-8."""
    return _utf8_error(path) is None


def not_utf8_message(path: Path) -> str:
    """The error for a file that is not UTF-8, with the offset and line of its first bad byte."""
    found = _utf8_error(path)
    where = "" if found is None else f": invalid byte(s) {found[2]!r} at byte offset {found[0]} (line {found[1]})"
    return f"{path} is not UTF-8 text{where}; re-encode the file as UTF-8 (e.g. iconv -f <its encoding> -t utf-8)"


def delimiter_for(path: Path, line: str) -> str:
    """Tab or comma: by extension, and for a `.csv` holding tabs only (or a `.txt`) by the first line."""
    if path.suffix.lower() == ".tsv":
        return "\t"
    if path.suffix.lower() == ".csv":
        return "," if "," in line or "\t" not in line else "\t"
    return "\t" if "\t" in line else ","


def parse_header(line: str, delimiter: str) -> list[str]:
    """Column names of a header line, stripped of blanks and quotes."""
    if delimiter == "\t":  # tsv files are read unquoted (GLUE convention), quotes in names stripped
        names = line.split("\t")
    else:
        names = next(csv.reader([line], delimiter=delimiter), [])
    return [name.strip().strip('"').strip() for name in names]
