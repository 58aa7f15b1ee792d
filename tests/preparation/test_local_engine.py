"""The shard writers take their rows chunk by chunk: a pair file whose question column passes 2 GiB of text (about 30
million QQP-like pairs) made Arrow's `take` over the whole column overflow its 32-bit string offsets, and
`hfsiamese prepare` failed at 40 million pairs after its first stages ("offset overflow while concatenating arrays")."""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow as pa
from datasets.table import InMemoryTable

from hfsiamese.preparation.local_engine import LocalPreparation
from hfsiamese.preparation.ray_engine import _rows as ray_task_rows

ROWS_PER_CHUNK, WIDTH = 10_000_000, 110  # two chunks of 1.1 GB of text each: together past 2 GiB


def huge_column() -> pa.ChunkedArray:
    """Two chunks of `ROWS_PER_CHUNK` strings of `WIDTH` NUL characters, their text never touched: the allocation is
    virtual (zero pages), so the test holds about 80 MB of offsets, not 2.2 GB."""

    def chunk() -> pa.Array:
        offsets = pa.py_buffer((np.arange(ROWS_PER_CHUNK + 1, dtype=np.int32) * WIDTH).tobytes())
        return pa.Array.from_buffers(
            pa.string(), ROWS_PER_CHUNK, [None, offsets, pa.allocate_buffer(ROWS_PER_CHUNK * WIDTH)]
        )

    return pa.chunked_array([chunk(), chunk()])


def huge_pairs() -> pa.Table:
    column = huge_column()
    labels = pa.chunked_array([pa.array(np.ones(ROWS_PER_CHUNK, dtype=np.int64))] * 2)
    return pa.table({"question1": column, "question2": column, "label": labels})


# rows from both chunks, ascending as a split's rows are
ROWS = np.array([3, ROWS_PER_CHUNK - 1, ROWS_PER_CHUNK + 7, 2 * ROWS_PER_CHUNK - 1], dtype=np.int64)


def test_a_shard_of_rows_across_a_text_column_past_2_gib_is_written(tmp_path):
    pairs = datasets.Dataset(InMemoryTable(huge_pairs()), fingerprint="huge")  # (not hashed: it would read 2 GiB)
    groups = np.arange(len(ROWS), dtype=np.int64)
    (record,) = LocalPreparation().write_shards(pairs, [(tmp_path / "train-00000.arrow", ROWS, groups)])
    assert record["rows"] == len(ROWS)
    with pa.memory_map(str(tmp_path / "train-00000.arrow")) as source:
        shard = pa.ipc.open_stream(source).read_all()
    assert shard.column("question1").to_pylist() == ["\0" * WIDTH] * len(ROWS)
    assert shard.column("group_id").to_pylist() == groups.tolist()


def test_the_ray_task_rows_are_taken_chunk_by_chunk_too():
    taken = ray_task_rows(huge_pairs(), ROWS)
    assert taken.num_rows == len(ROWS) and taken.column("label").to_pylist() == [1] * len(ROWS)
