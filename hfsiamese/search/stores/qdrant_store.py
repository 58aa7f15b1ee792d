"""
Where a `DuplicateIndex(store="qdrant")` keeps its texts and embeddings: one Qdrant collection, either
embedded in a folder (Qdrant's local mode: in-process, no server binary) or on a Qdrant server or cluster
reached by URL, through the same code. Qdrant gives what the in-process backends do not: inserts and
deletes without a rebuild, metadata filters at search time, and a store that outlives the process.

Layout of the collection (`DEFAULT_COLLECTION` unless told):

    one point per text
        vector    the L2-normalised embedding (normalised here, so that what `iter_rows` gives back is
                  exactly what is searched); distance Cosine, so a score is a cosine similarity
        payload   {"id": the caller's id (int or str, as given), "text": the text, **metadata}; metadata
                  cannot take the names "id", "text" and "score" (what `search` gives back beside it)
        point id  Qdrant takes only unsigned ints and UUIDs: a non-negative int id (below 2**63) is its
                  own point id; any other id (a str, a negative int) is uuid5(ID_NAMESPACE, "<kind>:<id>"),
                  so that the int 5 and the str "5" are two points, and the same id is the same point in
                  every process
    collection metadata["hfsiamese"]
              a small JSON dict (`get_metadata` / `set_metadata`): the index config (model fingerprint,
              threshold) travels with the collection; no reserved point, so nothing has to be hidden
              from `len`, `search` or `iter_rows`. Needs a Qdrant server with collection metadata (1.16+);
              `set_metadata` reads it back and says so when the server dropped it.

The index's duplicate groups are in a second collection, `<collection>__groups` (`qdrant_groups`).

How local mode behaves (qdrant-client 1.20, measured on a shared 2-core machine):

* durability: local mode keeps every point in memory (numpy) and in `collection/<name>/storage.sqlite`
  under the folder. An upsert writes each point to sqlite in its own committed transaction before it
  returns (`wait` means nothing there), so every row `add` acknowledged survives the process being
  killed (tests/search/test_qdrant_store.py kills one with SIGKILL mid-insert). A batch cut short by
  a crash may have left its first rows in the store: those ids are then refused by a retried `add`;
  `contains` says which ones to skip.
* one process at a time: opening a folder takes an exclusive lock on `<folder>/.lock`; a second client on
  the same folder, in this process or another, gets a RuntimeError, re-raised here as one line saying to
  close the other one or to run a Qdrant server.
* size: search is brute force over the in-memory copy, and opening the folder unpickles every point
  from sqlite. Above 20,000 points the client warns (a UserWarning, on every opening and on the first
  upsert of a process) that local mode is not recommended and to use a server; that warning is silenced
  here and said in the log (INFO) instead, when a folder holding that many is opened. Rough figures for 100,000 points of 384 dims
  (`OMP_NUM_THREADS=1` on a 2-core machine busy with other work, so only their order is worth anything):
  adding them in batches of 1,000 took about 3.5 minutes, each batch slower as the sqlite file grew (1 s
  for the first 1,000 rows, 3.5 s for the last; one commit per point), for a 410 MB file (about 4 KB a
  point: vectors are pickled as lists of floats); reopening took about 18 s, a query with k=10 about
  0.3 s, and `iter_rows` over all of them 5 s. So mining a local collection for duplicates should read it
  with `iter_rows` and search the embeddings in memory rather than send one query per row. For millions
  of texts, or several processes, run a Qdrant server and pass its URL.
* a server URL: the client's version check against the server runs in a background thread and warns late
  when it cannot reach it; it is turned off here, and the first request fails at once instead, with a
  ConnectionError naming the URL. An `api_key` over plain http makes the client warn that the key travels
  unencrypted: that warning is left on purpose.
"""

from __future__ import annotations

import logging
import uuid
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from hfsiamese.search.input_checks import check_k
from hfsiamese.search.stores import qdrant_groups
from hfsiamese.search.stores.base import (
    DEFAULT_COLLECTION,
    DatabaseStore,
    check_creatable,
    check_stored_dim,
    gathered_rows,
    import_engine,
    local_folder,
)
from hfsiamese.search.stores.matches import match
from hfsiamese.search.stores.qdrant_filters import MATCHES_NOTHING, check_qdrant_filter, qdrant_filter
from hfsiamese.search.stores.store_checks import (
    Rows,
    check_batch_size,
    check_id,
    check_json_dict,
    check_not_present,
    check_vectors,
    id_list,
    normalise,
)

logger = logging.getLogger("hfsiamese.search.stores.qdrant_store")  # the logger its lines have always come from

# Fixed forever: the point id of a str (or negative int) id is derived from it.
ID_NAMESPACE = uuid.UUID("6f0c2f7e-5a43-5d1e-9b7a-3e2f0d9c4a11")
# Key of the collection metadata under which `set_metadata` keeps its dict (other tools may keep theirs beside).
METADATA_KEY = "hfsiamese"
# Above this many points the client warns that local mode is not meant for it (QdrantLocal.LARGE_DATA_THRESHOLD).
LOCAL_MODE_LARGE = 20_000
_LARGE_WARNING = "Local mode is not recommended"
# Queries per query_batch_points request, and ids per retrieve request.
_QUERY_BATCH = 256
_ID_BATCH = 1000


def import_qdrant() -> Any:
    """The `qdrant_client` module, or an ImportError saying which extra installs it."""
    return import_engine("qdrant_client", "qdrant", "qdrant-client")


def point_id(user_id: int | str) -> int | str:
    """
    The Qdrant point id of a caller's id: a non-negative int is its own, anything else a uuid5 of its kind
    and value (deterministic, and the kinds never collide: "int:5" and "str:5" differ).
    """
    user_id = check_id(user_id, QdrantStore.INT64_NOTE)
    if isinstance(user_id, int):
        if user_id >= 0:
            return user_id
        return str(uuid.uuid5(ID_NAMESPACE, f"int:{user_id}"))
    return str(uuid.uuid5(ID_NAMESPACE, f"str:{user_id}"))


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


class QdrantStore(DatabaseStore):
    """
    Texts, their embeddings and metadata in one Qdrant collection (see the module docstring for the
    layout). Open one with `QdrantStore.open(location, ...)`, `location` a folder (Qdrant's embedded local mode;
    created if missing) or an http(s):// URL (a server or cluster, `api_key` if it asks for one); close it (or use it
    as a context manager) to release a local folder's lock. A new collection measures cosine distance.
    """

    INT64_NOTE = "Qdrant payloads hold int64"
    point_id = staticmethod(point_id)  # so that `qdrant_groups` reaches it through the store, not an import circle
    # The index's duplicate groups: a collection beside this one (`qdrant_groups`).
    replace_group_rows = qdrant_groups.replace_group_rows
    merge_group_rows = qdrant_groups.merge_group_rows
    read_group_rows = qdrant_groups.read_group_rows

    @staticmethod
    def _check_key(key: str, position: int) -> None:
        """Qdrant's rule on metadata keys: filters address nested values by path, so no '.' or '[]' in a key."""
        if any(char in key for char in ".[]"):
            raise ValueError(
                f"metadata[{position}] has key {key!r}: Qdrant filters read '.' and '[]' as paths, rename it"
            )

    @staticmethod
    def check_search_filter(filter: dict[str, Any] | None) -> None:
        """Refuse a filter Qdrant's search would refuse (`qdrant_filters.check_qdrant_filter`), without a request."""
        check_qdrant_filter(filter)

    def __init__(self, client: Any, collection: str, embedding_dim: int, where: str) -> None:
        """Use `QdrantStore.open`: it creates or checks the collection this wraps."""
        self._client = client
        self._models = import_qdrant().models
        self.collection = collection
        self.embedding_dim = embedding_dim
        self.where = where  # a folder or a URL, for messages

    # --- opening -----------------------------------------------------------------------------

    @classmethod
    def _open(
        cls, location: str, collection: str, embedding_dim: int | None, api_key: str | None, create: bool
    ) -> QdrantStore:
        """The collection in Qdrant at `location` (see the class), created (cosine distance) or checked."""
        qdrant_client = import_qdrant()
        if _is_url(location):
            where = location
            # The version check warns from a background thread, late, when the server is unreachable:
            # the first request below says so at once instead.
            client = qdrant_client.QdrantClient(url=location, api_key=api_key, check_compatibility=False)
        else:
            if api_key is not None:
                raise ValueError("api_key is for a Qdrant server URL, not a local folder: drop it, or pass the URL")
            path = local_folder(location, create, "Qdrant")
            where = str(path)
            try:
                with _quiet_large_collection():
                    client = qdrant_client.QdrantClient(path=str(path))
            except RuntimeError as err:
                if "already accessed" not in str(err):
                    raise
                _close_lock_file(err)
                raise RuntimeError(
                    f"{path} is already open in another QdrantStore or process (Qdrant local mode locks its "
                    "folder): close that one first, or run a Qdrant server and open it by URL from every process"
                ) from err
        try:
            dim = cls._open_collection(client, collection, embedding_dim, create, where)
        except BaseException:
            client.close()
            raise
        store = cls(client, collection, dim, where)
        if not _is_url(location):
            count = len(store)
            if count > LOCAL_MODE_LARGE:
                logger.info(
                    "%s holds %d points: Qdrant local mode reloads them all into memory on every opening and "
                    "searches them by brute force; a Qdrant server, opened by URL, is much faster at this size",
                    where,
                    count,
                )
        return store

    @staticmethod
    def _open_collection(client: Any, collection: str, embedding_dim: int | None, create: bool, where: str) -> int:
        """The collection's embedding size, after creating the collection or checking the existing one."""
        models = import_qdrant().models
        try:
            exists = client.collection_exists(collection)
        except Exception as err:
            if not _is_url(where):
                raise
            raise ConnectionError(
                f"cannot reach the Qdrant server at {where} ({err}): start it, or check the URL"
            ) from err
        if not exists:
            check_creatable(collection, where, create, embedding_dim)
            client.create_collection(
                collection, vectors_config=models.VectorParams(size=embedding_dim, distance=models.Distance.COSINE)
            )
            return embedding_dim
        vectors = client.get_collection(collection).config.params.vectors
        if not isinstance(vectors, models.VectorParams):
            raise ValueError(
                f"collection {collection!r} at {where} has named vectors, so it was not made by QdrantStore: "
                "choose another collection name"
            )
        if vectors.distance != models.Distance.COSINE:
            raise ValueError(
                f"collection {collection!r} at {where} uses {vectors.distance.value} distance, not Cosine: "
                "it was not made by QdrantStore; choose another collection name"
            )
        check_stored_dim(collection, where, vectors.size, embedding_dim)
        return vectors.size

    def close(self) -> None:
        """Release the connection (and a local folder's lock, so another store or process may open it)."""
        self._client.close()

    # --- rows ----------------------------------------------------------------------------------

    def __len__(self) -> int:
        """The exact number of texts in the collection."""
        return self._client.count(self.collection, exact=True).count

    def _write(self, rows: Rows, batch_size: int) -> None:
        """
        Upserted `batch_size` rows at a time with wait=True, so when `add` returns every row is acknowledged (in local
        mode: committed to the folder's sqlite).
        """
        ids, texts, vectors, metadata = rows
        point_ids = [point_id(i) for i in ids]
        check_not_present(ids, self._contains_points(point_ids))
        models = self._models
        for start in range(0, len(ids), batch_size):
            stop = start + batch_size
            batch = models.Batch(
                ids=point_ids[start:stop],
                vectors=vectors[start:stop].tolist(),
                payloads=[
                    {"id": user_id, "text": text, **values}
                    for user_id, text, values in zip(ids[start:stop], texts[start:stop], metadata[start:stop])
                ],
            )
            with _quiet_large_collection():
                self._client.upsert(self.collection, points=batch, wait=True)

    def delete(self, ids: Sequence[int | str]) -> int:
        """Remove these ids' texts; the number actually removed (ids not in the collection are ignored)."""
        point_ids = list(dict.fromkeys(point_id(i) for i in id_list(ids)))
        present = [pid for pid, found in zip(point_ids, self._contains_points(point_ids)) if found]
        for start in range(0, len(present), _ID_BATCH):
            self._client.delete(
                self.collection,
                points_selector=self._models.PointIdsList(points=present[start : start + _ID_BATCH]),
                wait=True,
            )
        return len(present)

    def contains(self, ids: Sequence[int | str]) -> list[bool]:
        """Whether each id is in the collection."""
        return self._contains_points([point_id(i) for i in id_list(ids)])

    def rows_by_id(self, ids: Sequence[int | str]) -> tuple[list[str], np.ndarray]:
        """These ids' texts and embeddings, in their order (points retrieved by id, 1,000 at a time)."""
        found: dict[Any, tuple[str, Any]] = {}
        unique = [point_id(i) for i in dict.fromkeys(ids)]
        for start in range(0, len(unique), _ID_BATCH):
            records = self._client.retrieve(
                self.collection, ids=unique[start : start + _ID_BATCH], with_payload=True, with_vectors=True
            )
            found.update((record.payload["id"], (record.payload["text"], record.vector)) for record in records)
        return gathered_rows(ids, found, self.embedding_dim)

    def _contains_points(self, point_ids: list[int | str]) -> list[bool]:
        found = set()
        for start in range(0, len(point_ids), _ID_BATCH):
            records = self._client.retrieve(
                self.collection, ids=point_ids[start : start + _ID_BATCH], with_payload=False, with_vectors=False
            )
            found.update(_canonical(record.id) for record in records)
        return [_canonical(pid) in found for pid in point_ids]

    # --- search --------------------------------------------------------------------------------

    def search(
        self, queries: np.ndarray | torch.Tensor, k: int, *, filter: dict[str, Any] | None = None
    ) -> list[list[dict[str, Any]]]:
        """
        The `k` most similar texts to each query embedding, best first, as {"id", "text", "score" (cosine),
        **metadata}. `filter` keeps only texts whose metadata match: {field: value} equality,
        {field: [v1, v2]} any of them, several fields all at once.
        """
        check_k(k)
        vectors = check_vectors(queries, self.embedding_dim, "queries")
        query_filter = qdrant_filter(filter, self._models)
        if query_filter is MATCHES_NOTHING:
            return [[] for _ in range(len(vectors))]
        vectors = normalise(vectors)
        models = self._models
        results = []
        for start in range(0, len(vectors), _QUERY_BATCH):
            requests = [
                models.QueryRequest(query=vector, limit=k, filter=query_filter, with_payload=True, with_vector=False)
                for vector in vectors[start : start + _QUERY_BATCH].tolist()
            ]
            for response in self._client.query_batch_points(self.collection, requests=requests):
                results.append([_hit(point) for point in response.points])
        return results

    def iter_rows(
        self, batch_size: int = 10_000, *, with_vectors: bool = True
    ) -> Iterator[tuple[list[int | str], list[str], np.ndarray | None, list[dict[str, Any]]]]:
        """
        Every row as `(ids, texts, embeddings, metadata)` batches in a stable order (by point id), to mine
        duplicates across the whole collection or export it; embeddings are float32 `(n, dim)`, None without
        `with_vectors`.
        """
        check_batch_size(batch_size)
        offset = None
        while True:
            records, offset = self._client.scroll(
                self.collection, limit=batch_size, offset=offset, with_payload=True, with_vectors=with_vectors
            )
            if records:
                ids, texts, metadata = [], [], []
                for record in records:
                    values = dict(record.payload)
                    ids.append(values.pop("id"))
                    texts.append(values.pop("text"))
                    metadata.append(values)
                embeddings = None
                if with_vectors:
                    embeddings = np.asarray([record.vector for record in records], dtype=np.float32)
                yield ids, texts, embeddings, metadata
            if offset is None:
                return

    # --- collection metadata ---------------------------------------------------------------------

    def get_metadata(self) -> dict[str, Any]:
        """The dict `set_metadata` kept in the collection (the index config), {} if none."""
        stored = self._client.get_collection(self.collection).config.metadata or {}
        return dict(stored.get(METADATA_KEY) or {})

    def set_metadata(self, values: dict[str, Any]) -> None:
        """Replace the small JSON dict kept in the collection, so that the index config travels with it."""
        plain = check_json_dict(values)
        self._client.update_collection(self.collection, metadata={METADATA_KEY: plain})
        if self.get_metadata() != plain:
            raise RuntimeError(
                f"the Qdrant server at {self.where} did not keep the collection metadata (it needs Qdrant 1.16 or "
                "newer): upgrade it, or keep the index config in a file"
            )


def _canonical(pid: Any) -> int | str:
    """A point id as the client hands it back (UUIDs spelled lowercase with hyphens)."""
    return pid if isinstance(pid, int) else str(uuid.UUID(str(pid)))


def _close_lock_file(err: BaseException) -> None:
    """
    Close the `.lock` file that a QdrantLocal which failed to lock its folder leaves open (the client never
    closes it, and it would be reported as an unclosed file when collected).
    """
    frames = err.__traceback__
    while frames is not None:
        lock_file = getattr(frames.tb_frame.f_locals.get("self"), "_flock_file", None)
        if lock_file is not None and not lock_file.closed:
            lock_file.close()
        frames = frames.tb_next


def _hit(point: Any) -> dict[str, Any]:
    values = dict(point.payload)
    user_id, text = values.pop("id"), values.pop("text")
    # Metadata named "score" is refused now; a point written before that keeps it, but the score wins here.
    values.pop("score", None)
    return match(user_id, text, float(point.score), values)


class _quiet_large_collection(warnings.catch_warnings):
    """Silences the client's "Local mode is not recommended" warning (said once in the log on opening instead)."""

    def __enter__(self) -> None:
        super().__enter__()
        warnings.filterwarnings("ignore", message=_LARGE_WARNING, category=UserWarning)


__all__ = ["DEFAULT_COLLECTION", "ID_NAMESPACE", "QdrantStore", "import_qdrant", "point_id"]
