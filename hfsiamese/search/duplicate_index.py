"""
A searchable corpus of embedded texts that answers "has this question been asked before?". `DuplicateIndex` keeps the
model, the threshold, the calibration and the reranker; its store (`stores`, named in `backends`) keeps the vectors.
What its methods do lives beside it: `index_searching`, `duplicate_finding`; what it holds (its rows, read from its
store) is `index_contents`, its FAISS index `index_faiss`, how rows get in and out `index_writing`, how it becomes a
folder and back `index_saving`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import torch

from hfsiamese.models.siamese.inference import check_truncate_dim
from hfsiamese.models.siamese.score_calibrator import ScoreCalibrator
from hfsiamese.models.siamese.scoring import check_threshold, stored_calibrator, threshold_in_unit
from hfsiamese.search.backends import (
    DATABASE_BACKENDS,
    Store,
    check_backend,
    check_backend_options,
    database_location,
    open_store,
    store_and_runtime,
)
from hfsiamese.search.duplicate_finding import find_duplicates
from hfsiamese.search.groups.cross_encoder_guard import DEFAULT_BUDGET, DEFAULT_CHECK_SIZE
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups
from hfsiamese.search.groups.guards import DEFAULT_GUARD
from hfsiamese.search.groups.index_groups import IndexGroups
from hfsiamese.search.index_saving import IndexFolder
from hfsiamese.search.index_searching import (
    call_reranker,
    candidates,
    check_search_filter,
    decided,
    plan_search,
    search_store,
)
from hfsiamese.search.index_writing import IndexWrites
from hfsiamese.search.input_checks import check_k, check_sizes, check_texts
from hfsiamese.search.lexical.bm25_index import import_bm25s
from hfsiamese.search.lexical.hybrid_search import LexicalSide
from hfsiamese.search.lexical.hybrid_settings import check_hybrid
from hfsiamese.search.reranking import resolve_cross_encoder
from hfsiamese.search.stores.ann_index import AnnSpec, ann_spec_of
from hfsiamese.search.stores.base import VectorStore
from hfsiamese.search.stores.index_files import INDEX_CONFIG_NAME
from hfsiamese.search.stores.recall_tuning import DEFAULT_RECALL_TARGET, check_recall_target
from hfsiamese.utils.deprecation import warn_deprecated

if TYPE_CHECKING:
    from hfsiamese.models.siamese.modeling_siamese import SiameseModel
    from hfsiamese.search.stores.in_memory import InMemoryStore


class DuplicateIndex(IndexWrites, IndexFolder):
    r"""
    Embeddings of a corpus of texts, searchable by cosine similarity, for duplicate detection.

    Build it from a list of texts or a `datasets.Dataset`, search it with new texts, grow it with `add`, remove
    texts with `delete`, save it to a folder and load it back. Scores are the cosine similarity of the model's
    L2-normalised embeddings (also for a model with a classification head). Where a cosine threshold is known (the
    model's calibrated `config.threshold`, or `threshold=`), each match says whether it is a duplicate; a model
    calibrated to probabilities on cosines (`model.calibrate(..., method="platt" | "isotonic")`) gives each pair of
    `find_duplicates` its `probability`. With a cross-encoder, the index retrieves candidates and the cross-encoder
    reranks and decides them (see `search`).

    Args:
        model: the `SiameseModel` that embeds texts (or the folder / Hub id to load one from). An index loaded
            without one can search precomputed embeddings and mine duplicates, but not embed new texts.
        tokenizer: the model's tokenizer; by default the one saved beside the model.
        store: where the vectors are kept and searched: `"exact"` (chunked top-k in torch, default), `"faiss"` (a
            FAISS index: exact, or quantised and approximate), or a database at `database`: `"lancedb"` or `"qdrant"`
            (inserts, deletes and metadata filters without a rebuild). (`backend="faiss"` and the other store names
            still work, with a FutureWarning, until hfsiamese 0.3.)
        backend: the model's runtime where `model` is a folder, as `hfsiamese.load_model`'s: `"auto"`, the fastest
            of the folder and the ONNX / OpenVINO exports in its subfolders on this CPU (timed once and kept);
            None (default): the folder as it is.
        threshold: cosine similarity at or above which a match is a duplicate (default: the model's
            `config.threshold` where it is a cosine threshold).
        batch_size, max_length: encoding settings, for the corpus and the queries alike.
        truncate_dim: keep the first that many dimensions of every embedding, re-normalised (a model trained with
            the Matryoshka loss: at 128 of 384 dimensions the index takes a third of the memory); saved with the index.
        query_chunk_size, corpus_chunk_size: block sizes of the exact search; peak extra memory is about
            `query_chunk_size * corpus_chunk_size * 4` bytes (256 MiB by default), whatever the corpus size.
        quantization: with `store="faiss"`, the codes kept in memory: `"none"` (float32), `"int8"`, `"pq"` or
            `"binary"`, candidates rescored exactly; `"auto"` (default): float32 up to 1M texts, beyond it the
            cheapest codes that reach `recall_target` (the guide "Duplicate search at three scales" says how).
        structure: with `store="faiss"`: `"flat"`, `"hnsw"` or `"ivf"`; `"auto"` (default) tuned with `quantization`.
        rescore_multiplier: a quantised index rescores `rescore_multiplier * k` candidates per query.
        ann: every FAISS setting at once (`hfsiamese.search.stores.ann_index.AnnSpec`), instead of the three above.
        faiss_string_factory: a FAISS index factory string (e.g. `"HNSW32"`) for a float index.
        recall_target: with `store="faiss"`, the share of the exact top 10 its search must find (default 0.95),
            measured on the corpus when the FAISS index is built (`recall_report`); `None`: nothing measured.
        database: with `store="lancedb"` or `"qdrant"`, a folder (the engine embedded in this process) or the
            URI of a server (LanceDB: `db://...`, `s3://...`; Qdrant: `http(s)://...`); `collection` names the
            table there and `api_key` is the server's key.
        cross_encoder: a default reranker for `search` and `find_duplicates` (a `CrossEncoder` or its folder); a
            per-call `cross_encoder=` replaces it. Not saved with the index: pass it again to `load`.
        hybrid: keyword + dense search (`hfsiamese.search.lexical`; the `bm25s` package): `"rrf"` (reciprocal rank
            fusion of the BM25 and cosine lists, constant `rrf_k`, default 60) or `"weighted"` (a weighted sum of
            normalised scores, `lexical_weight` the BM25 share, default 0.3); `None` (default): dense only. With
            `store="exact"` or `"faiss"` (a BM25 index in this process, saved with the index) or `"lancedb"` (the
            table's own full-text index); the setting is saved with the index. Fusion orders the candidates:
            `"score"`, the threshold and the calibrated probability stay the cosine's (see `search`, `find_duplicates`).

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
        store: Store | None = None,
        backend: str | None = None,
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
        hybrid: str | None = None,
        rrf_k: int | None = None,
        lexical_weight: float | None = None,
    ) -> None:
        check_sizes(batch_size, query_chunk_size, corpus_chunk_size)
        store, backend = store_and_runtime(store, backend)  # backend="faiss": the store's old name, warned
        self.store_name: str = check_backend(store or "exact")
        spec = ann_spec_of(ann, quantization, structure, rescore_multiplier, faiss_string_factory)
        recall_target = check_recall_target(recall_target)
        check_backend_options(self.store_name, spec, database)
        self._hybrid = check_hybrid(hybrid, rrf_k, lexical_weight, self.store_name)
        self.hybrid: str | None = None if self._hybrid is None else self._hybrid.method
        self._lexical: LexicalSide | None = None if self._hybrid is None else LexicalSide(self._hybrid)
        if self._hybrid is not None:
            import_bm25s()  # said before any encoding
        self.model = self._resolve_model(model, backend)
        self.tokenizer = tokenizer
        self.batch_size, self.max_length, self.truncate_dim = batch_size, max_length, truncate_dim
        if truncate_dim is not None and self.model is not None:
            check_truncate_dim(truncate_dim, self.model.config.sentence_embedding_dim)
        self.query_chunk_size, self.corpus_chunk_size = query_chunk_size, corpus_chunk_size
        self.threshold = check_threshold(
            threshold if threshold is not None else threshold_in_unit(getattr(self.model, "config", None), "cosine")
        )
        # Only a map of cosines applies here (a head's map is of its probabilities, which the index never computes).
        self.calibrator: ScoreCalibrator | None = stored_calibrator(getattr(self.model, "config", None), "cosine")
        self.embedding_dim: int | None = (
            (truncate_dim or self.model.config.sentence_embedding_dim) if self.model is not None else None
        )
        self.model_name_or_path: str | None = getattr(self.model, "name_or_path", None) or None
        self._id_type: str | None = None
        self._model_fingerprint: dict[str, Any] | None = None  # a loaded index's, kept when it is saved without a model
        self._spec, self._recall_target = spec, recall_target  # a FAISS store's own, once it has one
        if self.store_name in DATABASE_BACKENDS:
            self.database, self.collection = database_location(database), collection
        self._store: VectorStore = open_store(
            self.store_name, self.embedding_dim, spec=spec, recall_target=recall_target, database=database,
            collection=collection, api_key=api_key, query_chunk_size=query_chunk_size,
            corpus_chunk_size=corpus_chunk_size,
        )  # fmt: skip
        # Not saved with the index: a cross-encoder is a model folder of its own.
        self.cross_encoder: Any | None = resolve_cross_encoder(cross_encoder) if cross_encoder is not None else None
        self._groups = IndexGroups()  # found by `find_groups`, read from a saved index or its database

    def encode(self, texts: list[str], *, show_progress_bar: bool = False) -> torch.Tensor:
        """Embed texts as the index embeds its corpus and queries (its model, batch size, length, `truncate_dim`)."""
        return self._encode(texts, show_progress_bar=show_progress_bar)

    def _encode(self, texts: list[str], *, show_progress_bar: bool = False) -> torch.Tensor:
        if self.model is None:
            hint = f" (this index was built with {self.model_name_or_path!r})" if self.model_name_or_path else ""
            raise ValueError(f"embedding texts needs a model: pass model=... when creating or loading the index{hint}")
        return self.model.encode(
            texts, self.tokenizer, batch_size=self.batch_size, max_length=self.max_length,
            show_progress_bar=show_progress_bar, truncate_dim=self.truncate_dim,
        )  # fmt: skip

    @staticmethod
    def _resolve_model(model: SiameseModel | str | None, backend: str | None) -> Any:
        if isinstance(model, (str, os.PathLike)):
            from hfsiamese.loading import load_siamese_model

            return load_siamese_model(model, backend=backend)  # a PyTorch checkpoint, an ONNX or OpenVINO export
        if backend is not None:
            raise ValueError(f"backend={backend!r} chooses how a model folder is loaded: pass the folder as model=")
        if model is not None and not hasattr(model, "encode"):
            raise TypeError(f"model must be a SiameseModel (or its folder), got {type(model).__name__}")
        return model

    def check_filter(self, filter: dict[str, Any] | None) -> None:
        """
        Refuse (TypeError or ValueError, one line) a `search` filter that `search` would refuse, without searching:
        on an index whose store keeps no metadata, or one its database's rules refuse. A caller that searches the
        queries of several requests in one call (`hfsiamese serve`) checks each request's filter first, so that one
        bad filter is its own request's error.
        """
        check_search_filter(self, filter)

    def search(
        self,
        queries: str | Sequence[str],
        k: int = 10,
        *,
        threshold: float | None = None,
        store: Store | None = None,
        filter: dict[str, Any] | None = None,
        cross_encoder: Any | None = None,
        rerank_k: int | None = None,
        backend: Store | None = None,
    ) -> list[dict[str, Any]] | list[list[dict[str, Any]]]:
        """
        The `k` indexed texts most similar to each query, best first.

        Each match is a dict `{"id", "text", "score"}` (score: cosine similarity), plus `"is_duplicate"`
        (`score >= threshold`) when a threshold is known. A single string gives one list of matches; a list of
        strings gives one list per query (as pipelines do). `k` is capped at the size of the index.

        With a cross-encoder (`cross_encoder=`, else the index's own, see the constructor), the bi-encoder retrieves
        `rerank_k` candidates per query (default `max(2 * k, 20)`; at least `k`), the cross-encoder scores them all
        in one batched call, and the `k` it scores highest are returned, best first: `"score"` is the
        cross-encoder's score in [0, 1], `"retrieval_score"` the cosine, `"is_duplicate"` is `score >= threshold`
        where `threshold` is then a cross-encoder score (default its calibrated `config.threshold`), and
        `"probability"` is the cross-encoder's calibrated P(duplicate) where it stores a calibration.

        With `hybrid=` (see the constructor), the candidates are the fusion of the cosine's and BM25's top lists,
        best fused first: each match also has `"hybrid_score"` (the fused score, which orders them) and
        `"lexical_score"` (BM25; 0 where it shares no word with the query), while `"score"` stays the cosine and
        `"is_duplicate"` its verdict; a cross-encoder reranks the fused candidates.
        """
        store = store_and_runtime(store, backend)[0]  # `backend=` was the store's name here: warned
        single = isinstance(queries, str)
        texts = check_texts([queries] if single else queries, "queries")
        plan = plan_search(self, texts, k, threshold, filter, cross_encoder, rerank_k, store)
        if not texts:
            return []
        results = decided(plan, texts, candidates(self, texts, self._encode(texts), plan.fetch_k, store, filter), k)
        return results[0] if single else results

    def search_embeddings(
        self, query_embeddings: torch.Tensor, k: int = 10, *, store: Store | None = None, backend: Store | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """
        Tensor form of `search`: `(scores, rows)`, both `(num_queries, min(k, len(index)))`, best first; `rows`
        index `embeddings` and `corpus` (-1 where an approximate index found fewer than `k`). Queries should be
        L2-normalised (as `model.encode` returns them) for the scores to be cosine similarities. A quantised FAISS
        index's candidates are rescored exactly: only which rows are found may differ from `store="exact"`.
        """
        store = store_and_runtime(store, backend)[0]
        exact = search_store(self, query_embeddings, k, store) == "exact"
        numbered = cast("InMemoryStore", self._store)  # checked: numbered rows, an in-process store
        return numbered.topk(query_embeddings.detach().float().cpu(), k, exact=exact)

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
        Pairs of indexed texts that look like duplicates of each other: every pair `(a, b)`, `a` before `b` in the
        index, whose cosine similarity is at least `threshold` (default: the index's threshold), sorted by score
        (highest first). With a probability calibration each pair also has its `probability`, and
        `probability_threshold=p` keeps the pairs whose calibrated P(duplicate) is at least `p` instead.

        Each text's `k` nearest other texts are searched (a database collection is read into memory and mined
        exactly) and the pairs among them that pass are kept, each once: never an `N x N` matrix. A pair is missed
        only inside a cluster of more than `k + 1` near-identical texts; a warning then counts the texts capped
        (raise `k`; `k >= len(index) - 1` is exhaustive).

        With a cross-encoder (`cross_encoder=`, else the index's own), the bi-encoder proposes the pairs whose cosine
        reaches `candidate_threshold` (default: the index's threshold; lower finds pairs it would miss), and the
        cross-encoder keeps those whose score reaches `threshold` (default its calibrated `config.threshold`) or whose
        calibrated P(duplicate) reaches `probability_threshold`: `"score"` is then its score, `"retrieval_score"` the
        cosine.

        With `hybrid=`, each text's `k` best BM25 matches are candidates too, beside its `k` nearest by cosine: a pair
        is still decided by its cosine (or the calibrated probability of it), so hybrid mining finds every pair the
        dense mining finds, and those sharing rare words that `k` closer texts kept out of the dense neighbours.
        """
        check_k(k)
        reranker = call_reranker(self, cross_encoder)
        return find_duplicates(
            self, threshold, k, probability_threshold, show_progress_bar, reranker, candidate_threshold
        )

    def find_groups(
        self,
        threshold: float | None = None,
        k: int = 10,
        *,
        probability_threshold: float | None = None,
        guard: str = DEFAULT_GUARD,
        canonical: str = "earliest",
        show_progress_bar: bool = False,
        cross_encoder: Any | None = None,
        cross_encoder_threshold: float | None = None,
        cross_encoder_budget: float = DEFAULT_BUDGET,
        check_size: int | None = DEFAULT_CHECK_SIZE,
        group_threshold: float | None = None,
    ) -> DuplicateGroups:
        """
        Group the indexed texts into duplicate groups and keep the groups with the index (saved with it, kept current
        by `add(..., assign_groups=True)` and `delete`). Each text is linked to its `k` nearest earlier texts whose
        cosine reaches the threshold (`threshold`, `probability_threshold` as in `find_duplicates`; the rule an add
        follows too: `hfsiamese.search.groups.earlier_links`), and the links' connected components are split where
        they chain: each text, in index
        order, joins its most similar earlier duplicate's group if its mean cosine to the members reaches the
        threshold (`guard="mean"`, default), or its cosine to the group's canonical does (`"canonical"`); `"none"`
        keeps components whole (`hfsiamese.search.groups.clustering` says why the default). Each group's canonical question is its `"earliest"` member (first in the
        index) or its `"most_central"`; `DuplicateGroups.to_dataset()` gives each text's group, canonical and score.

        `guard="cross_encoder"`: the mean guard, with the links it would refuse (and every link into a group of
        `check_size` members or more) decided by `cross_encoder` (default the index's own) reading the text and the
        duplicate that links it to the group together, at `cross_encoder_threshold` (default its calibrated `config.threshold`), at most
        `cross_encoder_budget` pairs per 1,000 texts (`hfsiamese.search.groups.cross_encoder_guard`). Incremental
        assignment then needs the index's `cross_encoder` too. `group_threshold`: the guard's bar where it should differ
        from the pair threshold (the pairs stay those at `threshold`), as `fit_group_threshold` calibrates it on
        labelled validation pairs.
        """
        from hfsiamese.search.groups.group_finding import find_groups

        found = find_groups(
            self, threshold, k, probability_threshold, guard, canonical, show_progress_bar,
            cross_encoder=call_reranker(self, cross_encoder), cross_encoder_threshold=cross_encoder_threshold,
            cross_encoder_budget=cross_encoder_budget, check_size=check_size, group_threshold=group_threshold,
        )  # fmt: skip
        return self._groups.keep(self, found)

    def read_as_replica(self) -> tuple[int, int]:
        """Hold a database index's rows at their version now (LanceDB; Qdrant's stay live) and read its stored groups
        as they are, never repairing or writing them; how far they are from the rows: `(rows in no group, grouped
        questions with no row)` (see `IndexGroups.read_as_replica`). A read replica serves a read whose groups are
        no further off than those it served (`hfsiamese.service.service.ReplicaReads`). Writes are refused after."""
        return self._groups.read_as_replica(self)

    @property
    def groups(self) -> DuplicateGroups | None:
        """The duplicate groups `find_groups` made (kept current since), None before."""
        return self._groups.current(self)

    @property
    def backend(self) -> str:
        """Deprecated: the store's name is `store_name` (`backend` names a model's runtime)."""
        warn_deprecated("name", "hfsiamese.search.DuplicateIndex.backend")
        return self.store_name

    def __repr__(self) -> str:
        where = f", database={self.database!r}, collection={self.collection!r}" if self._store.database else ""
        faiss = (
            f", ann={self._ann.spec if self._ann is not None else self.ann_spec}" if self.store_name == "faiss" else ""
        )
        hybrid = f", hybrid={self._hybrid.method!r}" if self._hybrid is not None else ""
        return (
            f"{type(self).__name__}(num_texts={len(self)}, embedding_dim={self.embedding_dim}, "
            f"store={self.store_name!r}{where}{faiss}{hybrid}, model={self.model_name_or_path!r}, "
            f"threshold={self.threshold})"
        )


# INDEX_CONFIG_NAME: re-exported for callers that recognise a saved index folder (`index_opening` does).
__all__ = ["DuplicateIndex", "INDEX_CONFIG_NAME"]
