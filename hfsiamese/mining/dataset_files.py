"""
Mined data sets on disk, the kind chosen by the path: `.parquet`, `.jsonl` (JSON lines), or a folder (no suffix:
`save_to_disk`). A path that exists is refused unless overwriting was asked for; a write stopped halfway leaves no
half file under the final name (written beside it, then moved into place).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["DATASET_SUFFIXES", "OUTPUT_PATH_HELP", "check_output_path", "load_dataset_file", "save_dataset_file"]

DATASET_SUFFIXES = (".parquet", ".jsonl", ".json")
OUTPUT_PATH_HELP = "Where to write: .parquet, .jsonl, or no suffix for a save_to_disk folder."


def _kind(path: Path) -> str:
    if path.suffix in DATASET_SUFFIXES:
        return "parquet" if path.suffix == ".parquet" else "json"
    if path.suffix:
        raise ValueError(
            f"{path}: the suffix says how the data set is written: .parquet, .jsonl, or no suffix for a "
            "save_to_disk folder"
        )
    return "folder"


def check_output_path(path: str | os.PathLike, *, overwrite: bool, flag: str = "--overwrite_output") -> Path:
    """`path` as a `Path`, its kind known; an existing one refused unless `overwrite` (`flag` names the option)."""
    path = Path(path)
    _kind(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists: pass {flag} to replace it")
    return path


def save_dataset_file(dataset: datasets.Dataset, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write `dataset` to `path` as its suffix says; an existing `path` is refused unless `overwrite`."""
    path = check_output_path(path, overwrite=overwrite, flag="overwrite=True")
    kind = _kind(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.partial")
    try:
        if kind == "parquet":
            dataset.to_parquet(str(partial))
        elif kind == "json":
            dataset.to_json(str(partial), lines=True, force_ascii=False)
        else:
            dataset.save_to_disk(str(partial))
        if path.is_dir() and kind == "folder":
            shutil.rmtree(path)  # asked for: overwrite
        os.replace(partial, path)
    finally:
        if partial.is_dir():
            shutil.rmtree(partial, ignore_errors=True)
        elif partial.exists():
            partial.unlink()
    return path


def _first_line_of(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[-1] if lines else type(err).__name__


def _check_json_lines(path: Path) -> None:
    """Refuse a JSON file that is empty, binary or not UTF-8, or a `.jsonl` line that is not one JSON object."""
    from hfsiamese.data.formats import not_utf8_message

    with open(path, "rb") as handle:
        if b"\x00" in handle.read(1 << 16):
            raise ValueError(f"{path} is not a text file (it holds NUL bytes); expected JSON lines")
    try:
        with open(path, encoding="utf-8") as handle:
            found = False
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                found = True
                if path.suffix != ".jsonl":
                    continue  # a .json file may be one array over many lines: datasets reads it whole
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise ValueError(
                        f"{path}: line {number} is not JSON ({err.msg}); expected one object per line"
                    ) from err
                if not isinstance(row, dict):
                    raise ValueError(f"{path}: line {number} is not a JSON object; expected one object per line")
    except UnicodeDecodeError as err:
        raise ValueError(not_utf8_message(path)) from err
    if not found:
        raise ValueError(f"{path} is empty: expected one JSON object per line")


def load_dataset_file(path: str | os.PathLike) -> datasets.Dataset:
    """A data set written by `save_dataset_file` (or any `.parquet`, `.jsonl` file or `save_to_disk` folder)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"data set not found: {path}")
    kind = "folder" if path.is_dir() else _kind(path)
    if kind == "parquet":
        try:
            pq.read_schema(path)  # before datasets, which logs a line of its own and then raises
        except (OSError, pa.ArrowException) as err:
            raise ValueError(
                f"{path} is not a Parquet file ({_first_line_of(err)}): give the file a .parquet suffix only if it is one"
            ) from err
        return datasets.Dataset.from_parquet(str(path))
    if kind == "json":
        _check_json_lines(path)  # said in one line naming the file and its line, not in datasets' traceback
        return datasets.Dataset.from_json(str(path))
    loaded = datasets.load_from_disk(str(path))
    if not isinstance(loaded, datasets.Dataset):
        raise ValueError(f"{path} holds a DatasetDict ({', '.join(loaded)}): give the folder of one split")
    return loaded
