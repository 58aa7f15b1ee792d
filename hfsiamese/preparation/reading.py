"""Reading a prepared folder back as the splits `load_splits` would make, each shard checked and memory-mapped."""

from __future__ import annotations

from pathlib import Path

import datasets

from hfsiamese.preparation.options import SCHEMA_VERSION, PreparationOptions
from hfsiamese.preparation.prepare import MANIFEST, STARTED
from hfsiamese.preparation.shards import check_shard, read_json

__all__ = ["SPLIT_OPTIONS", "is_prepared_folder", "load_prepared_splits"]

# The options a run must share with the folder it reads (how the file was read is the folder's own business).
SPLIT_OPTIONS = ("validation_fraction", "test_fraction", "split_seed")


def is_prepared_folder(path: str | Path | None) -> bool:
    """Whether `path` is a folder `hfsiamese prepare` wrote (or began to write)."""
    return path is not None and Path(path).is_dir() and ((Path(path) / MANIFEST).exists() or (Path(path) / STARTED).exists())


def load_prepared_splits(folder: str | Path, options: PreparationOptions | None = None) -> datasets.DatasetDict:
    """
    The splits of a prepared folder (train with `group_id`, validation, test when prepared with one), memory-mapped.

    An unfinished folder, one of another schema version, split options other than `options`' (when given), or a shard
    that is not the one recorded is a one-line ValueError naming it, before anything is read.
    """
    folder = Path(folder)
    if not (folder / MANIFEST).is_file():
        raise ValueError(
            f"{folder} holds an unfinished preparation (no {MANIFEST}): run `hfsiamese prepare` again on it to finish it"
        )
    manifest = read_json(folder / MANIFEST)
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(
            f"{folder} was prepared by another version of hfsiamese (schema {manifest.get('schema_version')}, this one "
            f"reads {SCHEMA_VERSION}): prepare the pair file again"
        )
    if options is not None:
        prepared = PreparationOptions(**manifest["options"])
        differing = [
            f"{name}={value!r} (prepared with {getattr(prepared, name)!r})"
            for name in SPLIT_OPTIONS
            if getattr(prepared, name) != (value := getattr(options, name))
        ]
        if differing:
            raise ValueError(
                f"{folder} was prepared with other data options than this run's: {', '.join(differing)}; prepare the "
                "file again with them, or drop them"
            )
    for records in manifest["shards"].values():
        for record in records:
            check_shard(folder, record)
    splits = {}
    for name, records in manifest["shards"].items():
        parts = [datasets.Dataset.from_file(str(folder / record["file"])) for record in records]
        splits[name] = parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
    return datasets.DatasetDict(splits)
