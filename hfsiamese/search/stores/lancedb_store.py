"""
Where a `DuplicateIndex(store="lancedb")` keeps its texts and embeddings: one LanceDB table, either
embedded in a folder (the Lance format on local disk, in-process, no server), on object storage that
several machines share (`s3://`, `gs://`, `az://` URIs, credentials from the environment), or on LanceDB
Cloud / Enterprise (a `db://` URI and an `api_key`), through the same code. The same API as
`qdrant_store.QdrantStore`: inserts and deletes without a rebuild, metadata filters at search time, and a
store that outlives the process; unlike Qdrant's local mode it holds millions of rows in a folder.

Layout of the table (`DEFAULT_COLLECTION` unless told):

    one row per text
        id_key    "int:<id>" or "str:<id>", never null: the int 5 and the str "5" are two rows, and
                  `contains` / `delete` / a filter on "id" are an `id_key IN (...)` filter
        id_int    the caller's id when it is an int (int64), else null
        id_str    the caller's id when it is a str, else null
        text      the text
        vector    fixed_size_list<float32>[dim]: the L2-normalised embedding (normalised here, so that
                  what `iter_rows` gives back is exactly what is searched)
        <field>   one column per metadata field, typed by the first non-null values seen: bool, int64,
                  float64 (ints and floats mixed), string, or a list of one of these
    field metadata of `vector`, key "hfsiamese"
              a small JSON dict (`get_metadata` / `set_metadata`): the index config (model fingerprint,
              threshold) travels with the table, and no reserved row has to be hidden from `len`,
              `search` or `iter_rows`.

The index's duplicate groups are in a second table, `<collection>__groups` (`lancedb_groups`).

How it behaves (lancedb 0.40; figures at the end):

* search is exact (brute force over every row, "dot" distance on the normalised vectors, so a score,
  1 - distance, is the cosine) until `build_vector_index` builds an IVF index tuned to a recall target
  (`lancedb_vector_index`); then searches without a filter go through it, and a filtered one stays exact (the
  filter applied before the search, so it never cuts the k results short). `_QUERY_BATCH` queries a request.
* metadata: field names must be identifiers (letters, digits, `_`, not starting with a digit or `_`) and
  not one of `RESERVED_FIELDS`; values are str, int, float, bool or None, or lists of them, as in
  `QdrantStore`. A field first seen in a later `add` becomes a new column (schema evolution: its own
  commit, before the rows' commit; the older rows hold null there). A column has one type: a value of
  another type (a str where the column holds ints, a list where it holds scalars) is refused before
  anything is written, naming the row and field; ints are accepted in a float column (and come back as
  floats). A new field whose values in its first `add` are only None is not created yet (None and a
  missing field are the same thing); one with only empty lists is refused, as its element type cannot be
  told. Null fields are left out of what `search` and `iter_rows` give back.
* filters: {field: value} equality, {field: [values]} any of them (on a list field: the list holds any of
  them), several fields all at once (AND), become a `where` SQL string applied before the search. Values
  are rendered as SQL literals here (strings quoted with '' doubled; backslashes are literal in Lance SQL),
  names are checked identifiers quoted in backticks, so nothing a caller passes is read as SQL. A value
  whose type cannot match the column (a str for an int field), a field no row has, and `[]` match nothing,
  as in Qdrant. "id" and "text" can be filtered on too.
* durability: each `add` is one commit (one new table version, whatever `batch_size`), each `delete`
  one more: when they return, the rows are in the folder, and a process killed with SIGKILL mid-`add`
  leaves either all or none of that call's rows (tests/search/test_lancedb_store.py kills a writer). Lance
  writes new files and commits by linking a new manifest into place; it does not fsync them, so a power
  cut or kernel crash (not a process crash) can lose the last seconds of commits on a local disk. Object
  storage and LanceDB Cloud are durable when the write returns.
* several processes: any number may open the same folder or URI at once, to read or write: there is no lock. A commit
  is optimistic: it writes its files, then links manifest N+1 into place only if no one else did (on S3: a conditional
  put, which AWS S3 supports; an S3-compatible store without it needs Lance's `s3+ddb://` DynamoDB commit store),
  otherwise it checks the other commit for a conflict and retries on top of it. Appends never conflict, and deletes
  retry: three processes appending, one of them deleting, while each compacted the table every 8 fragments, lost no
  row and raised nothing; only compactions lost races (logged, retried after a later write). Every read here looks for
  the latest version first (`read_consistency_interval=0`), so `len` / `search` in one process see what another
  committed; a read replica's store is held at one version instead (`hold_rows`), until it reopens. In a folder, an
  `add`'s check that its ids are new and its commit hold an exclusive lock on `.<collection>.write.lock` there
  (`filelock`: `flock` on Linux, released when the process ends, even by SIGKILL), so two processes adding the same id
  at once never both add it: the second one's check sees the first one's rows and refuses its call. On object storage
  and LanceDB Cloud there is no such lock (no unique constraint either): two writers adding the same id at the same
  moment can both succeed there, so give each writer its own ids.
* many small adds and id lookups: after each write the table is compacted and its id keys indexed when
  due (`lancedb_maintenance`).
* `iter_rows` reads one version (a snapshot) in storage order: insertion order, stable until a compaction
  or delete rewrites the table.

Rough figures, 384-dim random unit vectors added 10,000 a call with one metadata field, one thread
(`OMP_NUM_THREADS=1 LANCE_CPU_THREADS=1`) on a 2-core machine busy with other work (load ~2), so only
their order is worth anything:

    rows                          100k            1M
    adding them all               1.7 s           35 s (0.18-0.5 s an add; one compaction, 5 s)
    folder                        157 MB          1.57 GB compacted (2.6 GB until the old versions go)
    reopening                     2 ms (lazy; the first query then ~0.1 s more)
    one query, k=10               0.07 s          0.7 s (a filter adds ~10%)
    100 queries in one call       0.7 s           6.1 s
    contains, 10,000 ids          0.07 s          0.3-0.4 s; one id 4-40 ms
    iter_rows, all of them        0.5 s           3.4 s
    top-10 = numpy exact top-10   100/100         100/100 queries (scores within 3e-7)

Exact search reads every vector on each request (batching queries shares that scan, ~60 ms a query at 1M);
`build_vector_index` is the way past a few hundred thousand rows (`lancedb_vector_index`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import torch
from filelock import FileLock

from hfsiamese.search.input_checks import check_k
from hfsiamese.search.stores import lancedb_groups
from hfsiamese.search.stores.base import (
    DEFAULT_COLLECTION,
    DatabaseStore,
    check_creatable,
    check_stored_dim,
    gathered_rows,
)
from hfsiamese.search.stores.lancedb_columns import (
    ID_INT,
    ID_STR,
    INT64_NOTE,
    KEY,
    RESERVED_FIELDS,
    TEXT,
    VECTOR,
    base_schema,
    by_query,
    check_base_columns,
    check_key,
    id_key,
    metadata_fields,
    new_fields,
    read_table_metadata,
    record_batch,
    row_batch,
    table_rows,
    write_table_metadata,
)  # fmt: skip
from hfsiamese.search.stores.lancedb_connection import connect, import_lancedb, is_uri
from hfsiamese.search.stores.lancedb_filters import MATCHES_NOTHING, check_lancedb_filter, in_list, where_sql
from hfsiamese.search.stores.lancedb_maintenance import maintain_table
from hfsiamese.search.stores.lancedb_vector_index import (
    VectorIndexSettings,
    build_vector_index,
    read_settings,
    searched_by_index,
)
from hfsiamese.search.stores.matches import match
from hfsiamese.search.stores.store_checks import (
    Rows,
    check_batch_size,
    check_json_dict,
    check_not_present,
    check_vectors,
    id_list,
    normalise,
)

logger = logging.getLogger("hfsiamese.search.stores.lancedb_store")  # the logger its lines have always come from

# Queries per multi-vector request, and keys per `id_key IN (...)` filter.
_QUERY_BATCH = 256
_ID_BATCH = 10_000


class LanceDBStore(DatabaseStore):
    """
    Texts, their embeddings and metadata in one LanceDB table (see the module docstring for the layout).
    Open one with `LanceDBStore.open(location, ...)`, `location` a folder (LanceDB embedded; created if missing), an
    object-storage URI (`s3://bucket/path`, `gs://`, `az://`: credentials from the environment) or a `db://name` URI
    (LanceDB Cloud / Enterprise, with `api_key` or LANCEDB_API_KEY); `close` (or a `with` block) drops the handle.
    Several stores and processes may have the same table open at once.
    """

    INT64_NOTE = INT64_NOTE
    RESERVED = RESERVED_FIELDS
    _check_key = staticmethod(check_key)
    # The index's duplicate groups: a table beside this one (`lancedb_groups`).
    replace_group_rows = lancedb_groups.replace_group_rows
    merge_group_rows = lancedb_groups.merge_group_rows
    read_group_rows = lancedb_groups.read_group_rows

    @staticmethod
    def check_search_filter(filter: dict[str, Any] | None) -> None:
        """Refuse a filter LanceDB's search would refuse (`lancedb_filters.check_lancedb_filter`), without the table."""
        check_lancedb_filter(filter)

    def __init__(self, db: Any, table: Any, collection: str, embedding_dim: int, where: str, remote: bool) -> None:
        """Use `LanceDBStore.open`: it creates or checks the table this wraps."""
        self._db = db
        self._handle = table
        self.collection = collection
        self.embedding_dim = embedding_dim
        self.where = where  # a folder or a URI, for messages
        self._remote = remote
        # One writer at a time in a folder (see the module's "several processes"); none on object storage or a server.
        self._write_lock: AbstractContextManager[Any] = (
            nullcontext() if remote or is_uri(where) else FileLock(Path(where) / f".{collection}.write.lock")
        )

    # --- opening -----------------------------------------------------------------------------

    @classmethod
    def _open(
        cls, location: str, collection: str, embedding_dim: int | None, api_key: str | None, create: bool
    ) -> LanceDBStore:
        """The table in the database at `location` (see the class), created or checked."""
        db, where, remote = connect(location, api_key=api_key, create=create)
        table = cls._open_table(db, collection, embedding_dim, create, where)
        dim = table.schema.field(VECTOR).type.list_size
        return cls(db, table, collection, dim, where, remote)

    @staticmethod
    def _open_table(db: Any, collection: str, embedding_dim: int | None, create: bool, where: str) -> Any:
        """The table, after creating it or checking that the existing one was made by LanceDBStore."""
        try:
            table = db.open_table(collection)
        except ValueError as err:
            if "not found" not in str(err) and "does not exist" not in str(err):
                raise
            table = None
        if table is None:
            check_creatable(collection, where, create, embedding_dim)
            # exist_ok: another process may have created it in the meantime; it is checked below then.
            table = db.create_table(collection, schema=base_schema(embedding_dim), exist_ok=True)
        check_base_columns(table.schema, collection, where)
        check_stored_dim(collection, where, table.schema.field(VECTOR).type.list_size, embedding_dim)
        return table

    def close(self) -> None:
        """Drop the table handle (there is no lock to release: other stores may keep the table open)."""
        self._handle = None
        self._db = None

    def hold_rows(self) -> bool:
        """The table checked out at its latest version: reads see that one from here on (a read replica)."""
        self._table.checkout(self._table.version)
        return True

    @property
    def _table(self) -> Any:
        if self._handle is None:
            raise RuntimeError(f"{self!r} is closed: open it again")
        return self._handle

    # --- rows ----------------------------------------------------------------------------------

    def __len__(self) -> int:
        """The exact number of texts in the table."""
        return self._table.count_rows()

    def _write(self, rows: Rows, batch_size: int) -> None:
        """All the rows in one commit (converted to Arrow `batch_size` at a time), so when `add` returns they are all in
        the table, and a crash in the middle leaves none of them. A new metadata field is a column first (own commit)."""
        ids, texts, vectors, metadata = rows
        keys = [id_key(i) for i in ids]
        with self._write_lock:  # from the check that the ids are new to their commit
            self._write_new(ids, keys, texts, vectors, metadata, batch_size)
        self._maintain()

    def _write_new(
        self, ids: list[Any], keys: list[str], texts: list[str], vectors: np.ndarray, metadata: list[Any],
        batch_size: int,
    ) -> None:  # fmt: skip
        table = self._table
        check_not_present(ids, self._contains_keys(keys))
        schema = table.schema
        added = new_fields(metadata, schema)
        if added:
            table.add_columns(added)
            schema = table.schema
        fields = metadata_fields(schema)

        def batches() -> Iterator[pa.RecordBatch]:
            for start in range(0, len(ids), batch_size):
                stop = start + batch_size
                yield record_batch(
                    schema, fields, ids[start:stop], keys[start:stop], texts[start:stop], vectors[start:stop],
                    metadata[start:stop],
                )  # fmt: skip

        table.add(pa.RecordBatchReader.from_batches(schema, batches()))

    def delete(self, ids: Sequence[int | str]) -> int:
        """Remove these ids' texts (one commit); the number actually removed (ids not in the table are ignored)."""
        keys = list(dict.fromkeys(id_key(i) for i in id_list(ids)))
        if not keys:
            return 0
        table = self._table
        removed = table.delete(in_list(KEY, keys)).num_deleted_rows
        self._maintain()
        return removed

    def contains(self, ids: Sequence[int | str]) -> list[bool]:
        """Whether each id is in the table."""
        return self._contains_keys([id_key(i) for i in id_list(ids)])

    def rows_by_id(self, ids: Sequence[int | str]) -> tuple[list[str], np.ndarray]:
        """These ids' texts and embeddings, in their order (one `id_key IN (...)` read per 1,000 ids)."""
        found: dict[Any, tuple[str, Any]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), _ID_BATCH):
            keys = [id_key(i) for i in unique[start : start + _ID_BATCH]]
            rows = self._table.search().where(in_list(KEY, keys)).select([ID_INT, ID_STR, TEXT, VECTOR]).to_arrow()
            columns = (rows.column(name).to_pylist() for name in (ID_INT, ID_STR, TEXT, VECTOR))
            for number, name, text, vector in zip(*columns):
                found[number if number is not None else name] = (text, vector)
        return gathered_rows(ids, found, self.embedding_dim)

    def _contains_keys(self, keys: list[str]) -> list[bool]:
        found: set[str] = set()
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _ID_BATCH):
            rows = self._table.search().where(in_list(KEY, unique[start : start + _ID_BATCH])).select([KEY]).to_arrow()
            found.update(rows.column(KEY).to_pylist())
        return [key in found for key in keys]

    # --- search --------------------------------------------------------------------------------

    def search(
        self, queries: np.ndarray | torch.Tensor, k: int, *, filter: dict[str, Any] | None = None
    ) -> list[list[dict[str, Any]]]:
        """
        The `k` most similar texts to each query embedding, best first, as {"id", "text", "score" (cosine),
        **metadata}, by exact (brute-force) search, or through the vector index once one is built (unfiltered only).
        `filter` keeps only texts whose metadata match: {field: value} equality, {field: [v1, v2]} any of them, several
        fields all at once.
        """
        check_k(k)
        vectors = check_vectors(queries, self.embedding_dim, "queries")
        table = self._table
        schema = table.schema
        where = where_sql(filter, schema)
        if where is MATCHES_NOTHING or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        vectors = normalise(vectors)
        fields, vector_index = metadata_fields(schema), read_settings(schema)
        columns = [ID_INT, ID_STR, TEXT, *fields, "_distance"]
        results: list[list[dict[str, Any]]] = []
        for start in range(0, len(vectors), _QUERY_BATCH):
            chunk = vectors[start : start + _QUERY_BATCH]
            query = table.search(chunk if len(chunk) > 1 else chunk[0], vector_column_name=VECTOR).distance_type("dot")
            query = searched_by_index(query, vector_index, where is not None).limit(k).select(columns)
            if where is not None:
                query = query.where(where, prefilter=True)
            found = query.to_arrow()
            numbers, order = by_query(found)
            rows = table_rows(found.take(order), fields)
            scores = 1.0 - found.column("_distance").to_numpy()[order].astype(np.float64)
            chunk_results: list[list[dict[str, Any]]] = [[] for _ in range(len(chunk))]
            for number, (user_id, text, values), score in zip(numbers[order], rows, scores):
                chunk_results[number].append(match(user_id, text, float(score), values))
            results.extend(chunk_results)
        return results

    def iter_rows(
        self, batch_size: int = 10_000, *, with_vectors: bool = True
    ) -> Iterator[tuple[list[int | str], list[str], np.ndarray | None, list[dict[str, Any]]]]:
        """
        Every row as `(ids, texts, embeddings, metadata)` batches of `batch_size` (the last one shorter), in
        storage order, from one version of the table; embeddings are float32 `(n, dim)`, None without
        `with_vectors`.
        """
        check_batch_size(batch_size)
        table = self._table
        fields = metadata_fields(table.schema)
        columns = [ID_INT, ID_STR, TEXT, *fields] + ([VECTOR] if with_vectors else [])
        reader = table.search().select(columns).to_batches(batch_size)
        pending: list[pa.RecordBatch] = []
        pending_rows = 0
        for batch in reader:
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            pending_rows += batch.num_rows
            while pending_rows >= batch_size:
                joined = pa.Table.from_batches(pending)
                yield row_batch(joined.slice(0, batch_size), fields, self.embedding_dim if with_vectors else None)
                rest = joined.slice(batch_size)
                pending, pending_rows = rest.to_batches(), rest.num_rows
        if pending_rows:
            yield row_batch(pa.Table.from_batches(pending), fields, self.embedding_dim if with_vectors else None)

    # --- the approximate vector index (`lancedb_vector_index`) ----------------------------------

    def build_vector_index(self, **options: Any) -> VectorIndexSettings:
        """An IVF index on the vectors, tuned to `recall_target`, that every process's unfiltered searches go
        through from then on (the options: `lancedb_vector_index.build_vector_index`)."""
        with self._write_lock:
            return build_vector_index(self._table, where=self.where, **options)

    @property
    def vector_index(self) -> VectorIndexSettings | None:
        """The settings of the vector index searches go through, None when they are exact."""
        return read_settings(self._table.schema)

    # --- table metadata ------------------------------------------------------------------------

    def get_metadata(self) -> dict[str, Any]:
        """The dict `set_metadata` kept in the table (the index config), {} if none."""
        return read_table_metadata(self._table)

    def set_metadata(self, values: dict[str, Any]) -> None:
        """Replace the small JSON dict kept in the table (one commit), so that the index config travels with it."""
        plain = check_json_dict(values)
        write_table_metadata(self._table, plain)
        if self.get_metadata() != plain:
            raise RuntimeError(
                f"the LanceDB table at {self.where} did not keep the metadata: keep the index config in a file"
            )

    # --- helpers ---------------------------------------------------------------------------------

    def _maintain(self) -> None:
        """After a write: the table's upkeep where it is due (`lancedb_maintenance`); LanceDB Cloud does its own."""
        if not self._remote:
            maintain_table(self._table, self.where)


__all__ = ["DEFAULT_COLLECTION", "LanceDBStore", "id_key", "import_lancedb"]
