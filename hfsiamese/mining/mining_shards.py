"""
The shards folder of a mining run (`mine_negatives(..., shards_dir=...)`): what makes it resumable and safe to resume.

    mining.json              format version, the run's settings (questions, queries, filters, search, cross-encoder,
                             chunk size) and the sha256 of embeddings/shards.json (the model and corpus it embedded)
    embeddings/              the questions' embeddings in resumable shards (`hfsiamese.search.shards`)
    negatives/shard-00000.parquet   one query chunk's result (`query_chunk_size` queries), moved into place whole

A run stopped anywhere (a crash, a SIGKILL, Ctrl-C) and run again with the same arguments skips the embedding shards
and the query chunks it finished. The settings are checked before any encoding, so a rerun with other pairs, filters,
search or cross-encoder is refused instead of mixing two runs' negatives; the embeddings' manifest is checked by the
encoding itself (another model is refused there) and its digest here, so chunks searched with other embeddings are
never reused.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hfsiamese.search.embedding_input import ASSEMBLED_NAME
from hfsiamese.search.shards.manifest import MANIFEST_NAME as EMBEDDINGS_MANIFEST_NAME
from hfsiamese.search.shards.shard_files import (
    SHARD_PATTERN,
    partial_name,
    remove_partial_files,
    shard_path,
    write_table_whole,
)
from hfsiamese.utils.json_files import read_json_record

__all__ = [
    "MINING_MANIFEST_NAME",
    "ChunkResult",
    "MiningFolder",
    "codes_fingerprint",
]

MINING_MANIFEST_NAME = "mining.json"
FORMAT_VERSION = 1
PROBE_TOLERANCE = 1e-3  # the same cross-encoder on CPU and GPU agrees far closer; another one does not
_KEYS = ("format_version", "settings", "embeddings_sha256")

# One chunk's result: negative codes (queries, n), positive scores (queries,), negative scores (queries, n), and the
# cross-encoder's scores (queries, 1 + n) or None.
ChunkResult = tuple[np.ndarray, np.ndarray, np.ndarray, "np.ndarray | None"]


def codes_fingerprint(*arrays: np.ndarray) -> str:
    """sha256 over integer or boolean arrays (their dtype, shape and bytes), in order."""
    digest = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


class MiningFolder:
    """A mining run's shards folder: its manifest checked or written, its chunks written, read and removed."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.embeddings_dir = self.path / "embeddings"
        self.negatives_dir = self.path / "negatives"
        self.manifest = self.path / MINING_MANIFEST_NAME
        self.remedy = f"mine into another --shards_dir, or delete {self.path} to start over"

    def check_settings(self, settings: dict[str, Any]) -> None:
        """Refuse, before any work, a folder that is not one or holds another run (saying what differs)."""
        if self.path.exists() and not self.path.is_dir():
            raise FileExistsError(f"{self.path} exists and is not a folder")
        saved = self._saved()
        if saved is None:
            if self.negatives_dir.is_dir() and any(self.negatives_dir.glob(SHARD_PATTERN)):
                raise FileExistsError(f"{self.path} holds mined chunks but no {MINING_MANIFEST_NAME}: {self.remedy}")
            return
        difference = _difference(saved["settings"], _normalised(settings))
        if difference:
            raise ValueError(f"{self.path} holds a mining run of {difference}: {self.remedy}")

    def start_search(self, settings: dict[str, Any]) -> None:
        """Once the embeddings are complete: record them with the settings, or refuse chunks searched on others."""
        embeddings = hashlib.sha256((self.embeddings_dir / EMBEDDINGS_MANIFEST_NAME).read_bytes()).hexdigest()
        saved = self._saved()
        if saved is not None:
            if saved["embeddings_sha256"] != embeddings:
                raise ValueError(
                    f"{self.negatives_dir} holds chunks searched on other embeddings than {self.embeddings_dir}: "
                    f"{self.remedy}"
                )
            return
        record = {"format_version": FORMAT_VERSION, "settings": _normalised(settings), "embeddings_sha256": embeddings}
        self.negatives_dir.mkdir(parents=True, exist_ok=True)
        partial = partial_name(self.manifest)
        try:
            partial.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            os.replace(partial, self.manifest)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise

    def finished(self, chunk: int) -> bool:
        return shard_path(self.negatives_dir, chunk).is_file()

    def count_finished(self, total: int) -> int:
        return sum(self.finished(chunk) for chunk in range(total))

    def write_chunk(self, chunk: int, result: ChunkResult) -> None:
        """Chunk `chunk`'s result, written beside its final name and moved into place whole."""
        negative_codes, positive_scores, negative_scores, cross = result
        columns = {
            "negative_codes": _matrix(negative_codes.astype(np.int64), pa.int64()),
            "positive_scores": pa.array(positive_scores.astype(np.float32)),
            "negative_scores": _matrix(negative_scores.astype(np.float32), pa.float32()),
        }
        if cross is not None:
            columns["cross_encoder_scores"] = _matrix(cross.astype(np.float32), pa.float32())
        write_table_whole(pa.table(columns), shard_path(self.negatives_dir, chunk))

    def read_chunk(self, chunk: int, num_queries: int, num_negatives: int, rescored: bool) -> ChunkResult:
        """Chunk `chunk`'s result, checked to hold `num_queries` rows of `num_negatives` negatives."""
        path = shard_path(self.negatives_dir, chunk)
        remedy = "delete it and run the mining again, which searches that chunk again"
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as err:
            raise ValueError(f"{path} cannot be read as Parquet ({err}); {remedy}") from err
        names = ["negative_codes", "positive_scores", "negative_scores"] + (
            ["cross_encoder_scores"] if rescored else []
        )
        if table.schema.names != names or table.num_rows != num_queries:
            raise ValueError(
                f"{path} should hold {num_queries} rows of {names}, found {table.num_rows} rows of "
                f"{table.schema.names}; {remedy}"
            )
        widths = {"negative_codes": num_negatives, "negative_scores": num_negatives}
        widths["cross_encoder_scores"] = 1 + num_negatives
        codes, negative_scores, *cross = (
            _unmatrix(table, name, widths[name], f"{path}: column {name} should be {widths[name]} wide; {remedy}")
            for name in names
            if name != "positive_scores"
        )
        positive_scores = table.column("positive_scores").to_numpy()
        return codes, positive_scores, negative_scores, (cross[0] if cross else None)

    def remove(self) -> None:
        """Remove a finished run's manifest, chunks, embedding shards and leftovers; the folder if nothing else is in it."""
        for folder, names in (
            (self.negatives_dir, [SHARD_PATTERN]),
            (self.embeddings_dir, [SHARD_PATTERN, EMBEDDINGS_MANIFEST_NAME, ASSEMBLED_NAME]),
            (self.path, [MINING_MANIFEST_NAME]),
        ):
            if not folder.is_dir():
                continue
            for pattern in names:
                for path in folder.glob(pattern):
                    path.unlink(missing_ok=True)
            remove_partial_files(folder)
            if folder != self.path and not any(folder.iterdir()):
                folder.rmdir()
        if self.path.is_dir() and not any(self.path.iterdir()):
            self.path.rmdir()

    def _saved(self) -> dict[str, Any] | None:
        if not self.manifest.is_file():
            return None
        saved = read_json_record(self.manifest, _KEYS, kind="a mining manifest", remedy=self.remedy)
        if saved["format_version"] != FORMAT_VERSION:
            raise ValueError(
                f"{self.manifest} has format version {saved['format_version']} (this hfsiamese writes "
                f"{FORMAT_VERSION}): {self.remedy}"
            )
        return saved


def _normalised(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings as they read back from JSON (tuples as lists), so a fresh run and a saved one compare alike."""
    return json.loads(json.dumps(settings))


def _difference(saved: dict[str, Any], expected: dict[str, Any]) -> str | None:
    """The first setting that differs, in words (with the flag that resumes, where one does); None where they agree."""
    for key in [*expected, *(key for key in saved if key not in expected)]:
        before, now = saved.get(key), expected.get(key)
        if key == "cross_encoder" and before is not None and now is not None:
            same = len(before["probe_scores"]) == len(now["probe_scores"]) and np.allclose(
                before["probe_scores"], now["probe_scores"], atol=PROBE_TOLERANCE, rtol=0
            )
            if same and {**before, "probe_scores": None} == {**now, "probe_scores": None}:
                continue
        elif before == now:
            continue
        if key.endswith("_sha256"):
            return f"other {key.removesuffix('_sha256')}"
        return f"{key}={json.dumps(before)} (this run: {json.dumps(now)})"
    return None


def _matrix(values: np.ndarray, value_type: pa.DataType) -> pa.FixedSizeListArray:
    width = values.shape[1]
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1), type=value_type), width)


def _unmatrix(table: pa.Table, name: str, width: int, error: str) -> np.ndarray:
    array = table.column(name).combine_chunks()
    if not pa.types.is_fixed_size_list(array.type) or array.type.list_size != width:
        raise ValueError(error)
    return array.flatten().to_numpy(zero_copy_only=False).reshape(len(array), width)
