"""Reading a prepared folder back as the splits `load_splits` would make, each shard checked and memory-mapped."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import datasets
from datasets.table import MemoryMappedTable

from hfsiamese.preparation.options import SCHEMA_VERSION, PreparationOptions
from hfsiamese.preparation.prepare import MANIFEST, SPLIT_NAMES, STARTED
from hfsiamese.preparation.shards import check_shard, read_json

__all__ = ["SPLIT_OPTIONS", "is_prepared_folder", "load_prepared_splits", "prepared_source"]

# The options a run must share with the folder it reads (how the file was read is the folder's own business).
SPLIT_OPTIONS = ("validation_fraction", "test_fraction", "split_seed")


def is_prepared_folder(path: str | Path | None) -> bool:
    """Whether `path` is a folder `hfsiamese prepare` wrote (or began to write)."""
    return (
        path is not None
        and Path(path).is_dir()
        and ((Path(path) / MANIFEST).exists() or (Path(path) / STARTED).exists())
    )


def prepared_source(folder: str | Path) -> str:
    """The pair file a prepared folder was made from (its path when prepared), for commands that want the texts."""
    return str(read_json(Path(folder) / STARTED)["source"]["path"])


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
    for name in [name for name in SPLIT_NAMES if name in manifest["shards"]]:  # (the manifest's keys are sorted)
        records = manifest["shards"][name]
        parts = [_shard_dataset(folder, manifest, record) for record in records]
        splits[name] = parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
    return datasets.DatasetDict(splits)


def _shard_dataset(folder: Path, manifest: dict[str, Any], record: dict[str, Any]) -> datasets.Dataset:
    """
    One shard, memory-mapped, with a fingerprint of its own made from what it is a shard of: `Dataset.from_file`
    would give every shard of one schema the same fingerprint, so that datasets' cache would hand the tokenised
    training rows to the validation pairs; a stable one also lets a later run reuse this run's cached `map`s.
    """
    identity = json.dumps(
        {"source": manifest["source"], "options": manifest["options"], "shard": record}, sort_keys=True
    )
    fingerprint = hashlib.blake2b(identity.encode("utf-8"), digest_size=8).hexdigest()
    return datasets.Dataset(MemoryMappedTable.from_file(str(folder / record["file"])), fingerprint=fingerprint)
