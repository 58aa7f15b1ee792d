"""
A searchable corpus of embedded texts that answers "has this question been asked before?".

Three scales, one API (`backends`):

* in memory: the corpus (ids and texts) in a `datasets.Dataset`, the embeddings in an
  `EmbeddingTable`; exact search in torch (`topk_cosine`, chunked, no extra install);
* on disk: the same, saved and memory-mapped (Arrow texts, `.npy` embeddings), searched through a
  FAISS index that keeps only small codes in memory (int8, binary, IVF, HNSW: `ann_index`), whose
  candidates are rescored exactly against the memory-mapped embeddings;
* a database: the texts, embeddings and metadata in a LanceDB table (`lancedb_store`) or a Qdrant
  collection (`qdrant_store`), embedded in a folder or on a server/cluster by URI, with deletes and
  metadata filters.

The folder an index is saved to is described in `index_files`; mining duplicate pairs inside the
index is `paraphrase_pairs`; a corpus too large for one process is encoded in resumable shards
(`embedding_shards`). Given a cross-encoder, search and mining become retrieve-then-rerank: the index
proposes candidates, the cross-encoder scores and decides them (`reranking`).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets
import numpy as np
import torch

from hfsiamese.models.siamese.inference import check_truncate_dim
from hfsiamese.models.siamese.score_calibrator import ScoreCalibrator
from hfsiamese.models.siamese.scoring import (
    check_threshold,
    resolve_decision_threshold,
    resolve_threshold,
    stored_calibrator,
    threshold_in_unit,
)
from hfsiamese.search.ann_index import AnnSpec, FaissAnnIndex, training_sample
from hfsiamese.search.backends import DATABASE_BACKENDS, IN_PROCESS_BACKENDS, Backend, check_backend, open_database
from hfsiamese.search.embedding_table import EmbeddingTable
from hfsiamese.search.exact import topk_cosine
from hfsiamese.search.index_files import INDEX_CONFIG_NAME, read_index_folder, write_index_folder
from hfsiamese.search.input_checks import check_k, check_metadata, check_texts, id_type, plain_ids, texts_and_ids
from hfsiamese.search.paraphrase_pairs import paraphrase_pairs
from hfsiamese.search.recall_tuning import (
    DEFAULT_RECALL_TARGET,
    RECALL_K,
    REMEASURE_GROWTH,
    RecallProbe,
    RecallReport,
    auto_ladder,
    check_recall_target,
    describe,
    latencies_ms,
    sample_rows,
    tunable,
)
from hfsiamese.search.reranking import (
    NO_CROSS_ENCODER_THRESHOLD,
    check_rerank_k,
    cross_encoder_threshold,
    rerank_matches,
    rerank_pairs,
    resolve_cross_encoder,
)

if TYPE_CHECKING:
    from hfsiamese.models.siamese.modeling_siamese import SiameseModel

logger = logging.getLogger(__name__)

# Questions every saved index embeds with its model: their embeddings, saved with the index, tell at load
# time whether the model given is the one that built it (a folder can be moved or renamed; its weights'
# embeddings cannot). An int8 export of the same model stays above 0.97 cosine on them; another model
# scores unrelated neighbours and lands far below.
PROBE_QUESTIONS = (
    "How do I learn Python?",
    "Why is the sky blue?",
    "What is the best way to lose weight?",
    "How can I make money online?",
    "What is the capital of France?",
    "How do I cook rice?",
)
SAME_MODEL_MIN_COSINE = 0.95


class DuplicateIndex:
    r"""
    Embeddings of a corpus of texts, searchable by cosine similarity, for duplicate detection.

    Build it from a list of texts or a `datasets.Dataset`, search it with new texts, grow it with
    `add`, remove texts with `delete`, save it to a folder and load it back. Scores are the cosine
    similarity of the model's L2-normalised embeddings (also for models with a classification head,
    whose head scores pairs, not a corpus). Where a cosine threshold is known (the model's calibrated
    `config.threshold`, or `threshold=`), each match also says whether it counts as a duplicate. Where
    the model is calibrated to probabilities on cosines (`model.calibrate(..., method="platt" |
    "isotonic")`), the index keeps that map (and saves it): `find_duplicates` then gives each pair's
    `probability` and takes `probability_threshold=`.

    With a cross-encoder (`cross_encoder=` here, or per call of `search` / `find_duplicates`), the index
    retrieves candidates and the cross-encoder reranks and decides them: `"score"` is then the
    cross-encoder's score in [0, 1], `"retrieval_score"` the cosine, and thresholds are cross-encoder
    scores (see `search`).

    Args:
        model: the `SiameseModel` that embeds texts (or the folder / Hub id to load one from). An
            index loaded without one can search precomputed embeddings and mine duplicates, but
            not embed new texts.
        tokenizer: the model's tokenizer; by default the one saved beside the model.
        backend: `"exact"` (chunked top-k in torch, default), `"faiss"` (a FAISS index: exact, or
            quantised and approximate, see `quantization` and `structure`), or a database at `database`:
            `"lancedb"` or `"qdrant"` (inserts, deletes and metadata filters without a rebuild).
        threshold: cosine similarity at or above which a match is a duplicate (default: the
            model's `config.threshold` where it is a cosine threshold).
        batch_size, max_length: encoding settings, for the corpus and the queries alike.
        truncate_dim: keep the first that many dimensions of every embedding, re-normalised (a model trained with
            the Matryoshka loss: at 128 of 384 dimensions the index takes a third of the memory); saved with the index.
        query_chunk_size, corpus_chunk_size: block sizes of the exact search; peak extra memory
            is about `query_chunk_size * corpus_chunk_size * 4` bytes (256 MiB by default),
            whatever the corpus size.
        quantization: with `backend="faiss"`, the codes the index keeps in memory: `"none"` (float32),
            `"int8"`, `"pq"` or `"binary"` (1 bit a dimension); quantised candidates are rescored exactly
            against the full embeddings. Default `"auto"`: float32 up to 1M texts, beyond it the cheapest codes
            that reach `recall_target` (binary, else int8, else float32).
        structure: with `backend="faiss"`: `"flat"` (exhaustive), `"hnsw"` or `"ivf"` (approximate);
            default `"auto"`: flat up to 1M texts, beyond it tuned with `quantization` (IVF, else flat).
        rescore_multiplier: a quantised index rescores `rescore_multiplier * k` candidates per query.
        ann: every FAISS setting at once (`hfsiamese.search.ann_index.AnnSpec`: also `nlist`, `nprobe`,
            `hnsw_m`, `ef_search`, `pq_bytes`), instead of the three options above.
        faiss_string_factory: a FAISS index factory string (e.g. `"HNSW32"`) for a float index,
            instead of `quantization` and `structure`.
        recall_target: with `backend="faiss"`, the share of the exact top 10 its search must find (default 0.95).
            The FAISS index, when built, is measured on a sample of its own corpus (`recall_report`); with
            `quantization` and `structure` `"auto"` the cheapest settings that reach the target are chosen
            (`hfsiamese.search.recall_tuning`), settings asked for are kept but warned about below it. `None`:
            nothing measured, `"auto"` chooses by corpus size alone.
        database: with `backend="lancedb"` or `"qdrant"`, a folder (the engine embedded in this
            process, created if missing) or the URI of a server or cluster (LanceDB: `db://...` or
            shared object storage such as `s3://...`; Qdrant: `http(s)://...`); `collection` names the
            table / collection there and `api_key` is the server's key.
        cross_encoder: a default reranker for `search` and `find_duplicates` (a
            `hfsiamese.cross_encoder.model.CrossEncoder` or its folder); a per-call `cross_encoder=` replaces it.
            It is not saved with the index (it is a model folder of its own): pass it again to `load`.

    Examples:

    ```python
    >>> from transformers import AutoModel
    >>> import hfsiamese
    >>> from hfsiamese.search import DuplicateIndex
    >>> model = AutoModel.from_pretrained("outputs/lstm_qqp")  # the default recipe's LSTM
    >>> index = DuplicateIndex.build(["How do I learn Python?", "Why is the sky blue?"], model)
    >>> index.search("What is the best way to learn Python?", k=1)
    [{'id': 0, 'text': 'How do I learn Python?', 'score': 0.929..., 'is_duplicate': True}]
    >>> index.save("outputs/qqp_index")
    ```
    """

    def __init__(
        self,
        model: SiameseModel | str | None = None,
        tokenizer: Any | None = None,
        *,
        backend: Backend = "exact",
        threshold: float | None = None,
        batch_size: int = 64,
        max_length: int | None = None,
        truncate_dim: int | None = None,
        query_chunk_size: int = 1024,
        corpus_chunk_size: int = 65536,
        quantization: str = "auto",
        structure: str = "auto",
        rescore_multiplier: int = 8,
        ann: AnnSpec | None = None,
        faiss_string_factory: str | None = None,
        database: str | os.PathLike | None = None,
        collection: str = "duplicate_index",
        api_key: str | None = None,
        cross_encoder: Any | None = None,
        recall_target: float | None = DEFAULT_RECALL_TARGET,
    ) -> None:
        if query_chunk_size < 1 or corpus_chunk_size < 1:
            raise ValueError(
                f"chunk sizes must be at least 1, got query_chunk_size={query_chunk_size}, "
                f"corpus_chunk_size={corpus_chunk_size}"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.backend = check_backend(backend)
        self.ann_spec = _ann_spec(ann, quantization, structure, rescore_multiplier, faiss_string_factory)
        self.recall_target = check_recall_target(recall_target)
        if backend != "faiss" and not self.ann_spec.is_default:
            raise ValueError(
                f'quantization, structure, ann and faiss_string_factory apply to backend="faiss", not {backend!r}'
            )
        if backend in DATABASE_BACKENDS and database is None:
            raise ValueError(
                f'backend="{backend}" needs database=: a folder (the embedded engine) or the URI of a server'
            )
        if backend not in DATABASE_BACKENDS and database is not None:
            raise ValueError(f'database= applies to backend="lancedb" or "qdrant", not {backend!r}')
        self.model = self._resolve_model(model)
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_length = max_length
        self.truncate_dim = truncate_dim
        if truncate_dim is not None and self.model is not None:
            check_truncate_dim(truncate_dim, self.model.config.sentence_embedding_dim)
        self.query_chunk_size = query_chunk_size
        self.corpus_chunk_size = corpus_chunk_size
        self.threshold = check_threshold(
            threshold if threshold is not None else threshold_in_unit(getattr(self.model, "config", None), "cosine")
        )
        # Only a map of cosines applies here (a head's map is of its probabilities, which the index never computes).
        self.calibrator: ScoreCalibrator | None = stored_calibrator(getattr(self.model, "config", None), "cosine")
        self.embedding_dim: int | None = (
            (truncate_dim or self.model.config.sentence_embedding_dim) if self.model is not None else None
        )
        self.model_name_or_path: str | None = getattr(self.model, "name_or_path", None) or None
        self._table = EmbeddingTable(self.embedding_dim or 0)
        self._corpus: datasets.Dataset | None = None
        self._ann: FaissAnnIndex | None = None
        self._recall: RecallReport | None = None  # what the FAISS index was measured to find
        self._id_type: str | None = None
        self._id_set: set[Any] | None = None
        self._model_fingerprint: dict[str, Any] | None = None  # a loaded index's, kept when it is saved without a model
        self._store: Any | None = None
        if backend in DATABASE_BACKENDS:
            self._store = open_database(
                backend, database, collection=collection, embedding_dim=self.embedding_dim, api_key=api_key
            )
            self.database = _database_location(database)
            self.collection = collection
        # Not saved with the index: a cross-encoder is a model folder of its own.
        self.cross_encoder: Any | None = resolve_cross_encoder(cross_encoder) if cross_encoder is not None else None

    # ----------------------------------------------------------------------------------------
    # Building
    # ----------------------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        corpus: Sequence[str] | datasets.Dataset,
        model: SiameseModel | str,
        tokenizer: Any | None = None,
        *,
        ids: Sequence[int | str] | None = None,
        text_column: str = "text",
        id_column: str | None = None,
        metadata: Sequence[dict[str, Any]] | None = None,
        shards_dir: str | os.PathLike | None = None,
        shard_size: int = 100_000,
        show_progress_bar: bool = False,
        **kwargs: Any,
    ) -> DuplicateIndex:
        """
        Embed a corpus and index it.

        Args:
            corpus: a list of texts, or a `datasets.Dataset` whose `text_column` holds them.
            model, tokenizer: as in the constructor (a model is required here).
            ids: one id per text (all integers or all strings, unique); default the row numbers.
            id_column: with a `Dataset`, the column holding the ids (instead of `ids`).
            metadata: one dict per text (e.g. `{"site": "cooking"}`) that `search(filter=...)` can
                select on (a database backend).
            shards_dir: encode the corpus in resumable shards of `shard_size` texts written to this
                folder (`embedding_shards`): a build that is interrupted and started again skips the
                shards it finished, and under `accelerate launch` each process encodes its share.
            show_progress_bar: show a tqdm bar while encoding.
            **kwargs: the constructor's options (`backend`, `threshold`, `batch_size`, chunk sizes...).

        With `backend="faiss"` the FAISS index is built here too, tuned and measured (`recall_report`; one log line).
        """
        if model is None:
            raise ValueError("build needs a model to embed the corpus")
        texts, ids = texts_and_ids(corpus, ids, text_column, id_column)
        if not texts:
            raise ValueError("cannot build an index from an empty corpus")
        index = cls(model, tokenizer, **kwargs)
        if index._store is not None and len(index._store):
            raise ValueError(
                f"the collection {index.collection!r} at {index.database} already holds {len(index._store)} texts: "
                "DuplicateIndex.load it (and add), or build into another collection"
            )
        if shards_dir is None:
            index.add(texts, ids, metadata=metadata, show_progress_bar=show_progress_bar)
            return index._with_ann()
        from hfsiamese.search.shards import EmbeddingShards, encode_to_shards

        encode_to_shards(
            texts,
            shards_dir,
            index.model,
            index.tokenizer,
            shard_size=shard_size,
            batch_size=index.batch_size,
            max_length=index.max_length,
            truncate_dim=index.truncate_dim,
            show_progress_bar=show_progress_bar,
        )
        shards = EmbeddingShards.open(shards_dir)
        if index._store is not None:
            index.add_embeddings(texts, shards, ids, metadata=metadata)
        else:  # the embeddings stay on disk: one memory-mapped file assembled from the shards
            index._adopt(texts, ids, _assembled_embeddings(shards, Path(shards_dir)), metadata)
        return index._with_ann()

    def _with_ann(self) -> DuplicateIndex:
        """This index, its FAISS index built (and measured) now with `backend="faiss"`: part of `build`."""
        if self.backend == "faiss":
            self._ensure_ann()
        return self

    def _adopt(
        self, texts: list[str], ids: Sequence[int | str] | None, table: EmbeddingTable, metadata: Sequence[dict] | None
    ) -> None:
        """Take a (memory-mapped) table of the corpus's embeddings as this empty index's own."""
        new_ids = self._check_new_ids(ids, len(texts))
        check_metadata(metadata, len(texts), database=False)
        self._check_embedding_shape(table, len(texts))
        kind = id_type(new_ids)
        features = datasets.Features(
            {"id": datasets.Value("int64" if kind == "int" else "string"), "text": datasets.Value("string")}
        )
        self._corpus = datasets.Dataset.from_dict({"id": new_ids, "text": texts}, features=features)
        self._table, self._ann, self._recall, self._id_type = table, None, None, kind
        self._id_set = None  # built on first need

    def add(
        self,
        texts: Sequence[str],
        ids: Sequence[int | str] | None = None,
        *,
        metadata: Sequence[dict[str, Any]] | None = None,
        show_progress_bar: bool = False,
    ) -> None:
        """
        Embed `texts` and append them to the index. `ids` default to the next row numbers (only
        possible while the index's ids are integers); an id already in the index is an error, and
        so is an empty text. Nothing changes unless every text is embedded. A FAISS index takes the
        new rows without a rebuild; a database has every row durably when `add` returns.
        """
        texts = check_texts(texts)
        if not texts:
            return
        self._check_new_ids(ids, len(texts))  # before the (long) encoding
        self.add_embeddings(texts, self._encode(texts, show_progress_bar=show_progress_bar), ids, metadata=metadata)

    def add_embeddings(
        self,
        texts: Sequence[str],
        embeddings: torch.Tensor | np.ndarray | Any,
        ids: Sequence[int | str] | None = None,
        *,
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        """
        `add` for texts embedded already (by this index's model: e.g. `EmbeddingShards` of a sharded
        encoding, which are added shard by shard, never all in memory at once).
        """
        texts = check_texts(texts)
        new_ids = self._check_new_ids(ids, len(texts))
        metadata = check_metadata(metadata, len(texts), database=self._store is not None)
        batches = _embedding_batches(embeddings, len(texts))
        kind = self._id_type or id_type(new_ids)
        if self._store is not None:
            for start, batch in batches:
                self._check_embedding_shape(batch, len(batch))
                stop = start + len(batch)
                self._store.add(
                    new_ids[start:stop], texts[start:stop], batch, None if metadata is None else metadata[start:stop]
                )
            self._id_type = kind
            return
        table = EmbeddingTable(self.embedding_dim)
        for _, batch in batches:
            self._check_embedding_shape(batch, len(batch))
            table.append(batch)
        if len(table) != len(texts):
            raise ValueError(f"got {len(texts)} texts but {len(table)} embeddings")
        features = datasets.Features(
            {"id": datasets.Value("int64" if kind == "int" else "string"), "text": datasets.Value("string")}
        )
        rows = datasets.Dataset.from_dict({"id": new_ids, "text": texts}, features=features)
        self._corpus = rows if self._corpus is None else datasets.concatenate_datasets([self._corpus, rows])
        for _, chunk in table.chunks():
            self._table.append(chunk)
            if self._ann is not None:
                self._ann.add(chunk.numpy())  # no rebuild: FAISS appends, in row order
        self._id_type = kind
        self._existing_ids().update(new_ids)
        self._remeasure_after_growth()

    def _check_embedding_shape(self, embeddings: Any, count: int) -> None:
        if tuple(embeddings.shape) != (count, self.embedding_dim):
            raise ValueError(
                f"the model gave embeddings of shape {tuple(embeddings.shape)}, expected ({count}, {self.embedding_dim})"
            )

    def delete(self, ids: Sequence[int | str]) -> int:
        """
        Remove the texts with these ids (ids not in the index are ignored); returns how many were removed.

        A database deletes in place. An in-process index is compacted: the kept rows are copied into
        memory and a FAISS index is rebuilt at the next search, so for a large corpus that changes
        every day prefer a database backend.
        """
        ids = plain_ids(ids)
        if self._store is not None:
            return self._store.delete(ids)
        doomed = set(ids) & self._existing_ids()
        if not doomed:
            return 0
        keep = np.array([row for row, i in enumerate(self._corpus["id"]) if i not in doomed], dtype=np.int64)
        self._corpus = self._corpus.select(keep).flatten_indices() if len(keep) else None
        self._table = self._table.select(keep) if len(keep) else EmbeddingTable(self.embedding_dim)
        self._ann, self._recall = None, None
        self._id_set = self._existing_ids() - doomed
        if self._corpus is None:
            self._id_type = None
        return len(doomed)

    def _check_new_ids(self, ids: Sequence[int | str] | None, count: int) -> list[Any]:
        existing = self._existing_ids()
        if ids is None:
            if self._id_type == "str":
                raise ValueError("this index has string ids: pass ids=... for the new texts")
            start = len(self)
            ids = list(range(start, start + count))
        else:
            ids = plain_ids(ids)
            if len(ids) != count:
                raise ValueError(f"got {count} texts but {len(ids)} ids: give one id per text")
        kind = id_type(ids)
        if self._id_type is not None and kind != self._id_type:
            raise TypeError(f"this index has {self._id_type} ids, the new ids are {kind}s")
        seen: set[Any] = set()
        repeated = [i for i in ids if i in seen or seen.add(i)]
        if repeated:
            raise ValueError(f"duplicate ids among the new texts: {sorted(set(repeated))[:5]}")
        if isinstance(existing, _StoreIds):  # one query to the database for all of them
            clashing = [i for i, present in zip(ids, existing.store.contains(ids)) if present]
        else:
            clashing = [i for i in ids if i in existing]
        if clashing:
            raise ValueError(f"ids already in the index: {clashing[:5]}{' ...' if len(clashing) > 5 else ''}")
        return ids

    def _existing_ids(self) -> set[Any]:
        # Built on first need: an index loaded only to be searched never pays for a set of 1M ids.
        if self._id_set is None:
            if self._store is not None:
                return _StoreIds(self._store)
            self._id_set = set(self._corpus["id"]) if self._corpus is not None else set()
        return self._id_set

    def _encode(self, texts: list[str], *, show_progress_bar: bool = False) -> torch.Tensor:
        if self.model is None:
            hint = f" (this index was built with {self.model_name_or_path!r})" if self.model_name_or_path else ""
            raise ValueError(f"embedding texts needs a model: pass model=... when creating or loading the index{hint}")
        return self.model.encode(
            texts,
            self.tokenizer,
            batch_size=self.batch_size,
            max_length=self.max_length,
            show_progress_bar=show_progress_bar,
            truncate_dim=self.truncate_dim,
        )

    def _check_same_model(self, fingerprint: dict[str, Any], path: Path, built_with: str | None) -> None:
        """Refuse a model whose embeddings of the saved probe questions differ from the building model's."""
        saved = torch.tensor(fingerprint["embeddings"], dtype=torch.float32)
        now = self._encode(list(fingerprint["texts"])).float().cpu()
        agreement = torch.nn.functional.cosine_similarity(saved, now, dim=1).min().item()
        if agreement < SAME_MODEL_MIN_COSINE:
            raise ValueError(
                f"the index in {path} was built with another model ({built_with!r}): this model "
                f"({self.model_name_or_path!r}) embeds its probe questions differently (cosine {agreement:.3f} < "
                f"{SAME_MODEL_MIN_COSINE}), so its searches would return unrelated questions; search it with the model "
                "that built it, or rebuild the index with this one"
            )

    @staticmethod
    def _resolve_model(model: SiameseModel | str | None) -> Any:
        if isinstance(model, (str, os.PathLike)):
            from hfsiamese.loading import load_siamese_model

            return load_siamese_model(model)  # a PyTorch checkpoint or an ONNX export
        if model is not None and not hasattr(model, "encode"):
            raise TypeError(f"model must be a SiameseModel (or its folder), got {type(model).__name__}")
        return model

    # ----------------------------------------------------------------------------------------
    # Views
    # ----------------------------------------------------------------------------------------
    def __len__(self) -> int:
        if self._store is not None:
            return len(self._store)
        return 0 if self._corpus is None else self._corpus.num_rows

    def __repr__(self) -> str:
        where = f", database={self.database!r}, collection={self.collection!r}" if self._store is not None else ""
        faiss = f", ann={self._ann.spec if self._ann is not None else self.ann_spec}" if self.backend == "faiss" else ""
        return (
            f"{type(self).__name__}(num_texts={len(self)}, embedding_dim={self.embedding_dim}, "
            f"backend={self.backend!r}{where}{faiss}, model={self.model_name_or_path!r}, threshold={self.threshold})"
        )

    @property
    def embeddings(self) -> torch.Tensor:
        """The `(num_texts, dim)` float32 embeddings, in row order (a copy in memory if they are memory-mapped)."""
        if self._store is not None:
            return torch.from_numpy(self._database_rows()[2])
        return self._table.to_tensor()

    @property
    def memory_mapped(self) -> bool:
        """Whether the embeddings are read from the saved folder's file rather than held in memory."""
        return self._table.memory_mapped

    @property
    def corpus(self) -> datasets.Dataset | None:
        """The ids and texts as a `datasets.Dataset` (columns `id`, `text`), in row order."""
        if self._store is not None:
            ids, texts, _ = self._database_rows(with_vectors=False)
            return datasets.Dataset.from_dict({"id": ids, "text": texts}) if ids else None
        return self._corpus

    @property
    def ids(self) -> list[int | str]:
        if self._store is not None:
            return self._database_rows(with_vectors=False)[0]
        return [] if self._corpus is None else list(self._corpus["id"])

    @property
    def texts(self) -> list[str]:
        if self._store is not None:
            return self._database_rows(with_vectors=False)[1]
        return [] if self._corpus is None else list(self._corpus["text"])

    def _database_rows(self, *, with_vectors: bool = True) -> tuple[list[Any], list[str], np.ndarray | None]:
        """Every id, text (and embedding) of the database collection, read in batches."""
        ids, texts, vectors = [], [], []
        for batch_ids, batch_texts, batch_vectors, _ in self._store.iter_rows(with_vectors=with_vectors):
            ids.extend(batch_ids)
            texts.extend(batch_texts)
            if with_vectors:
                vectors.append(batch_vectors)
        if not with_vectors:
            return ids, texts, None
        stacked = np.concatenate(vectors) if vectors else np.empty((0, self.embedding_dim), dtype=np.float32)
        return ids, texts, stacked

    # ----------------------------------------------------------------------------------------
    # Search
    # ----------------------------------------------------------------------------------------
    def search(
        self,
        queries: str | Sequence[str],
        k: int = 10,
        *,
        threshold: float | None = None,
        backend: Backend | None = None,
        filter: dict[str, Any] | None = None,
        cross_encoder: Any | None = None,
        rerank_k: int | None = None,
    ) -> list[dict[str, Any]] | list[list[dict[str, Any]]]:
        """
        The `k` indexed texts most similar to each query, best first.

        Each match is a dict `{"id", "text", "score"}` (score: cosine similarity), plus
        `"is_duplicate"` (`score >= threshold`) when a threshold is known. A single string gives
        one list of matches; a list of strings gives one list per query (as pipelines do).
        `k` is capped at the size of the index.

        With a cross-encoder (`cross_encoder=`, else the index's own, see the constructor), the
        bi-encoder retrieves `rerank_k` candidates per query (default `max(2 * k, 20)`; at least `k`),
        the cross-encoder scores them all in one batched call, and the `k` it scores highest are
        returned, best first: `"score"` is the cross-encoder's score in [0, 1], `"retrieval_score"`
        the cosine, `"is_duplicate"` is `score >= threshold` where `threshold` is then a
        cross-encoder score (default its calibrated `config.threshold`), and `"probability"` is
        the cross-encoder's calibrated P(duplicate) where it stores a calibration.
        """
        single = isinstance(queries, str)
        texts = check_texts([queries] if single else queries, "queries")
        check_k(k)
        if filter is not None and self._store is None:
            raise ValueError('filter= needs a database backend ("lancedb" or "qdrant"): the texts there carry metadata')
        reranker = self._reranker(cross_encoder)
        if reranker is None:
            if rerank_k is not None:
                raise ValueError(
                    "rerank_k applies only with a cross_encoder: without one the search returns the bi-encoder's top k"
                )
            threshold = check_threshold(threshold) if threshold is not None else self.threshold
        else:
            rerank_k = check_rerank_k(rerank_k, k)
            threshold = cross_encoder_threshold(reranker, threshold)
        if not texts:
            return []
        self._check_not_empty()
        if self._store is not None:
            if backend not in (None, self.backend):
                raise ValueError(f"this index lives in {self.backend}: backend={backend!r} cannot search it")
            candidates = self._store.search(self._encode(texts).float().cpu().numpy(), rerank_k or k, filter=filter)
        else:
            scores, rows = self.search_embeddings(self._encode(texts), rerank_k or k, backend=backend)
            candidates = self._matches(scores, rows, None)
        if reranker is None:
            results = [_decide(found, threshold) for found in candidates]
        else:
            results = [found[:k] for found in rerank_matches(reranker, texts, candidates, threshold=threshold)]
        return results[0] if single else results

    def _reranker(self, cross_encoder: Any | None) -> Any | None:
        """The cross-encoder of a call: the one given (loaded if a folder), else the index's own (or None)."""
        return resolve_cross_encoder(cross_encoder) if cross_encoder is not None else self.cross_encoder

    def search_embeddings(
        self, query_embeddings: torch.Tensor, k: int = 10, *, backend: Backend | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """
        Tensor form of `search`: `(scores, rows)`, both `(num_queries, min(k, len(index)))`, best
        first; `rows` index `embeddings` and `corpus` (-1 where an approximate index found fewer than
        `k`). Queries should be L2-normalised (as `model.encode` returns them) for the scores to be
        cosine similarities. A quantised FAISS index's candidates are rescored exactly, so scores are
        always exact cosines; only which rows are found may differ from `backend="exact"`.
        """
        check_k(k)
        if self._store is not None:
            raise ValueError(
                "search_embeddings returns row numbers, which a database collection has none of: use search"
            )
        self._check_not_empty()
        if query_embeddings.dim() != 2 or query_embeddings.shape[1] != self.embedding_dim:
            raise ValueError(
                f"query embeddings must have shape (num_queries, {self.embedding_dim}), got {tuple(query_embeddings.shape)}"
            )
        backend = check_backend(backend or self.backend)
        if backend not in IN_PROCESS_BACKENDS:
            raise ValueError(f"backend={backend!r} is not how this index was built: use 'exact' or 'faiss'")
        queries = query_embeddings.detach().float().cpu()
        if backend == "exact" or (self.backend != "faiss" and self.ann_spec.is_default):
            return self._exact_topk(queries, k)
        return self._ann_topk(self._ensure_ann(), queries.numpy(), k)

    def _ann_topk(
        self, ann: FaissAnnIndex, queries: np.ndarray, k: int, *, own_row: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The top k through a FAISS index, quantised candidates rescored exactly. `own_row`: the queries are rows
        of the index, so one more is returned (and one more candidate rescored): the query's own row takes that
        place rather than a share of the rescoring."""
        n = min(k + own_row, len(self))
        if not ann.spec.quantized:
            scores, rows = ann.search(queries, n)
            return torch.from_numpy(scores), torch.from_numpy(rows)
        _, candidates = ann.search(queries, min(k * ann.spec.rescore_multiplier + own_row, len(self)))
        return self._rescore(queries, candidates, n)

    def _exact_topk(
        self, queries: torch.Tensor, k: int, exclude_indices: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact top-k over the embeddings, piece by piece (a memory-mapped file is read, never mapped whole), merged."""
        best: tuple[torch.Tensor, torch.Tensor] | None = None
        for offset, piece in self._table.chunks(self.corpus_chunk_size):
            scores, rows = topk_cosine(
                queries,
                piece,
                k,
                query_chunk_size=self.query_chunk_size,
                corpus_chunk_size=self.corpus_chunk_size,
                exclude_indices=None if exclude_indices is None else exclude_indices - offset,
            )
            rows = torch.where(rows >= 0, rows + offset, rows)
            if best is not None:
                scores, rows = torch.cat([best[0], scores], dim=1), torch.cat([best[1], rows], dim=1)
                scores, order = scores.topk(min(k, scores.shape[1]), dim=1)
                rows = rows.gather(1, order)
            best = (scores, rows)
        return best

    def _rescore(self, queries: np.ndarray, candidates: np.ndarray, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact cosines of each query's candidate rows (read from the full embeddings), best `k` first."""
        found = candidates >= 0
        vectors = self._table.gather(np.where(found, candidates, 0))
        scores = np.einsum("qd,qnd->qn", queries, vectors)
        scores[~found] = -np.inf
        order = np.argsort(-scores, axis=1, kind="stable")[:, : min(k, scores.shape[1])]
        best = np.take_along_axis(scores, order, axis=1)
        rows = np.where(np.isfinite(best), np.take_along_axis(candidates, order, axis=1), -1)
        return torch.from_numpy(best.astype(np.float32)), torch.from_numpy(rows.astype(np.int64))

    def _ensure_ann(self) -> FaissAnnIndex:
        """The FAISS index over every row, built (tuned and measured: `_build_ann`) on first need."""
        if self._ann is None:
            self._ann, self._recall = self._build_ann()
        return self._ann

    def _new_ann(self, spec: AnnSpec) -> FaissAnnIndex:
        """A FAISS index of these settings over every row: trained on a seeded sample, then filled chunk by chunk."""
        ann = FaissAnnIndex(spec, self.embedding_dim)
        sample = training_sample(len(self), spec)
        if sample is not None:
            ann.train(self._table.gather(sample, pread=True))
        for _, chunk in self._table.chunks():
            ann.add(chunk.numpy())
        return ann

    def _build_ann(self) -> tuple[FaissAnnIndex, RecallReport | None]:
        """The FAISS index and what it was measured to find: `"auto"` settings tuned to the recall target, settings
        asked for built as asked (and warned about below the target); nothing measured without a target."""
        asked, target, num_texts = self.ann_spec, self.recall_target, len(self)
        if target is None:
            ann = self._new_ann(asked.resolved(num_texts, self.embedding_dim))
            logger.info(
                f"FAISS index over {num_texts} texts: {describe(ann.spec)} (recall not measured: recall_target=None)"
            )
            return ann, None
        if tunable(asked):
            ann, report = self._tuned_ann(asked, target)
        else:
            ann = self._new_ann(asked.resolved(num_texts, self.embedding_dim))
            report = self._measured(ann, self._recall_probe(), tuned=False, reason="the settings asked for")
        logger.info(f"FAISS index over {num_texts} texts: {report.summary()}")
        if not report.meets_target:
            warnings.warn(
                f"the FAISS index ({report.settings}) finds {report.recall:.3f} of the exact top {report.k} (measured on "
                f"{report.num_queries} rows of its corpus), below the recall target {target}: leave quantization and "
                'structure "auto" to have them tuned to the target, ask for wider settings (more nprobe, a larger '
                "rescore_multiplier, int8 codes), or lower recall_target",
                UserWarning,
                stacklevel=4,
            )
        return ann, report

    def _tuned_ann(self, asked: AnnSpec, target: float) -> tuple[FaissAnnIndex, RecallReport]:
        """The first settings of `auto_ladder` (cheapest first) that reach `target` on a sample of the corpus; each
        built index is tried at its search-time settings (lists probed, rescoring depth) before the next is built."""
        probe: RecallProbe | None = None
        trials: list[dict[str, Any]] = []
        for candidate in auto_ladder(asked, len(self), self.embedding_dim):
            ann = self._new_ann(candidate.build)
            if candidate.build.is_exact:
                if trials:
                    best = max(trial["recall"] for trial in trials)
                    reason = f"auto: none of {len(trials)} cheaper settings reached {target} (best {best:.3f})"
                else:
                    reason = f"auto: exact float32 search up to {asked.exact_up_to} texts"
                return ann, self._measured(ann, None, tuned=True, reason=reason, trials=trials)
            probe = probe or self._recall_probe()
            if probe is None:  # a single text: nothing to measure, nothing to tune
                return ann, self._measured(ann, None, tuned=True, reason="auto: the size-based choice")
            for search in candidate.searches:
                ann.set_search_settings(search.nprobe, search.rescore_multiplier)
                recall = self._probe_recall(ann, probe)
                trials.append({"settings": describe(search), "recall": round(recall, 4)})
                if recall >= target:
                    reason = (
                        f"auto: the first setting tried reached {target}" if len(trials) == 1
                        else f"auto: the cheapest of {len(trials)} settings tried to reach {target}"
                    )  # fmt: skip
                    return ann, self._measured(ann, probe, tuned=True, reason=reason, trials=trials, recall=recall)
            del ann  # its memory back before the next is built
        raise AssertionError("auto_ladder ends with exact search, which is always kept")

    def _recall_probe(self, k: int = RECALL_K) -> RecallProbe | None:
        """Seeded sample rows of the corpus and their exact top k (own rows left out); None under two texts."""
        k = min(k, len(self) - 1)
        if k < 1:
            return None
        own = sample_rows(len(self))
        queries = self._table.gather(own, pread=True)
        _, exact_rows = self._exact_topk(torch.from_numpy(queries), k, exclude_indices=torch.from_numpy(own))
        return RecallProbe(own, queries, exact_rows.numpy(), self._table.gather)

    def _probe_recall(self, ann: FaissAnnIndex, probe: RecallProbe) -> float:
        _, rows = self._ann_topk(ann, probe.queries, probe.k, own_row=True)
        return probe.recall(rows.numpy())

    def _measured(
        self,
        ann: FaissAnnIndex,
        probe: RecallProbe | None,
        *,
        tuned: bool,
        reason: str,
        trials: Sequence[dict[str, Any]] = (),
        recall: float | None = None,
    ) -> RecallReport:
        """The report of `ann` on `probe` (its recall measured unless given; latency timed query by query). Exact
        search, or a probe of None (under two texts), is not measured: it finds the exact top k."""
        common = {"num_texts": len(self), "target": self.recall_target, "settings": describe(ann.spec), "tuned": tuned,
                  "reason": reason, "trials": tuple(trials)}  # fmt: skip
        if probe is None or ann.spec.is_exact:
            return RecallReport(recall=1.0, k=RECALL_K, num_queries=0, p50_ms=None, p99_ms=None, **common)
        if recall is None:
            recall = self._probe_recall(ann, probe)
        p50, p99, timed = latencies_ms(lambda query: self._ann_topk(ann, query, probe.k), probe.queries)
        return RecallReport(
            recall=round(recall, 4), k=probe.k, num_queries=len(probe.own_rows), p50_ms=p50, p99_ms=p99,
            timed_queries=timed, **common,
        )  # fmt: skip

    def _remeasure_after_growth(self) -> None:
        """Measure the FAISS index again once it holds `REMEASURE_GROWTH` times the rows it was measured at (its IVF
        lists and int8 ranges were fitted on the smaller corpus); below the target, warn and suggest `rebuild_ann`."""
        ann, report = self._ann, self._recall
        if ann is None or report is None or self.recall_target is None or ann.spec.is_exact:
            return
        if len(self) < REMEASURE_GROWTH * max(report.num_texts, 1):
            return
        grown = f"re-measured after the index grew from {report.num_texts} to {len(self)} texts"
        self._recall = self._measured(ann, self._recall_probe(), tuned=report.tuned, reason=grown, trials=report.trials)
        logger.info(f"FAISS index over {len(self)} texts: {self._recall.summary()}")
        if not self._recall.meets_target:
            retune = " and re-tune its settings" if tunable(self.ann_spec) else ""
            warnings.warn(
                f"the FAISS index ({self._recall.settings}) now finds {self._recall.recall:.3f} of the exact top "
                f"{self._recall.k}, below the recall target {self.recall_target}, after growing from {report.num_texts} "
                f"to {len(self)} texts (its lists and code ranges were fitted on the smaller corpus): call "
                f"index.rebuild_ann() to fit it on every row{retune}",
                UserWarning,
                stacklevel=3,
            )

    @property
    def recall_report(self) -> RecallReport | None:
        """What the FAISS index was measured to find (`recall_tuning.RecallReport`: recall@10 against exact search,
        per-query latency, the settings and why); saved with the index. None before the FAISS index is built (at
        `build`, the first search or `save`), without `backend="faiss"`, with `recall_target=None`, and for an index
        saved by a release that did not measure (`measure_recall` measures it)."""
        return self._recall

    def rebuild_ann(self) -> RecallReport | None:
        """
        Build the FAISS index anew over every row (IVF lists and int8 ranges fitted on the corpus as it is now,
        `"auto"` settings tuned again to `recall_target`) and return its measurement. What the warning after a
        large `add` suggests; the rows and ids are unchanged.
        """
        self._check_faiss()
        self._ann, self._recall = None, None
        self._ensure_ann()
        return self._recall

    def measure_recall(self) -> RecallReport:
        """Measure the FAISS index as it is (nothing rebuilt or re-tuned) against `recall_target`, and keep the
        figures (saved with the index): e.g. for an index saved by a release that did not measure."""
        self._check_faiss()
        ann, previous = self._ensure_ann(), self._recall
        self._recall = self._measured(
            ann,
            self._recall_probe(),
            tuned=previous is not None and previous.tuned,
            reason="measured on request",
            trials=() if previous is None else previous.trials,
        )
        return self._recall

    def _check_faiss(self) -> None:
        if self.backend != "faiss":
            raise ValueError(
                f'only a backend="faiss" index has a FAISS index to measure or rebuild, this one is {self.backend!r}'
            )
        self._check_not_empty()

    def _matches(self, scores: torch.Tensor, rows: torch.Tensor, threshold: float | None) -> list[list[dict[str, Any]]]:
        """Turn `(scores, rows)` into per-query lists of match dicts, fetching all rows in one read (rows of -1 skipped)."""
        found_rows = rows.flatten()
        wanted = found_rows[found_rows >= 0].tolist()
        found = self._corpus[wanted] if wanted else {"id": [], "text": []}
        ids, texts = iter(found["id"]), iter(found["text"])
        flat_scores = scores.flatten().tolist()
        per_query = rows.shape[1]
        results = []
        for start in range(0, rows.numel(), per_query):
            matches = []
            for i in range(start, start + per_query):
                if found_rows[i] < 0:
                    continue
                match = {"id": next(ids), "text": next(texts), "score": flat_scores[i]}
                if threshold is not None:
                    match["is_duplicate"] = flat_scores[i] >= threshold
                matches.append(match)
            results.append(matches)
        return results

    def _check_not_empty(self) -> None:
        if len(self) == 0:
            raise ValueError("the index is empty: add texts first (DuplicateIndex.build or index.add)")

    # ----------------------------------------------------------------------------------------
    # Paraphrase mining
    # ----------------------------------------------------------------------------------------
    def find_duplicates(
        self,
        threshold: float | None = None,
        k: int = 10,
        *,
        probability_threshold: float | None = None,
        show_progress_bar: bool = False,
        cross_encoder: Any | None = None,
        candidate_threshold: float | None = None,
    ) -> list[dict[str, Any]]:
        """
        Pairs of indexed texts that look like duplicates of each other: every pair `(a, b)`, `a`
        before `b` in the index, whose cosine similarity is at least `threshold` (default: the
        index's threshold), sorted by score (highest first). With a probability calibration each
        pair also has its `probability`, and `probability_threshold=p` keeps the pairs whose
        calibrated P(duplicate) is at least `p` instead.

        How: each text's `k` nearest other texts are found with the index's own search (the chunked
        exact top-k, or the FAISS index with `backend="faiss"`: approximate and far faster on a large
        corpus; a database collection is read into memory and mined exactly) and the pairs among them
        that pass the threshold are kept, each once (see `paraphrase_pairs`): no `N x N` matrix is
        ever built, whatever the threshold.
        A pair is missed only inside a cluster of more than `k + 1` near-identical texts; when a
        text's `k`-th neighbour still passes the threshold, a warning says how many texts were
        capped: raise `k` then (`k >= len(index) - 1` is exhaustive).

        With a cross-encoder (`cross_encoder=`, else the index's own), the bi-encoder proposes the
        pairs whose cosine reaches `candidate_threshold` (default: the index's threshold; a lower
        one lets the cross-encoder find pairs the bi-encoder would miss), and the cross-encoder
        rescores them and keeps those whose score reaches `threshold`, then a cross-encoder score
        (default its calibrated `config.threshold`), or whose calibrated P(duplicate) reaches
        `probability_threshold` (the cross-encoder's calibration). Each pair then has `"score"` (the
        cross-encoder's), `"retrieval_score"` (the cosine) and, with a calibration, `"probability"`.
        """
        check_k(k)
        reranker = self._reranker(cross_encoder)
        if self._store is not None:  # mined in memory, exactly, over the collection's rows
            return self._in_process_view().find_duplicates(
                threshold,
                k,
                probability_threshold=probability_threshold,
                show_progress_bar=show_progress_bar,
                cross_encoder=reranker,
                candidate_threshold=candidate_threshold,
            )
        if reranker is not None:
            return self._find_duplicates_reranked(
                reranker, threshold, k, probability_threshold, candidate_threshold, show_progress_bar
            )
        if candidate_threshold is not None:
            raise ValueError(
                "candidate_threshold applies only with a cross_encoder: without one, threshold= is the cosine that decides"
            )
        return self._mine_pairs(threshold, k, probability_threshold, show_progress_bar)

    def _find_duplicates_reranked(
        self,
        reranker: Any,
        threshold: float | None,
        k: int,
        probability_threshold: float | None,
        candidate_threshold: float | None,
        show_progress_bar: bool,
    ) -> list[dict[str, Any]]:
        """The bi-encoder's candidate pairs (cosine >= candidate_threshold), rescored and decided by the cross-encoder."""
        if probability_threshold is None:
            decision = cross_encoder_threshold(reranker, threshold)
            if decision is None:  # said before any mining
                raise ValueError(NO_CROSS_ENCODER_THRESHOLD)
        else:  # a P(duplicate), as the lowest cross-encoder score that reaches it
            decision = resolve_decision_threshold(getattr(reranker, "config", None), threshold, probability_threshold)
        candidates = check_threshold(candidate_threshold) if candidate_threshold is not None else self.threshold
        if candidates is None:
            raise ValueError(
                "no cosine threshold for the bi-encoder's candidate pairs: pass candidate_threshold=... (a cosine in "
                "[-1, 1]), or build the index with a model whose config.threshold is calibrated"
            )
        pairs = self._mine_pairs(candidates, k, None, show_progress_bar)
        return rerank_pairs(reranker, pairs, threshold=decision)

    def _mine_pairs(
        self, threshold: float | None, k: int, probability_threshold: float | None, show_progress_bar: bool
    ) -> list[dict[str, Any]]:
        """The bi-encoder's duplicate pairs: cosine (or its calibrated probability) at or above the threshold."""
        calibrator = self.calibrator
        if probability_threshold is not None:  # a P(duplicate), as the lowest cosine that reaches it
            threshold = resolve_decision_threshold(
                None, check_threshold(threshold), probability_threshold, calibrator=calibrator
            )
        else:
            threshold = resolve_threshold(
                check_threshold(threshold),
                self.threshold,
                hint=(
                    "; the index compares cosine similarities, so a model with a classification head (whose threshold "
                    "is a probability) gives it none"
                ),
            )
        found = paraphrase_pairs(
            self._neighbour_search(),
            threshold,
            k,
            num_texts=len(self._table),
            query_chunk_size=self.query_chunk_size,
            show_progress_bar=show_progress_bar,
        )
        if found.capped:
            logger.warning(
                f"{found.capped} texts have all {min(k, len(self) - 1)} nearest neighbours at or above the threshold "
                f"{threshold}: pairs inside such clusters may be missing; raise k (k={len(self) - 1} is exhaustive)"
            )
        if not found.scores:
            return []
        side_a, side_b = self._corpus[found.rows_a], self._corpus[found.rows_b]
        pairs = [
            {"id_a": ia, "text_a": ta, "id_b": ib, "text_b": tb, "score": s}
            for ia, ta, ib, tb, s in zip(side_a["id"], side_a["text"], side_b["id"], side_b["text"], found.scores)
        ]
        if calibrator is not None:
            for pair, probability in zip(pairs, calibrator.probability(found.scores).tolist()):
                pair["probability"] = probability
        return pairs

    def _in_process_view(self) -> DuplicateIndex:
        """This index, or for a database one an exact in-memory copy of its rows (to mine pairs among them)."""
        if self._store is None:
            return self
        view = DuplicateIndex(
            None,
            threshold=self.threshold,
            query_chunk_size=self.query_chunk_size,
            corpus_chunk_size=self.corpus_chunk_size,
        )
        view.embedding_dim, view.calibrator = self.embedding_dim, self.calibrator
        view._table = EmbeddingTable(self.embedding_dim)
        ids, texts, vectors = self._database_rows()
        if ids:
            view.add_embeddings(texts, vectors, ids)
        return view

    def _neighbour_search(self) -> Any:
        """Each row's nearest other rows, through the index's own search (FAISS when this index uses it)."""
        approximate = self.backend == "faiss"

        def neighbours(start: int, stop: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
            own = torch.arange(start, stop)
            queries = torch.from_numpy(self._table.gather(own.numpy()))
            if not approximate:
                return self._exact_topk(queries, k, exclude_indices=own)
            scores, rows = self.search_embeddings(queries, min(k + 1, len(self)))
            scores = scores.masked_fill(rows == own[:, None], float("-inf"))
            scores, order = scores.sort(dim=1, descending=True, stable=True)
            rows = rows.gather(1, order)[:, :k]
            scores = scores[:, :k]
            return scores, rows.masked_fill(~torch.isfinite(scores), -1)

        return neighbours

    # ----------------------------------------------------------------------------------------
    # Saving and loading
    # ----------------------------------------------------------------------------------------
    def save(self, save_directory: str | os.PathLike, *, overwrite: bool = False) -> None:
        """
        Write the index to a folder (see `index_files` for its files). A folder that
        already holds files is refused unless `overwrite=True`, which replaces the index files
        there (other files are left alone). A FAISS index is saved with it (so loading does not
        rebuild it); a database index saves only where its collection is (the rows are there already).
        """
        self._check_not_empty()
        config = {
            "model_name_or_path": self.model_name_or_path,
            "embedding_dim": self.embedding_dim,
            "num_texts": len(self),
            "truncate_dim": self.truncate_dim,
            "id_type": self._id_type,
            "threshold": self.threshold,
            "calibration": None if self.calibrator is None else self.calibrator.to_dict(),
            "backend": self.backend,
        }
        if self.model is not None:
            probes = self._encode(list(PROBE_QUESTIONS)).float()
            config["model_fingerprint"] = {
                "texts": list(PROBE_QUESTIONS),
                "embeddings": [[round(value, 7) for value in row] for row in probes.tolist()],
            }
        elif self._model_fingerprint is not None:
            config["model_fingerprint"] = self._model_fingerprint
        if self._store is not None:
            config["database"] = {"location": self.database, "collection": self.collection}
            write_index_folder(Path(save_directory), None, None, config, overwrite=overwrite)
            return
        ann = self._ensure_ann() if self.backend == "faiss" else None
        if ann is not None:
            config["ann"] = ann.spec.to_dict()
            config["ann_asked"] = self.ann_spec.to_dict()  # "auto" is tuned again by a rebuild after loading
            if self._recall is not None:
                config["recall"] = self._recall.to_dict()
        write_index_folder(Path(save_directory), self._table, self._corpus, config, overwrite=overwrite, ann=ann)

    @classmethod
    def load(
        cls,
        save_directory: str | os.PathLike,
        model: SiameseModel | str | None = None,
        tokenizer: Any | None = None,
        *,
        mmap: bool | None = None,
        **kwargs: Any,
    ) -> DuplicateIndex:
        """
        Load an index saved with `save`. With a `model`, it must be the model that built the index:
        its embeddings of the probe questions saved with the index (`PROBE_QUESTIONS`) must agree
        (cosine >= `SAME_MODEL_MIN_COSINE`), else a `ValueError`: another model's embeddings are not
        comparable and the search would return unrelated questions. A moved or renamed model folder
        passes (its weights are the same); an index saved before fingerprints only checks the size and
        warns on a different name. `**kwargs` are the constructor's options; the saved threshold is used
        unless `threshold=` or the model's calibrated one is given, and the saved backend (and FAISS
        index) unless `backend=` (or other FAISS settings) are given.

        `mmap=True` leaves the embeddings in the folder's file, read as they are needed (memory-mapped),
        instead of in memory: a corpus larger than memory can be searched, through a quantised FAISS index
        (which reads only the rows it rescores) or exactly (the whole file read once per search: about 4x
        slower than from memory at 1M texts). The default is `True` for an index saved with quantised FAISS
        codes (`quantization` other than `"none"`), `False` otherwise.
        """
        path = Path(save_directory)
        config, table, corpus, ann_file = read_index_folder(path, mmap=mmap)

        kwargs.setdefault("truncate_dim", config.get("truncate_dim"))  # the size it was built at, unless told
        saved_recall = _saved_recall(config, path)
        target_given = "recall_target" in kwargs
        if saved_recall is not None:
            kwargs.setdefault("recall_target", saved_recall.target)  # the target it was measured against, unless told
        saved_backend = config.get("backend", "exact")
        kwargs.setdefault("backend", saved_backend)
        database = config.get("database")
        if kwargs["backend"] in DATABASE_BACKENDS and database is not None:
            kwargs.setdefault("database", database["location"])
            kwargs.setdefault("collection", database["collection"])
        index = cls(model, tokenizer, **kwargs)
        if index.model is not None:
            model_dim = index.truncate_dim or index.model.config.sentence_embedding_dim
            if model_dim != config["embedding_dim"]:
                raise ValueError(
                    f"the index in {path} holds {config['embedding_dim']}-dimensional embeddings (built with "
                    f"{config['model_name_or_path']!r}) but the model gives {model_dim}-dimensional ones"
                    f"{' (truncate_dim)' if index.truncate_dim else ''}: load it with the model (and truncate_dim) "
                    "that built it, or rebuild the index"
                )
            if config.get("model_fingerprint"):
                index._check_same_model(config["model_fingerprint"], path, config["model_name_or_path"])
            elif config["model_name_or_path"] and index.model_name_or_path != config["model_name_or_path"]:
                logger.warning(
                    f"the index in {path} was built with {config['model_name_or_path']!r}, the model given is "
                    f"{index.model_name_or_path!r}: scores are only meaningful with the same weights"
                )
        else:
            index.model_name_or_path = config["model_name_or_path"]
        if index.threshold is None:
            index.threshold = check_threshold(config["threshold"])
        if index.calibrator is None and config.get("calibration"):  # folders saved before calibration lack the key
            index.calibrator = ScoreCalibrator.from_dict(config["calibration"])
        index.embedding_dim = config["embedding_dim"]
        index._model_fingerprint = config.get("model_fingerprint")
        index._id_type = config.get("id_type")
        if index._store is not None:
            return index
        if table is None:
            raise ValueError(
                f"the index in {path} lives in a database collection: load it with its saved backend (the default)"
            )
        index._table = table
        index._corpus = corpus
        index._id_type = "int" if corpus.features["id"].dtype.startswith("int") else "str"
        saved_spec = AnnSpec.from_dict(config["ann"]) if config.get("ann") else None
        if index.backend == "faiss" and ann_file is not None and saved_spec is not None:
            asked = index.ann_spec
            if asked.is_default or asked.resolved(len(index), index.embedding_dim) == saved_spec:
                # A rebuild (after a delete, or rebuild_ann) starts from what was asked: "auto" is tuned again.
                saved_ask = config.get("ann_asked")
                index.ann_spec = AnnSpec.from_dict(saved_ask) if asked.is_default and saved_ask else saved_spec
                index._ann = FaissAnnIndex.read(ann_file, saved_spec, index.embedding_dim)
                index._recall = saved_recall
                report = saved_recall
                if (
                    target_given
                    and report is not None
                    and index.recall_target is not None
                    and report.recall < index.recall_target
                ):
                    warnings.warn(
                        f"the FAISS index in {path} ({report.settings}) was measured to find {report.recall:.3f} of the "
                        f"exact top {report.k}, below recall_target={index.recall_target}: index.rebuild_ann() tunes it "
                        "to this target",
                        UserWarning,
                        stacklevel=2,
                    )
        return index

    def close(self) -> None:
        """Release a database collection (an embedded Qdrant folder is locked by the process that opened it)."""
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> DuplicateIndex:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def _ann_spec(
    ann: AnnSpec | None, quantization: str, structure: str, rescore_multiplier: int, factory: str | None
) -> AnnSpec:
    """One `AnnSpec` from the constructor's FAISS options (given either as `ann=` or as the loose options)."""
    loose = AnnSpec(
        quantization=quantization, structure=structure, rescore_multiplier=rescore_multiplier, factory=factory
    )
    if ann is None:
        return loose
    if not loose.is_default:
        raise ValueError(
            "give the FAISS settings either as ann=AnnSpec(...) or as quantization=/structure=/..., not both"
        )
    if not isinstance(ann, AnnSpec):
        raise TypeError(f"ann must be a hfsiamese.search.ann_index.AnnSpec, got {type(ann).__name__}")
    return ann


def _saved_recall(config: dict[str, Any], path: Path) -> RecallReport | None:
    """The measurement saved with an index (None for an index saved before indexes measured their recall)."""
    saved = config.get("recall")
    if saved is None:
        return None
    try:
        return RecallReport.from_dict(saved)
    except (TypeError, ValueError, AttributeError) as err:
        raise ValueError(f"{path / INDEX_CONFIG_NAME} has a damaged 'recall' entry ({err}); rebuild the index") from err


def _decide(matches: list[dict[str, Any]], threshold: float | None) -> list[dict[str, Any]]:
    if threshold is not None:
        for match in matches:
            match["is_duplicate"] = match["score"] >= threshold
    return matches


def _embedding_batches(embeddings: Any, count: int) -> list[tuple[int, Any]] | Any:
    """`(first_row, batch)` pieces of precomputed embeddings: one tensor/array, or `EmbeddingShards` (shard by shard)."""
    if hasattr(embeddings, "iter_batches"):
        if embeddings.num_texts != count:
            raise ValueError(f"the shards hold {embeddings.num_texts} embeddings but {count} texts were given")
        return ((int(rows[0]), batch) for rows, batch in embeddings.iter_batches())
    if isinstance(embeddings, torch.Tensor):
        embeddings = embeddings.detach().float().cpu().numpy()
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if embeddings.ndim != 2 or len(embeddings) != count:
        raise ValueError(f"got {count} texts but embeddings of shape {tuple(embeddings.shape)}")
    return [(0, embeddings)]


def _assembled_embeddings(shards: Any, shards_dir: Path) -> EmbeddingTable:
    """The shards' embeddings as one memory-mapped `.npy` beside them, written once (by the main process under
    `accelerate launch`, the others waiting) and reused by a build that is started again."""
    from accelerate import PartialState

    file = shards_dir / "embeddings.npy"
    state = PartialState()
    if state.is_main_process and not file.is_file():
        staging = shards_dir / ".embeddings.npy.partial"
        shards.write_npy(staging)
        os.replace(staging, file)  # never a half-written file under the final name
    state.wait_for_everyone()
    return EmbeddingTable.open_npy(file, mmap=True)


def _database_location(database: str | os.PathLike) -> str:
    """A URL as given, a folder as an absolute path (so that a saved index finds it from anywhere)."""
    text = os.fspath(database)
    return text if "://" in text else str(Path(text).resolve())


class _StoreIds:
    """The ids of a database collection, answering `in` by asking the database (never read whole)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def __contains__(self, item: Any) -> bool:
        return self.store.contains([item])[0]

    def update(self, _ids: Any) -> None:  # the collection knows its ids
        pass


# INDEX_CONFIG_NAME: re-exported for callers that recognise a saved index folder (hfsiamese search).
__all__ = ["DuplicateIndex", "INDEX_CONFIG_NAME"]
