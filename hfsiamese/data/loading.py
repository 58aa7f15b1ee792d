"""
Load question pairs from the formats duplicate-question work meets into one `datasets.Dataset`.

Every source (BiMPM's headerless QQP tsv, Kaggle/GLUE Quora files, MRPC, generic csv/tsv/json/
parquet, a Hub data set) ends up with the same columns: `question1`, `question2` (stripped
strings), `label` (int64, 0/1) and, where the source knows question identities, `qid1`/`qid2`
(strings). Downstream code (groups, tokenisation, the trainer) can then rely on that shape alone.

The reading itself is `datasets.load_dataset("csv"/"json"/"parquet")`, so data stays in Arrow and
is cached; what this module adds is format sniffing, column resolution, label normalisation and
error messages that name the file and the problem instead of a pandas/Arrow traceback.
"""

from __future__ import annotations

import csv
import os
import re
import warnings
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .arrow_columns import column_arrow

__all__ = ["PAIR_FORMATS", "HubUnreachableError", "load_pairs"]

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
_ENV_TRUE = {"1", "ON", "YES", "TRUE"}


class HubUnreachableError(ConnectionError, ValueError):
    """The Hub cannot be reached (offline mode or no network); both a ConnectionError and a ValueError."""


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
) -> datasets.Dataset:
    """
    Read question pairs from a local file or a Hub data set.

    `format=None` detects the format from the extension and (for csv/tsv/txt) the first line; see
    `PAIR_FORMATS` for explicit values. Column flags override the known column sets. Returns
    columns `question1`, `question2` (stripped strings), `label` (int64 0/1) and `qid1`, `qid2`
    (strings) when the source has question ids. Rows with an empty question are dropped with a
    warning; anything else that is wrong is a `ValueError` naming the file and the problem.
    """
    source = str(path_or_name)
    if format is not None and format not in PAIR_FORMATS:
        raise ValueError(f"unknown pair format {format!r} for {source}; choose one of {PAIR_FORMATS}")

    if format == "hub" or (format is None and not os.path.exists(source) and _looks_like_hub_id(source)):
        raw = _load_hub(source, split=split, cache_dir=cache_dir)
        kind = "hub"
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"pair file not found: {source}")
        if not path.is_file():
            raise ValueError(f"{source} is a directory, not a pair file; pass one file")
        kind = format or _detect_format(path)
        raw = _read_file(path, kind, cache_dir=cache_dir)

    columns = _resolve_columns(
        raw.column_names, source, kind,
        question1_column, question2_column, label_column, id1_column, id2_column,
    )  # fmt: skip
    return _normalise(raw, columns, source)


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
    # The sniffed block may end inside a multi-byte character: drop up to 3 trailing bytes.
    for cut in range(4):
        try:
            text = head[: len(head) - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    else:
        raise ValueError(f"{path} is not UTF-8 text; expected a csv/tsv pair file")
    return text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""


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
def _read_file(path: Path, kind: str, *, cache_dir: str | None) -> datasets.Dataset:
    if kind in {"json", "parquet"}:
        if kind == "json":
            _first_line(path)  # reject binary files with a clear message before the json reader
        return _load_local(path, kind, dict(data_files=str(path)), cache_dir)

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
    return _load_local(path, "csv", kwargs, cache_dir)


def _unique_names(names: list[str], path: Path) -> list[str]:
    out: list[str] = []
    for i, name in enumerate(names):
        name = name or f"column{i + 1}"
        if name in out:
            raise ValueError(f"{path}: duplicate column name {name!r} in header {names}")
        out.append(name)
    return out


def _load_local(path: Path, builder: str, kwargs: dict[str, Any], cache_dir: str | None) -> datasets.Dataset:
    try:
        with warnings.catch_warnings():
            # pandas only warns when the first data row has more fields than the header and
            # then drops them; a later row with extra fields is an error. Make both errors.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return datasets.load_dataset(builder, split="train", cache_dir=cache_dir, **kwargs)
    except Exception as err:  # noqa: BLE001 - any reader failure becomes one clear message
        raise ValueError(f"cannot parse {path} as {builder}: {_root_message(err)}") from err


def _root_message(err: BaseException) -> str:
    """The innermost cause's message: `datasets` wraps reader errors in DatasetGenerationError."""
    while err.__cause__ is not None or (err.__context__ is not None and not err.__suppress_context__):
        err = err.__cause__ or err.__context__  # type: ignore[assignment]
    return f"{type(err).__name__}: {err}"


def _hub_offline() -> bool:
    from huggingface_hub import constants

    env = {os.environ.get(var, "").upper() for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    return bool(env & _ENV_TRUE) or bool(constants.HF_HUB_OFFLINE) or bool(datasets.config.HF_HUB_OFFLINE)


def _load_hub(name: str, *, split: str, cache_dir: str | None) -> datasets.Dataset:
    hint = "pass a local file (csv/tsv/json/parquet) instead"
    if _hub_offline():
        # Checked by us at call time: datasets reads these variables only once, at import.
        raise HubUnreachableError(f"cannot load {name!r} from the Hugging Face Hub: offline mode is set; {hint}")
    repo, _, config = name.partition(":")
    try:
        loaded = datasets.load_dataset(repo, config or None, split=split, cache_dir=cache_dir)
    except datasets.exceptions.DatasetNotFoundError as err:
        raise ValueError(f"{name!r} is neither a local file nor a data set on the Hub ({err}); {hint}") from err
    except Exception as err:  # noqa: BLE001
        if _is_connection_error(err):
            raise HubUnreachableError(f"cannot load {name!r}: the Hugging Face Hub is unreachable; {hint}") from err
        raise ValueError(f"cannot load {name!r} from the Hub: {_root_message(err)}") from err
    if not isinstance(loaded, datasets.Dataset):
        raise ValueError(f"{name!r} split {split!r} did not give one Dataset (got {type(loaded).__name__})")
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


# --------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------
def _normalise(raw: datasets.Dataset, mapping: dict[str, str], source: str) -> datasets.Dataset:
    for role in ("question1", "question2"):
        _check_text_column(raw, mapping[role], source)

    ds = raw.select_columns(list(mapping.values()))
    ds = ds.rename_columns({src: out for out, src in mapping.items() if src != out})
    features = datasets.Features(
        {name: datasets.Value("int64" if name == "label" else "string") for name in mapping}
    )
    # One pass in Arrow batches: validate + map labels (row numbers via indices), strip texts,
    # ids to strings, and drop the rows left without a question. Dropping inside `map` (which
    # may return fewer rows) rather than with `filter` keeps the result a plain Arrow table:
    # `filter` adds an indices mapping that makes every later column read a row-by-row gather.
    # Errors raised inside map propagate unchanged.
    total = len(ds)
    ds = ds.with_format("arrow").map(
        _normalise_batch,
        batched=True,
        batch_size=10_000,
        with_indices=True,
        remove_columns=ds.column_names,
        features=features,
        fn_kwargs={"source": source, "label_source": mapping["label"]},
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
    feature = raw.features[name]
    dtype = getattr(feature, "dtype", None)
    if dtype not in {"string", "large_string"}:
        if dtype is not None and (dtype.startswith(("int", "uint", "float")) or dtype == "bool"):
            raise ValueError(
                f"{source}: column {name!r} holds numbers ({dtype}), not question text; check the column flags"
            )
        raise ValueError(f"{source}: column {name!r} must hold text, found {feature}")
    column = pc.utf8_trim_whitespace(column_arrow(raw, name))
    non_empty = pc.sum(pc.greater(pc.utf8_length(column), 0)).as_py() or 0
    numeric = pc.sum(pc.match_substring_regex(column, _NUMBER)).as_py() or 0
    if non_empty and numeric == non_empty:
        raise ValueError(f"{source}: column {name!r} holds numbers only, not question text; check the column flags")


def _normalise_batch(batch: pa.Table, indices: list[int], *, source: str, label_source: str) -> pa.Table:
    out = {}
    for name in batch.column_names:
        column = batch.column(name)
        if name == "label":
            out[name] = _labels_to_int(column, indices, source, label_source)
        else:  # questions are stripped; qid1/qid2 (ints in json/parquet files) become strings
            out[name] = pc.utf8_trim_whitespace(column.cast(pa.string()))
    table = pa.table(out)
    keep = pc.and_(
        pc.greater(pc.utf8_length(table.column("question1")), 0),
        pc.greater(pc.utf8_length(table.column("question2")), 0),
    )
    return table.filter(pc.fill_null(keep, False))


def _labels_to_int(column: pa.ChunkedArray, indices: list[int], source: str, label_source: str) -> pa.Array:
    """Map int/float/bool/string labels to int64 0/1, or name the first row that is none of them."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        text = column
    elif pa.types.is_null(kind) or pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        text = column.cast(pa.string())  # True -> "true", 1.0 -> "1", 1.5 -> "1.5" (rejected below)
    else:
        raise ValueError(f"{source}: label column {label_source!r} has unsupported type {column.type}")
    text = pc.utf8_lower(pc.utf8_trim_whitespace(text))
    positive = pc.is_in(text, value_set=pa.array(_POSITIVE_LABELS))
    valid = pc.or_(positive, pc.is_in(text, value_set=pa.array(_NEGATIVE_LABELS)))
    valid = pc.fill_null(valid, False)
    if not pc.all(valid).as_py():
        first = pc.index(valid, False).as_py()
        value = column[first].as_py()
        raise ValueError(
            f"{source}: invalid label {value!r} in data row {indices[first] + 1} (column {label_source!r}); "
            f"accepted: 0/1, true/false, yes/no, duplicate/not_duplicate"
        )
    return pc.cast(positive, pa.int64())
