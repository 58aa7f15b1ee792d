"""
Preparation's parallel stages on Ray (`prepare_pairs(engine="ray")`, `hfsiamese prepare --engine ray`): the hashing
of the questions and the writing of the shards run as Ray tasks over row ranges, on this machine or on a cluster; the
reading and the global assignment (repeats, split, groups) stay in the driver, on its compact arrays.

The driver sends each task its rows through Ray's object store (a task never reads the pair file or the datasets
cache), and the tasks write the shards into the output folder themselves: on a cluster, that folder must be on a
filesystem every node sees at the same path. A task on a node where it is not refuses before writing, naming the
node. The tasks call the same row functions as the local engine (`pair_rows`), so the shards are the same bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
from tqdm.auto import tqdm

from hfsiamese.data.arrow_batches import ChunkedRows
from hfsiamese.preparation.pair_rows import hash_batch, identity_columns, shard_table
from hfsiamese.preparation.shards import write_shard
from hfsiamese.utils.extras import install_hint
from hfsiamese.utils.ray_usage_stats import ray_usage_stats_off_unless_chosen

__all__ = ["HASH_ROWS", "RayPreparation", "SharedFolderError", "check_shared_folder", "import_ray"]

logger = logging.getLogger(__name__)

HASH_ROWS = 50_000  # rows per hashing task: big enough that a task's overhead is small, small enough to spread


class SharedFolderError(RuntimeError):
    """A Ray task on a node that does not see the driver's output folder (no shared filesystem there)."""


def import_ray() -> Any:
    """The `ray` module, or an ImportError naming the extra that installs it."""
    try:
        import ray
    except ImportError as err:
        raise ImportError(
            f"prepare_pairs(engine='ray') (--engine ray) needs Ray: {install_hint('ray')}; or leave the engine "
            "local (--preprocessing_num_workers processes on this machine)"
        ) from err
    return ray


def check_shared_folder(started_file: Path, started: str) -> None:
    """
    Refuse, naming this node, when `started_file` (the folder's `preparation.json`) does not hold what the driver
    wrote: the task runs where the output folder is not the driver's (a local disk, not a shared one).
    """
    held = started_file.read_text(encoding="utf-8") if started_file.is_file() else None
    if held == started:
        return
    import ray.util

    what = "does not exist" if held is None else "holds another preparation"
    raise SharedFolderError(
        f"--output_dir {started_file.parent} {what} on Ray node {ray.util.get_node_ip_address()}: the output folder "
        "must be on a filesystem every Ray node sees at the same path (NFS, a shared volume)"
    )


class RayPreparation:
    """
    Stages 2 and 4 of the preparation whose folder holds `started_file` (its `preparation.json`, already written), as
    Ray tasks: on the local Ray it starts (`num_proc` CPUs; all of this machine's when None) and stops after, or on the
    cluster at `address` it connects to, or on the Ray this process already runs (used, left running). `num_proc` also
    caps the tasks that run at once (default: the cluster's CPUs).
    """

    def __init__(self, started_file: Path, address: str | None = None, num_proc: int | None = None) -> None:
        self._ray = import_ray()
        self._started_file = started_file
        self._started_text = started_file.read_text(encoding="utf-8")  # what every task must see there too
        self._address = address
        self._num_proc = num_proc
        self._started = False
        self._in_flight = 1

    def __enter__(self) -> RayPreparation:
        ray = self._ray
        if not ray.is_initialized():
            with ray_usage_stats_off_unless_chosen():
                if self._address is None:
                    ray.init(num_cpus=self._num_proc, include_dashboard=False, logging_level=logging.WARNING)
                else:
                    ray.init(address=self._address, logging_level=logging.WARNING)
            self._started = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        # Twice the tasks that can run: the next ones' rows are in the object store when a task ends.
        self._in_flight = 2 * max(1, min(cpus, self._num_proc or cpus))
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._started:
            self._ray.shutdown()

    def hash_questions(self, pairs: datasets.Dataset) -> tuple[np.ndarray, np.ndarray]:
        """Stage 2: (hash1, hash2) of every pair, in row order, hashed by tasks of `HASH_ROWS` rows."""
        keys = pairs.data.table.select(identity_columns(pairs.column_names))
        ranges = [(start, min(start + HASH_ROWS, len(keys))) for start in range(0, len(keys), HASH_ROWS)]
        task = self._ray.remote(num_cpus=1)(_hash_rows)

        def submit(bounds: tuple[int, int]) -> Any:
            return task.remote(_rows(keys, np.arange(*bounds)), str(self._started_file), self._started_text)

        hashed: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        with tqdm(total=len(keys), desc="Hashing questions (Ray)", unit="pairs") as progress:
            for index, result in self._run(submit, ranges):
                hashed[index] = result
                progress.update(ranges[index][1] - ranges[index][0])
        in_order = [hashed[index] for index in range(len(ranges))]
        empty = np.zeros(0, dtype=np.uint64)
        hash1 = np.concatenate([empty] + [pair[0] for pair in in_order])
        hash2 = np.concatenate([empty] + [pair[1] for pair in in_order])
        return hash1, hash2

    def write_shards(
        self, pairs: datasets.Dataset, todo: list[tuple[Path, np.ndarray, np.ndarray | None]]
    ) -> Iterator[dict[str, Any]]:
        """Stage 4: each (path, rows of `pairs`, groups) written as a shard by a task; their records as they end."""
        task = self._ray.remote(num_cpus=1)(_write_rows)
        table = pairs.data.table

        def submit(item: tuple[Path, np.ndarray, np.ndarray | None]) -> Any:
            path, rows, groups = item
            return task.remote(_rows(table, rows), groups, str(path), str(self._started_file), self._started_text)

        for _, record in self._run(submit, todo):
            yield record

    def _run(self, submit: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """
        `submit(item)` for each item, at most `_in_flight` at a time (so the driver holds a bounded share of the rows
        in the object store); (index, result) as the tasks end. A task's error is raised as itself, not wrapped.
        """
        ray = self._ray
        pending: dict[Any, int] = {}
        try:
            for index, item in enumerate(items):
                while len(pending) >= self._in_flight:
                    yield self._finish_one(pending)
                pending[submit(item)] = index
            while pending:
                yield self._finish_one(pending)
        except BaseException:
            for ref in pending:
                ray.cancel(ref)
            raise

    def _finish_one(self, pending: dict[Any, int]) -> tuple[int, Any]:
        ray = self._ray
        (done,), _ = ray.wait(list(pending), num_returns=1)
        index = pending.pop(done)
        try:
            return index, ray.get(done)
        except ray.exceptions.RayTaskError as err:
            cause = getattr(err, "cause", None)
            if isinstance(cause, Exception):
                raise cause from None  # the task's own one-line error, not Ray's traceback around it
            raise


def _rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    # A copy of just these rows: a slice of the memory-mapped table would carry its whole buffers into the object store.
    return ChunkedRows(table).take(rows)


def _hash_rows(keys: pa.Table, started_file: str, started: str) -> tuple[np.ndarray, np.ndarray]:
    """A Ray task (made one in `RayPreparation.hash_questions`): the identity hashes of a range of rows."""
    check_shared_folder(Path(started_file), started)
    hashed = hash_batch(keys)
    return hashed.column("hash1").to_numpy(), hashed.column("hash2").to_numpy()


def _write_rows(
    rows: pa.Table, groups: np.ndarray | None, path: str, started_file: str, started: str
) -> dict[str, Any]:
    """A Ray task (made one in `RayPreparation.write_shards`): one shard written into the shared output folder."""
    check_shared_folder(Path(started_file), started)
    return write_shard(shard_table(rows, groups), Path(path))
