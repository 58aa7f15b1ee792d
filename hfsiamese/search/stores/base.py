"""
What a `DuplicateIndex` asks of the place that keeps its vectors: the `VectorStore` protocol, and
`DatabaseStore`, the part both database stores share (the checks before an `add`, the lifecycle, saving, and
keeping the index's duplicate groups beside its rows).

A store keeps ids, texts and L2-normalised float32 embeddings (and, in a database, metadata); the index
keeps the model, the threshold, the calibration and the reranker. Every store answers a search with match
dicts built by `hfsiamese.search.stores.matches.match`.
"""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

import datasets
import numpy as np
import pyarrow as pa
import torch
from datasets.fingerprint import generate_random_fingerprint
from datasets.table import InMemoryTable

from hfsiamese.search.input_checks import id_type
from hfsiamese.search.stores.index_files import write_index_folder
from hfsiamese.search.stores.store_checks import (
    RESERVED_FIELDS,
    Rows,
    check_batch_size,
    check_embedding_dim,
    check_filter,
    check_id,
    check_metadata_row,
    check_rows,
)
from hfsiamese.utils.extras import install_hint

RowBatch = tuple[list[int | str], list[str], "np.ndarray | None", list[dict[str, Any]]]
"""`(ids, texts, embeddings or None, metadata)`: one batch of `iter_rows`."""

# A database keeps an index's duplicate groups in the table or collection `<collection>__groups`.
GROUPS_SUFFIX = "__groups"
# The key under which the groups' settings (`GroupSettings.to_dict()`) are kept: in the groups table's or collection's
# metadata, and in the schema metadata of an index folder's `groups.parquet`.
GROUP_SETTINGS_KEY = "hfsiamese_groups"


# The collection (table) an index's rows go to in a database unless told otherwise.
DEFAULT_COLLECTION = "duplicate_index"


@runtime_checkable
class VectorStore(Protocol):
    """The vectors of a `DuplicateIndex` and what it does with them: in memory (`InMemoryStore`), through FAISS
    (`FaissStore`), or in a database (`LanceDBStore`, `QdrantStore`)."""

    embedding_dim: int | None
    # What the store is, so that no caller asks which class it is: whether a database keeps the rows (their metadata,
    # the index's duplicate groups beside them, and `save` writes only where they are), and whether a search can
    # answer in row numbers (`topk`, `matches`: an in-process store's rows are numbered in insertion order).
    database: bool
    numbered_rows: bool

    @property
    def memory_mapped(self) -> bool:
        """Whether the embeddings are read from a saved folder's file rather than held in memory."""

    @property
    def id_type(self) -> str | None:
        """`"int"` or `"str"`: the kind of the ids kept (None while none are), read from what is stored."""

    def finish_build(self) -> None:
        """What the store does once a build's rows are all in (a FAISS store builds and measures its index)."""

    def __len__(self) -> int:
        """The number of texts kept."""

    def add(
        self,
        ids: Sequence[int | str],
        texts: Sequence[str],
        embeddings: np.ndarray | torch.Tensor,
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        """Keep new rows (ids checked new and unique by the caller or the store); nothing kept unless all are."""

    def delete(self, ids: Sequence[int | str]) -> int:
        """Remove these ids' rows; how many were removed (ids not kept are ignored)."""

    def contains(self, ids: Sequence[int | str]) -> list[bool]:
        """Whether each id is kept."""

    def search(
        self, queries: np.ndarray | torch.Tensor, k: int, *, filter: dict[str, Any] | None = None
    ) -> list[list[dict[str, Any]]]:
        """The `k` rows most similar to each query embedding, best first, as match dicts."""

    def iter_rows(self, batch_size: int = 10_000, *, with_vectors: bool = True) -> Iterator[RowBatch]:
        """Every row, in batches of `(ids, texts, embeddings, metadata)`."""

    def save(self, directory: str | os.PathLike, config: dict[str, Any], *, overwrite: bool = False) -> None:
        """Write the index folder: `config` (the index's `index_config.json`) and whatever the store keeps there."""

    def close(self) -> None:
        """Release what the store holds open (a database connection, a folder's lock)."""

    def dataset(self) -> datasets.Dataset | None:
        """Every id and text as a `datasets.Dataset` (columns `id`, `text`); None when empty."""

    def all_ids(self) -> list[int | str]:
        """Every id, in the store's order."""

    def all_texts(self) -> list[str]:
        """Every text, in the same order."""

    def all_embeddings(self) -> torch.Tensor:
        """Every embedding, `(len, dim)` float32, in the same order."""

    def rows_by_id(self, ids: Sequence[int | str]) -> tuple[list[str], np.ndarray]:
        """The texts and `(len(ids), dim)` float32 embeddings of these ids, in their order, reading only these rows
        (what keeping duplicate groups current needs: a few rows of a large index); a KeyError names ids not kept."""


class DatabaseStore(ABC):
    """
    What `LanceDBStore` and `QdrantStore` share: `add` checks its rows (`store_checks.check_rows`) and hands
    them to the engine's `_write`; the lifecycle (`close` by the engine, `with` blocks, `repr`); `save`,
    which writes only the index config, as the rows are in the database already; and the index's duplicate
    groups, which each engine keeps in `groups_collection` beside the rows, as durably (`*_group_rows`).
    """

    database: ClassVar[bool] = True
    numbered_rows: ClassVar[bool] = False
    memory_mapped: ClassVar[bool] = False  # the rows are the engine's, read through its client
    # The words naming the engine's int64 limit, for the message refusing a larger id.
    INT64_NOTE: ClassVar[str] = "ids are stored as int64"
    # Names metadata cannot take in this engine.
    RESERVED: ClassVar[tuple[str, ...]] = RESERVED_FIELDS
    collection: str
    embedding_dim: int
    where: str

    @classmethod
    def open(
        cls,
        location: str | os.PathLike,
        *,
        collection: str = DEFAULT_COLLECTION,
        embedding_dim: int | None = None,
        api_key: str | None = None,
        create: bool = True,
    ) -> Self:
        """
        The store of `collection` at `location` (what a location may be, and what `api_key` is for, is the engine's:
        see its class). With `create` and no such collection yet, `embedding_dim` is required and the collection is
        created; an existing one must have `embedding_dim` dimensions when that is given. `create=False` refuses a
        missing one.
        """
        check_embedding_dim(embedding_dim)
        return cls._open(os.fspath(location), collection, embedding_dim, api_key, create)

    @classmethod
    @abstractmethod
    def _open(
        cls, location: str, collection: str, embedding_dim: int | None, api_key: str | None, create: bool
    ) -> Self:
        """The engine's part of `open` (its arguments checked): connect, open or create the collection, check it."""

    def add(
        self,
        ids: Sequence[int | str],
        texts: Sequence[str],
        embeddings: np.ndarray | torch.Tensor,
        metadata: Sequence[dict[str, Any]] | None = None,
        *,
        batch_size: int = 1000,
    ) -> None:
        """
        Add texts with their embeddings (normalised here) and optional per-text metadata. Ids already stored
        are refused before anything is written: replacing a text is `delete` then `add`. How the rows are
        written (and when they are durable) is the engine's: see its `_write`.
        """
        check_batch_size(batch_size)
        rows = check_rows(
            ids,
            texts,
            embeddings,
            metadata,
            embedding_dim=self.embedding_dim,
            int64_note=self.INT64_NOTE,
            reserved=self.RESERVED,
            check_key=self._check_key,
        )
        if rows.ids:
            self._write(rows, batch_size)

    def check_new_rows(self, ids: Sequence[int | str], metadata: Sequence[dict[str, Any]] | None) -> None:
        """Refuse an id or a metadata row this engine cannot keep (`add`'s own checks, by position in the whole
        call): what a caller writing many `add`s checks first, so that a refusal comes before the first is written."""
        for user_id in ids:
            check_id(user_id, self.INT64_NOTE)
        for position, values in enumerate(metadata or []):
            check_metadata_row(values, position, reserved=self.RESERVED, check_key=self._check_key)

    @abstractmethod
    def _write(self, rows: Rows, batch_size: int) -> None:
        """Write checked, new rows (vectors normalised), `batch_size` rows a request."""

    @staticmethod
    @abstractmethod
    def _check_key(key: str, position: int) -> None:
        """The engine's rule on metadata keys (ValueError naming the row), beside the shared ones."""

    @staticmethod
    def check_search_filter(filter: dict[str, Any] | None) -> None:
        """Refuse (TypeError or ValueError, one line) a search filter this engine would refuse, without searching:
        what a caller that searches many requests in one call (`hfsiamese serve`) asks of each request's filter.
        Here the rules every engine shares (`store_checks.check_filter`); an engine with more overrides it. Not
        abstract, so that a store written before it existed (CONTRIBUTING.md, "Adding a search store") still instantiates."""
        check_filter(filter, matches="filters match str, int and bool values only")

    def save(self, directory: str | os.PathLike, config: dict[str, Any], *, overwrite: bool = False) -> None:
        """Write the index folder's config only: the rows are in the database (its place is in `config`)."""
        write_index_folder(Path(directory), None, None, config, overwrite=overwrite)

    @abstractmethod
    def close(self) -> None:
        """Release the connection (and whatever lock the engine holds)."""

    @abstractmethod
    def iter_rows(self, batch_size: int = 10_000, *, with_vectors: bool = True) -> Iterator[RowBatch]:
        """Every row in `(ids, texts, embeddings, metadata)` batches, in the engine's order."""

    def hold_rows(self) -> bool:
        """Read the rows as they are now from here on, where the engine keeps versions (LanceDB), so that a reader
        sees one moment of a writer's work (a read replica); False where it reads them live (Qdrant). Writes are
        refused on a held store."""
        return False

    # --- the index's duplicate groups (`hfsiamese.search.groups.group_storage` converts them) ---------------------
    #
    # Group rows are a table of columns `id` (the question's id), `group` (int64), `score` (float64: its similarity to
    # the group's canonical) and `is_canonical` (bool), one row per question; the settings a plain JSON dict.

    @property
    def groups_collection(self) -> str:
        """The table or collection, beside this one in the same database, that holds the index's duplicate groups."""
        return f"{self.collection}{GROUPS_SUFFIX}"

    @abstractmethod
    def replace_group_rows(self, rows: pa.Table, settings: dict[str, Any]) -> None:
        """Replace the stored groups whole with `rows` and `settings` (what `find_groups` found), so that the groups
        and their settings always come from one finding; durable as the engine's rows are when it returns."""

    @abstractmethod
    def merge_group_rows(self, rows: pa.Table, removed: Sequence[int | str]) -> None:
        """Write the group rows that changed (inserted or updated by id) and remove those of `removed` questions,
        so that an `add` or `delete` writes only what it changed, not every group; the settings stay."""

    @abstractmethod
    def read_group_rows(self) -> tuple[dict[str, Any], pa.Table] | None:
        """The stored groups' settings and rows, None where none were written (Qdrant: nor where none are left, as
        earlier releases read it)."""

    @property
    def id_type(self) -> str | None:
        """The kind of the first stored row's id (one kind per collection where a `DuplicateIndex` writes it: its `add`
        refuses the other; the store itself keeps 5 and "5" as two rows)."""
        first = next(iter(self.iter_rows(1, with_vectors=False)), None)
        return id_type(list(first[0][:1])) if first is not None and first[0] else None

    def finish_build(self) -> None:
        """Nothing: every row is durable and searchable when `add` returns."""
        return None

    def read_all(self, *, with_vectors: bool = True) -> tuple[list[Any], list[str], np.ndarray | None]:
        """Every id, text (and embedding) of the collection, read in batches."""
        ids, texts, vectors = [], [], []
        for batch_ids, batch_texts, batch_vectors, _ in self.iter_rows(with_vectors=with_vectors):
            ids.extend(batch_ids)
            texts.extend(batch_texts)
            if with_vectors:
                vectors.append(batch_vectors)
        if not with_vectors:
            return ids, texts, None
        stacked = np.concatenate(vectors) if vectors else np.empty((0, self.embedding_dim), dtype=np.float32)
        return ids, texts, stacked

    def dataset(self) -> datasets.Dataset | None:
        ids, texts, _ = self.read_all(with_vectors=False)
        return rows_dataset(ids, texts) if ids else None

    def all_ids(self) -> list[int | str]:
        return self.read_all(with_vectors=False)[0]

    def all_texts(self) -> list[str]:
        return self.read_all(with_vectors=False)[1]

    def all_embeddings(self) -> torch.Tensor:
        return torch.from_numpy(self.read_all()[2])

    def __enter__(self) -> DatabaseStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.where!r}, collection={self.collection!r}, embedding_dim={self.embedding_dim})"
        )


def gathered_rows(
    ids: Sequence[int | str], found: dict[Any, tuple[str, Any]], embedding_dim: int | None
) -> tuple[list[str], np.ndarray]:
    """`rows_by_id`'s answer from the rows a database returned (`id -> (text, vector)`), in the order asked."""
    missing = [member for member in ids if member not in found]
    if missing:
        raise KeyError(f"ids not in the index: {missing[:5]}")
    if not ids:
        return [], np.empty((0, embedding_dim or 0), dtype=np.float32)
    vectors = np.asarray([found[member][1] for member in ids], dtype=np.float32)
    return [found[member][0] for member in ids], vectors


def import_engine(module: str, backend: str, package: str) -> Any:
    """The database engine's client module, or an ImportError naming the extra (named as the backend) that installs
    it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f'backend="{backend}" needs the {package} package: {install_hint(backend)}') from err


def local_folder(location: str, create: bool, engine: str) -> Path:
    """The folder of an engine embedded in this process, made if missing (unless `create=False`, which refuses it);
    a file there is refused."""
    path = Path(location).expanduser()
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} is a file, not a {engine} folder: choose a folder")
    if not path.exists() and not create:
        raise FileNotFoundError(f"no {engine} folder at {path}: pass create=True (and embedding_dim) to make one")
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_creatable(collection: str, where: str, create: bool, embedding_dim: int | None) -> None:
    """A missing collection may be created only with `create` and an `embedding_dim`."""
    if not create:
        raise FileNotFoundError(
            f"no collection {collection!r} at {where}: pass create=True with embedding_dim to create it"
        )
    if embedding_dim is None:
        raise ValueError(f"creating collection {collection!r} at {where} needs embedding_dim")


def check_stored_dim(collection: str, where: str, dim: int, embedding_dim: int | None) -> None:
    """An existing collection holds embeddings of the size asked for (when one is)."""
    if embedding_dim is not None and dim != embedding_dim:
        raise ValueError(
            f"collection {collection!r} at {where} holds {dim}-dim embeddings, not {embedding_dim}: "
            "use the model that built it, or another collection"
        )


def rows_dataset(ids: list[Any], texts: list[str]) -> datasets.Dataset:
    """The columns `id` (int64 or string, as `id_type` finds them) and `text` as an in-memory `datasets.Dataset`."""
    kind = id_type(ids)
    features = datasets.Features(
        {"id": datasets.Value("int64" if kind == "int" else "string"), "text": datasets.Value("string")}
    )
    # Not `Dataset.from_dict`: it fingerprints the table by pickling all of it (2M texts: 4 s against 0.4 s, and a
    # pickled copy in memory). These rows never go through a cached transform, so a random fingerprint, as
    # `datasets` gives a table it cannot hash, is all they need.
    table = InMemoryTable.from_pydict({"id": ids, "text": texts}, schema=features.arrow_schema)
    return datasets.Dataset(
        table, info=datasets.DatasetInfo(features=features), fingerprint=generate_random_fingerprint()
    )


__all__ = [
    "GROUPS_SUFFIX",
    "GROUP_SETTINGS_KEY",
    "DatabaseStore",
    "RowBatch",
    "VectorStore",
    "check_creatable",
    "check_stored_dim",
    "gathered_rows",
    "import_engine",
    "local_folder",
    "rows_dataset",
]
