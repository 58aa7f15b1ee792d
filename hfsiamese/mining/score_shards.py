"""
The shards folder of a teacher-scoring run (`teacher_scoring`): what makes it resumable and safe to resume.

Rows are cut into shards of `shard_size` consecutive rows, each one Parquet file (`row`, `teacher_scores`) written
under a temporary name and moved into place whole, as the corpus encoding's shards are (`hfsiamese.search.shards`,
whose file naming this reuses): a file named `shard-00000.parquet` is complete and a rerun skips it. The manifest
(`teacher_scores.json`) records the data set's fingerprint, the shard size, the length limit and the teacher (its name, kind and its
scores of probe pairs), so a rerun with other rows, another shard size or length limit, or another teacher is refused instead of
mixing two runs' scores.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hfsiamese.search.shards.manifest import corpus_fingerprint
from hfsiamese.search.shards.shard_files import (
    SHARD_PATTERN,
    partial_files,
    partial_name,
    shard_path,
    write_table_whole,
)
from hfsiamese.utils.json_files import read_json_record

__all__ = [
    "SCORES_MANIFEST_NAME",
    "check_scores_folder",
    "read_score_shard",
    "remove_score_shards",
    "rows_fingerprint",
    "write_score_shard",
]

SCORES_MANIFEST_NAME = "teacher_scores.json"
FORMAT_VERSION = 1
PROBE_TOLERANCE = 1e-3  # the same teacher on CPU and GPU agrees far closer; another teacher does not
_KEYS = ("format_version", "num_rows", "rows_sha256", "shard_size", "max_length", "teacher")


def rows_fingerprint(rows: list[list[str]]) -> str:
    """sha256 over every row's texts (query, positive, negatives), in order."""
    return corpus_fingerprint(["\x1f".join(texts) + f"\x1e{len(texts)}" for texts in rows])


def check_scores_folder(shards_dir: Path, expected: dict[str, Any]) -> None:
    """Write the manifest into a new folder, or refuse one whose manifest differs from `expected` (saying how)."""
    if shards_dir.exists() and not shards_dir.is_dir():
        raise FileExistsError(f"{shards_dir} exists and is not a folder")
    shards_dir.mkdir(parents=True, exist_ok=True)
    file = shards_dir / SCORES_MANIFEST_NAME
    remedy = f"score into another folder, or delete {shards_dir} to start over"
    if not file.is_file():
        if any(shards_dir.glob(SHARD_PATTERN)):
            raise FileExistsError(f"{shards_dir} holds shard files but no {SCORES_MANIFEST_NAME}: {remedy}")
        partial = partial_name(file)
        partial.write_text(json.dumps({"format_version": FORMAT_VERSION, **expected}, indent=2) + "\n", "utf-8")
        os.replace(partial, file)
        return
    saved = read_json_record(file, _KEYS, kind="a teacher scores manifest", remedy=remedy)
    difference = _difference(saved, expected)
    if difference:
        raise ValueError(f"{shards_dir} holds teacher scores of {difference}: {remedy}")


def _difference(saved: dict[str, Any], expected: dict[str, Any]) -> str | None:
    if saved["format_version"] != FORMAT_VERSION:
        return f"format version {saved['format_version']} (this hfsiamese writes {FORMAT_VERSION})"
    if (saved["num_rows"], saved["rows_sha256"]) != (expected["num_rows"], expected["rows_sha256"]):
        return f"other rows ({saved['num_rows']} rows, sha256 {saved['rows_sha256'][:12]})"
    if saved["shard_size"] != expected["shard_size"]:
        return f"shard_size={saved['shard_size']} (pass that shard size to resume)"
    if saved["max_length"] != expected["max_length"]:
        return f"max_length={saved['max_length']} (pass that max_length to resume)"
    if saved.get("dtype") != expected.get("dtype"):  # manifests written without a dtype: float32
        bf16 = saved.get("dtype") == "bfloat16"
        return (
            f"a teacher run in {saved.get('dtype') or 'float32'} ({'pass' if bf16 else 'leave out'} --bf16 to resume)"
        )
    before, now = saved["teacher"], expected["teacher"]
    same_kind = before.get("kind") == now["kind"] and len(before.get("probe_scores", [])) == len(now["probe_scores"])
    if not same_kind or not np.allclose(before["probe_scores"], now["probe_scores"], atol=PROBE_TOLERANCE, rtol=0):
        return f"another teacher ({before.get('kind')} {before.get('name_or_path')!r}, not {now['name_or_path']!r})"
    return None


def write_score_shard(shards_dir: Path, index: int, start: int, scores: list[list[float]]) -> Path:
    """Shard `index` (rows `start`, `start + 1`, ...) written beside its final name, flushed, moved into place."""
    table = pa.table(
        {
            "row": pa.array(np.arange(start, start + len(scores), dtype=np.int64)),
            "teacher_scores": pa.array(scores, type=pa.list_(pa.float32())),
        }
    )
    return write_table_whole(table, shard_path(shards_dir, index))


def read_score_shard(path: Path, rows: range) -> list[list[float]]:
    """The scores of a shard file, checked to hold exactly `rows`."""
    remedy = "delete it and run the scoring again, which recomputes it"
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as err:
        raise ValueError(f"{path} cannot be read as Parquet ({err}); {remedy}") from err
    if table.schema.names != ["row", "teacher_scores"]:
        raise ValueError(f"{path} should have the columns row and teacher_scores, found {table.schema.names}; {remedy}")
    found = table.column("row").to_numpy()
    if len(found) != len(rows) or (len(found) and (found[0] != rows.start or np.any(np.diff(found) != 1))):
        raise ValueError(f"{path} should hold rows {rows.start} to {rows.stop - 1}; {remedy}")
    return table.column("teacher_scores").to_pylist()


def remove_score_shards(shards_dir: Path) -> None:
    """Remove a finished run's manifest, shards and leftovers, and the folder if nothing else is in it."""
    for path in [shards_dir / SCORES_MANIFEST_NAME, *shards_dir.glob(SHARD_PATTERN), *partial_files(shards_dir)]:
        path.unlink(missing_ok=True)
    if not any(shards_dir.iterdir()):
        shards_dir.rmdir()
