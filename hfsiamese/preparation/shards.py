"""
The files of a prepared folder, each written whole or not at all (a temporary name, then a rename), and checked
before use: a shard cut short by a kill, or changed since, is refused in one line naming it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa

__all__ = ["CorruptShardError", "check_shard", "read_json", "write_json_atomically", "write_shard"]

_TEMPORARY = ".partial"  # suffix of a file being written; left by a kill, removed when the preparation resumes


class CorruptShardError(ValueError):
    """A prepared shard that is not the one the manifest records (cut short, changed or unreadable)."""


def write_shard(table: pa.Table, path: Path) -> dict[str, Any]:
    """Write `table` as an Arrow stream (the format `datasets` memory-maps) at `path`, atomically; its record."""
    temporary = path.with_name(path.name + _TEMPORARY)
    with pa.OSFile(str(temporary), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=10_000)
    _sync(temporary)
    os.replace(temporary, path)
    return {"file": path.name, "rows": table.num_rows, "bytes": path.stat().st_size}


def check_shard(folder: Path, record: dict[str, Any]) -> None:
    """A `CorruptShardError` naming the shard when it is missing, of another size or row count, or unreadable."""
    path = folder / record["file"]
    fix = "delete it and run `hfsiamese prepare` again (finished shards are kept)"
    if not path.is_file():
        raise CorruptShardError(f"prepared shard {path} is missing: run `hfsiamese prepare` again to write it")
    size = path.stat().st_size
    if size != record["bytes"]:
        raise CorruptShardError(
            f"prepared shard {path} is {size} bytes, not the {record['bytes']} its manifest records (cut short or "
            f"changed): {fix}"
        )
    try:
        with pa.memory_map(str(path)) as source:
            rows = pa.ipc.open_stream(source).read_all().num_rows
    except (pa.ArrowInvalid, OSError) as err:
        raise CorruptShardError(f"prepared shard {path} is unreadable ({str(err).splitlines()[0]}): {fix}") from None
    if rows != record["rows"]:
        raise CorruptShardError(f"prepared shard {path} holds {rows} rows, not the {record['rows']} recorded: {fix}")


def write_json_atomically(data: dict[str, Any], path: Path) -> None:
    """`data` as JSON at `path`, written whole or not at all."""
    temporary = path.with_name(path.name + _TEMPORARY)
    temporary.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    _sync(temporary)
    os.replace(temporary, path)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON file of the folder; a one-line ValueError naming it when it is not JSON."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON ({err}): prepare the folder again") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds no JSON object: prepare the folder again")
    return data


def remove_partial_files(folder: Path) -> None:
    """Delete what a killed preparation left half-written (its temporary names)."""
    for path in folder.glob(f"*{_TEMPORARY}"):
        path.unlink()


def _sync(path: Path) -> None:
    with path.open("rb") as handle:
        os.fsync(handle.fileno())
