"""
Data sets a command writes (mined rows, teacher scores, `hfsiamese groups`' rows) and reads back, the kind chosen by
the path: `.parquet`, `.jsonl` (JSON lines), or a folder (no suffix: `save_to_disk`). A path that exists is refused
unless overwriting was asked for; a write stopped halfway leaves no half file under the final name (written beside
it, then moved into place).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import datasets

from hfsiamese.data.formats import check_json_file, check_parquet_file

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


def load_dataset_file(path: str | os.PathLike) -> datasets.Dataset:
    """A data set written by `save_dataset_file` (or any `.parquet`, `.jsonl` file or `save_to_disk` folder)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"data set not found: {path}")
    kind = "folder" if path.is_dir() else _kind(path)
    if kind == "parquet":
        check_parquet_file(path)  # in one line naming the file, not in datasets' log line and traceback
        return datasets.Dataset.from_parquet(str(path))
    if kind == "json":
        check_json_file(path)
        return datasets.Dataset.from_json(str(path))
    loaded = datasets.load_from_disk(str(path))
    if not isinstance(loaded, datasets.Dataset):
        raise ValueError(f"{path} holds a DatasetDict ({', '.join(loaded)}): give the folder of one split")
    return loaded
