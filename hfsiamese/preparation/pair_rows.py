"""
What preparation computes row by row, with no view of the other rows: each question's 64-bit identity hash (stage 2)
and a shard's table of pairs with their question keys (stage 4). Both engines (a local process pool, Ray tasks) call
these same functions on their share of the rows, which is why they write the same shards byte for byte.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from hfsiamese.data.question_identity import ID_COLUMNS, KEY_COLUMNS, fold_text

__all__ = ["hash_batch", "identity_columns", "shard_table"]


def identity_columns(column_names: list[str]) -> list[str]:
    """The columns a question's identity is read from: its ids when the pairs have them, else its text."""
    return list(ID_COLUMNS) if set(ID_COLUMNS) <= set(column_names) else ["question1", "question2"]


def hash_batch(batch: pa.Table) -> pa.Table:
    """The 64-bit hash of each question's identity (`question_ids.question_keys`: ids, else folded text)."""
    return pa.table({f"hash{side}": _hashes(key) for side, key in zip((1, 2), _keys(batch))})


def shard_table(rows: pa.Table, groups: np.ndarray | None) -> pa.Table:
    """The pairs of one shard (already taken, in order) with their question keys and, for training rows, groups."""
    shard = rows
    for key_name, key in zip(KEY_COLUMNS, _keys(rows)):
        shard = shard.append_column(key_name, key)
    if groups is not None:
        shard = shard.append_column("group_id", pa.array(groups, type=pa.int64()))
    return shard.combine_chunks()


def _keys(table: pa.Table) -> tuple[pa.ChunkedArray | pa.Array, pa.ChunkedArray | pa.Array]:
    """The identity columns of a batch of read pairs, as `question_ids.question_keys` gives them."""
    if set(ID_COLUMNS) <= set(table.column_names):
        return table.column("qid1").cast(pa.string()), table.column("qid2").cast(pa.string())
    return fold_text(table.column("question1")), fold_text(table.column("question2"))


def _hashes(keys: pa.ChunkedArray | pa.Array) -> np.ndarray:
    # pandas' hash of strings: SipHash with a fixed key, the same in every process and on every machine.
    return pd.util.hash_array(np.asarray(keys.to_numpy(zero_copy_only=False), dtype=object))
