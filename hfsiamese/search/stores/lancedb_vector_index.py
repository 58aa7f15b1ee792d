"""
An approximate vector index on a `LanceDBStore` table (LanceDB's IVF indexes), tuned to a recall target the way a
FAISS store's index is (`recall_tuning`).

Why: the store's exact search reads every vector for each query, 0.08 s at 100k rows and 0.7 s at 1M on 2 cores, so a
writable service over a site's whole history cannot answer in time. An IVF index (the vectors split into partitions
around k-means centres; a query searches the `nprobes` nearest partitions) answers in milliseconds; rows added after
it was built are searched exactly beside it (LanceDB scans the unindexed rows), and the compaction after many writes
(`lancedb_maintenance`) folds them into it, so an add is searchable at once either way.

What a partition keeps (`CODES`): float32 copies of the vectors (`"flat"`, the default), int8 scalar codes (`"sq"`)
or product-quantised codes (`"pq"`), the last two re-scored on the stored vectors (`refine_factor` candidates per
match asked for). Measured on 100k questions embedded by the LSTM recipe (256 dimensions, near-copy clusters), to the
default target: flat reached it searching 128 of 316 partitions, built in 15 s, 9.9 ms a query; int8 codes the same
partitions, 20 s, 14.2 ms (the refine step reads vectors row by row); product codes (32 sub-vectors) only with every
partition and 32x refining, 86 s, 28 ms, and 0.84 with 8x. So flat is the default: its copy of the vectors is the
price (the table's size again on disk). At 1M questions of the same model, flat partitions reached the target
probing 256 of 1,000: 30 ms a query against 656 ms exactly, 0.99 of the exact top 10 found for held-out texts (the
estimate: 0.966), built and tuned in 100 s.

Built on request (`LanceDBStore.build_vector_index`, `DuplicateIndex.build_vector_index`, `hfsiamese search
--vector_index`), since the k-means training reads the whole table, which no write should wait for. The search side
is chosen by measurement: `nprobes` climbs `NPROBES_LADDER` until the recall measured on the table's own sample
(`recall_tuning.RecallProbe`: rows of the table and between-row queries, the lower kind's one-sided 95% bound)
reaches `recall_target`; the settings and the figures are kept in the table's schema (`SETTINGS_KEY` of the vector
field's metadata), so every process that opens the table searches alike. A filtered search stays exact: LanceDB
filters before the search there, which keeps the `k` results whole.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hfsiamese.search.stores.lancedb_columns import (
    KEY,
    VECTOR,
    by_query,
    schema_json,
    vector_array,
    write_table_metadata,
)
from hfsiamese.search.stores.lancedb_connection import import_lancedb
from hfsiamese.search.stores.lancedb_filters import in_list
from hfsiamese.search.stores.recall_tuning import (
    DEFAULT_RECALL_TARGET,
    RECALL_K,
    RecallProbe,
    between_queries,
    between_rows,
    check_recall_target,
    latencies_ms,
    sample_rows,
)

logger = logging.getLogger("hfsiamese.search.stores.lancedb_store")

SETTINGS_KEY = "hfsiamese_vector_index"  # beside `lancedb_columns.METADATA_KEY` in the vector field's metadata
NPROBES_LADDER = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
# The partitions are learned, and searched, by the store's own metric on its unit vectors. Cosine partitions (spherical
# k-means) were measured no better at 1M LSTM-recipe questions: 192 or 256 of 1,000 probed for the target, against 256.
DISTANCE = "dot"
DEFAULT_REFINE_FACTOR = 8  # codes: candidates re-scored on their float vectors per match asked for (FAISS: 8x)
# What the index keeps of each vector in its partitions: "flat" (float32 copies), "sq" (int8 scalar codes) or "pq"
# (product-quantised codes); the refine step re-scores the best candidates on the stored vectors for the last two.
CODES = ("flat", "sq", "pq")
DEFAULT_CODES = "flat"
MIN_ROWS = 1_000  # product quantisation learns 256 codes per sub-vector: below this, exact search is cheap anyway
_QUERY_BATCH = 256


@dataclass(frozen=True)
class VectorIndexSettings:
    """How the table's IVF index was built and is searched, and what it measured when it was built."""

    codes: str
    num_partitions: int
    num_sub_vectors: int | None  # product quantisation's only
    nprobes: int
    refine_factor: int | None  # None: no refine step (flat copies score exactly)
    rows: int  # rows in the table when the index was built
    recall_target: float | None
    recall: float | None  # the one-sided 95% lower bound the target is compared with (None: not measured)
    recall_sample: float | None  # the sample's own figure
    latency_ms: float | None  # median of single searches of the sample at these settings, while it was built
    build_seconds: float


def read_settings(schema: Any) -> VectorIndexSettings | None:
    """The settings kept in a table's schema, or None (no vector index built by this store)."""
    stored = schema_json(schema, SETTINGS_KEY)
    return VectorIndexSettings(**stored) if stored is not None else None


def searched_by_index(query: Any, settings: VectorIndexSettings | None, filtered: bool) -> Any:
    """A LanceDB vector query set to search through the index (`settings`), or exactly without one or with a filter."""
    if settings is None or filtered:
        return query.bypass_vector_index()
    return _through_index(settings.nprobes, settings.refine_factor)(query)


def default_num_partitions(num_rows: int) -> int:
    """About sqrt(rows) partitions, LanceDB's advice, and at least ~40 rows in each."""
    return int(max(1, min(round(num_rows**0.5), num_rows // 40)))


def default_num_sub_vectors(dim: int) -> int:
    """Sub-vectors of about 8 dimensions: the largest divisor of `dim` that is at most dim / 8 (at least 1)."""
    return max(s for s in range(1, max(1, dim // 8) + 1) if dim % s == 0)


def build_vector_index(
    table: Any,
    *,
    where: str,
    recall_target: float | None = DEFAULT_RECALL_TARGET,
    num_partitions: int | None = None,
    num_sub_vectors: int | None = None,
    codes: str = DEFAULT_CODES,
    refine_factor: int | None = None,
    nprobes: int | None = None,
) -> VectorIndexSettings:
    """
    Build (or replace) the table's IVF index on its vectors (`codes`: what its partitions keep), choose `nprobes` by
    measurement unless given (with `recall_target=None` nothing is measured: `nprobes`, else the ladder's first), and
    keep the settings in the table's schema. Refused in one line, before anything is written, below `MIN_ROWS` rows
    or with settings that cannot be built.
    """
    recall_target = check_recall_target(recall_target)
    num_rows, dim = table.count_rows(), table.schema.field(VECTOR).type.list_size
    partitions = default_num_partitions(num_rows) if num_partitions is None else num_partitions
    sub_vectors = default_num_sub_vectors(dim) if num_sub_vectors is None else num_sub_vectors
    if refine_factor is None and codes != "flat":
        refine_factor = DEFAULT_REFINE_FACTOR
    _check_options(where, num_rows, dim, partitions, sub_vectors, codes, refine_factor, nprobes)
    started = time.perf_counter()
    index = import_lancedb().index
    if codes == "pq":
        config = index.IvfPq(distance_type=DISTANCE, num_partitions=partitions, num_sub_vectors=sub_vectors)
    else:
        config = (index.IvfSq if codes == "sq" else index.IvfFlat)(distance_type=DISTANCE, num_partitions=partitions)
    table.create_index(VECTOR, config=config, replace=True)
    ladder = [nprobes] if nprobes is not None else [n for n in NPROBES_LADDER if n < partitions] + [partitions]
    chosen, measured = _tuned_nprobes(table, ladder, refine_factor, recall_target)
    settings = VectorIndexSettings(
        codes=codes,
        num_partitions=partitions,
        num_sub_vectors=sub_vectors if codes == "pq" else None,
        nprobes=chosen,
        refine_factor=refine_factor,
        rows=num_rows,
        recall_target=recall_target,
        build_seconds=round(time.perf_counter() - started, 1),
        **measured,
    )
    write_table_metadata(table, asdict(settings), SETTINGS_KEY)
    if recall_target is not None and (settings.recall or 0.0) < recall_target:
        logger.warning(
            "the vector index of %s reaches recall %.3f (95%% lower bound) probing %d of %d partitions, under the "
            "target %.3f: more partitions, other codes or a larger refine_factor, or a lower recall_target",
            where,
            settings.recall,
            settings.nprobes,
            partitions,
            recall_target,
        )
    return settings


def _check_options(
    where: str, num_rows: int, dim: int, partitions: Any, sub_vectors: Any, codes: Any, refine_factor: Any, nprobes: Any
) -> None:
    if num_rows < MIN_ROWS:
        raise ValueError(
            f"the LanceDB table at {where} holds {num_rows} rows: a vector index needs at least {MIN_ROWS} "
            "(below that, exact search is already fast)"
        )
    for name, value, bound in (
        ("num_partitions", partitions, num_rows),
        ("nprobes", 1 if nprobes is None else nprobes, 1 << 20),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= bound:
            raise ValueError(f"{name} must be an int from 1 to {bound}, got {value!r}")
    if codes not in CODES:
        raise ValueError(f"codes must be one of {CODES}, got {codes!r}")
    if isinstance(sub_vectors, bool) or not isinstance(sub_vectors, int) or sub_vectors < 1 or dim % sub_vectors:
        raise ValueError(f"num_sub_vectors must divide the embedding dimension {dim}, got {sub_vectors!r}")
    if refine_factor is not None and (
        isinstance(refine_factor, bool) or not isinstance(refine_factor, int) or refine_factor < 1
    ):
        raise ValueError(f"refine_factor must be a positive int (or None: no refine step), got {refine_factor!r}")


def _tuned_nprobes(
    table: Any, ladder: list[int], refine_factor: int | None, recall_target: float | None
) -> tuple[int, dict[str, float | None]]:
    """The first `nprobes` of the ladder whose measured recall reaches the target (else the last), with its figures."""
    if recall_target is None:
        return ladder[0], {"recall": None, "recall_sample": None, "latency_ms": None}
    sample = _Sample(table)
    for step, nprobes in enumerate(ladder):
        through_index = _through_index(nprobes, refine_factor)
        found = sample.search(through_index)
        probe = sample.probe(found)
        figures = {"recall": round(probe.recall_bound(sample.rows_of(found)), 4)}
        figures["recall_sample"] = round(probe.recall(sample.rows_of(found)), 4)
        if figures["recall"] >= recall_target or step == len(ladder) - 1:
            latency = sample.latency_ms(through_index)
            return nprobes, {**figures, "latency_ms": latency}
    raise AssertionError("unreachable: the ladder's last step returns")  # pragma: no cover


def _through_index(nprobes: int, refine_factor: int | None) -> Callable[[Any], Any]:
    if refine_factor is None:
        return lambda query: query.distance_type(DISTANCE).nprobes(nprobes)
    return lambda query: query.distance_type(DISTANCE).nprobes(nprobes).refine_factor(refine_factor)


class _Sample:
    """The measurement's queries (table rows, drawn seeded, and between-row queries, as `recall_tuning` draws them)
    and their exact top k from the table's own exact search; rows are numbered here by first sight of their key."""

    def __init__(self, table: Any) -> None:
        self.table = table
        num_rows = table.count_rows()
        positions = sample_rows(num_rows)
        first, second = between_rows(num_rows)
        wanted = np.unique(np.concatenate([positions, first, second]))
        keys, vectors = _rows_at(table, wanted)
        at = {int(p): i for i, p in enumerate(wanted)}
        self.queries = np.concatenate(
            [
                vectors[[at[p] for p in positions]],
                between_queries(*(vectors[[at[p] for p in r]] for r in (first, second))),
            ]
        ).astype(np.float32)
        self.numbers: dict[str, int] = {}
        self.vectors: list[np.ndarray] = []
        self._remember(keys, vectors)
        own_keys = [keys[at[p]] for p in positions] + [None] * len(first)
        self.own_rows = np.array([self.numbers[k] if k else -1 for k in own_keys], dtype=np.int64)
        self.exact = self.search(lambda query: query.bypass_vector_index())

    def search(self, configure: Callable[[Any], Any]) -> list[list[str]]:
        """Each query's k + 1 best keys (its own row may be one), through `configure`d LanceDB queries."""
        found: list[list[str]] = []
        for start in range(0, len(self.queries), _QUERY_BATCH):
            chunk = self.queries[start : start + _QUERY_BATCH]
            query = self.table.search(chunk if len(chunk) > 1 else chunk[0], vector_column_name=VECTOR)
            result = configure(query.distance_type("dot")).limit(RECALL_K + 1).select([KEY, "_distance"]).to_arrow()
            numbers, order = by_query(result)
            keys = result.column(KEY).to_pylist()
            lists: list[list[str]] = [[] for _ in range(len(chunk))]
            for i in order:
                lists[numbers[i]].append(keys[i])
            found.extend(lists)
        unseen = sorted({key for keys in found for key in keys} - self.numbers.keys())
        if unseen:
            self._remember(*_rows_by_key(self.table, unseen))
        return found

    def rows_of(self, found: list[list[str]]) -> np.ndarray:
        rows = np.full((len(found), RECALL_K + 1), -1, dtype=np.int64)
        for i, keys in enumerate(found):
            rows[i, : len(keys)] = [self.numbers[key] for key in keys]
        return rows

    def probe(self, found: list[list[str]]) -> RecallProbe:
        """The probe of the exact lists (own rows left out), able to score the rows of `found` too."""
        exact = self.rows_of(self.exact)
        keep = (exact >= 0) & (exact != self.own_rows[:, None])
        order = np.argsort(~keep, axis=1, kind="stable")[:, :RECALL_K]
        exact_rows = np.where(np.take_along_axis(keep, order, axis=1), np.take_along_axis(exact, order, axis=1), -1)
        table = np.stack(self.vectors)
        return RecallProbe(self.own_rows, self.queries, exact_rows, lambda rows: table[rows])

    def latency_ms(self, configure: Callable[[Any], Any]) -> float:
        """Median ms of the sample's queries searched one at a time (`recall_tuning.latencies_ms`: after a warm-up,
        as many as its time budget allows), results read as the store's search reads them."""

        def search_one(vector: np.ndarray) -> None:
            query = self.table.search(vector[0], vector_column_name=VECTOR).distance_type("dot")
            configure(query).limit(RECALL_K).select([KEY, "_distance"]).to_arrow()

        return latencies_ms(search_one, self.queries)[0]

    def _remember(self, keys: list[str], vectors: np.ndarray) -> None:
        for key, vector in zip(keys, vectors):
            if key not in self.numbers:
                self.numbers[key] = len(self.vectors)
                self.vectors.append(np.asarray(vector, dtype=np.float32))


def _rows_at(table: Any, positions: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The keys and vectors at these storage positions (sorted), read in one pass over the table."""
    keys: list[str] = []
    vectors: list[np.ndarray] = []
    offset = 0
    for batch in table.search().select([KEY, VECTOR]).to_batches(65_536):
        inside = positions[(positions >= offset) & (positions < offset + batch.num_rows)] - offset
        if len(inside):
            picked = batch.take(inside)
            keys += picked.column(KEY).to_pylist()
            vectors.append(vector_array(picked.column(VECTOR), picked.schema.field(VECTOR).type.list_size))
        offset += batch.num_rows
    return keys, np.concatenate(vectors)


def _rows_by_key(table: Any, keys: list[str]) -> tuple[list[str], np.ndarray]:
    found = table.search().where(in_list(KEY, keys)).select([KEY, VECTOR]).to_arrow()
    return found.column(KEY).to_pylist(), vector_array(found.column(VECTOR), found.schema.field(VECTOR).type.list_size)


__all__ = [
    "CODES",
    "DEFAULT_CODES",
    "DEFAULT_REFINE_FACTOR",
    "MIN_ROWS",
    "NPROBES_LADDER",
    "SETTINGS_KEY",
    "VectorIndexSettings",
    "build_vector_index",
    "read_settings",
    "searched_by_index",
]
