"""
The upkeep of a LanceDB table after each write (`LanceDBStore`, in a folder or on object storage; LanceDB Cloud does
its own): compaction of the small fragments many adds leave, and a scalar index on the id keys once the table is large.

Many small adds: each `add` leaves at least one data file (a fragment) and a version. After an `add` or
`delete` that leaves `COMPACT_AFTER_SMALL_FRAGMENTS` or more fragments smaller than Lance's target of
1M rows, the table is compacted (`optimize`: small fragments merged into large ones, deleted rows
dropped, the id-key index brought up to date) and the files of versions older than `KEEP_OLD_VERSIONS`
are removed (until then the folder holds the rewritten rows twice). A compaction rewrites every small
fragment, up to ~1M rows (a few seconds); adds in batches of 10,000 compact about every 64th add.
The number of fragments barely changes search time (exact search reads every row anyway).

Id lookups: from `INDEX_KEYS_FROM` rows on, `id_key` gets a BTREE scalar index (built once, in well
under a second at 1M rows), so that `contains`, `delete` and the new-id check of `add` stop scanning
every key; rows added since it was built are scanned until the next compaction indexes them.
LanceDB Cloud does its own compaction and indexing, so neither is done there.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from hfsiamese.search.stores.base import import_engine
from hfsiamese.search.stores.lancedb_columns import KEY

logger = logging.getLogger("hfsiamese.search.stores.lancedb_store")  # the logger its lines have always come from

# Compact (`optimize`) after a write that leaves this many fragments smaller than Lance's target (1M rows).
COMPACT_AFTER_SMALL_FRAGMENTS = 64
# From this many rows on, `id_key` gets a BTREE index: `contains` / `delete` / the new-id check of `add` look
# ids up in it instead of scanning every key (rows added since the index was built are scanned; a compaction
# adds them to it).
INDEX_KEYS_FROM = 100_000
# What a compaction keeps of the older versions (another process may still be reading one).
KEEP_OLD_VERSIONS = timedelta(hours=1)


def maintain_table(table: Any, where: str) -> None:
    """
    Index the id keys once the table is large, and compact it when writes have left many small fragments. A failure
    (another process's commit won) is logged: the rows are safe, and the next write tries again.
    """
    stats = table.stats()
    small = stats["fragment_stats"]["num_small_fragments"]
    try:
        if stats["num_rows"] >= INDEX_KEYS_FROM and not any(KEY in index.columns for index in table.list_indices()):
            table.create_index(KEY, config=import_engine("lancedb", "lancedb", "lancedb").index.BTree(), replace=False)
        if small >= COMPACT_AFTER_SMALL_FRAGMENTS:
            # Also brings the id-key index up to date with the rows added since it was built.
            table.optimize(cleanup_older_than=KEEP_OLD_VERSIONS)
    except Exception as err:  # noqa: BLE001 (the write itself is committed: maintenance must not undo that)
        level = logging.INFO if "conflict" in str(err).lower() else logging.WARNING
        logger.log(
            level,
            "maintenance of %s (%d small fragments) failed, to be tried after a later write: %s",
            where,
            small,
            err,
        )


__all__ = ["COMPACT_AFTER_SMALL_FRAGMENTS", "INDEX_KEYS_FROM", "KEEP_OLD_VERSIONS", "maintain_table"]
