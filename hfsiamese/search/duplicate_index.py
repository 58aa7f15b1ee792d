"""
A searchable corpus of embedded texts that answers "has this question been asked before?".

The corpus (ids and texts) lives in a `datasets.Dataset`, so a saved index is memory-mapped Arrow
on load rather than a million Python strings; the embeddings are one float32 tensor. Search is
exact cosine top-k, either in torch (`topk_cosine`, chunked, no extra install) or through the
FAISS index that `datasets` attaches to a `Dataset` (`backend="faiss"`, see `backends`). The folder
an index is saved to is described in `index_files`; mining duplicate pairs inside the index is
`paraphrase_pairs`. Given a cross-encoder, search and mining become retrieve-then-rerank: the index
proposes candidates, the cross-encoder scores and decides them (`reranking`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets
import torch

from ..models.siamese.inference import check_truncate_dim
from ..models.siamese.score_calibrator import ScoreCalibrator
from ..models.siamese.scoring import (
    check_threshold,
    resolve_decision_threshold,
    resolve_threshold,
    stored_calibrator,
    threshold_in_unit,
)
from .backends import Backend, check_backend, drop_faiss_index, ensure_faiss_index, faiss_topk
from .exact import topk_cosine
from .index_files import INDEX_CONFIG_NAME, read_index_folder, write_index_folder
from .input_checks import check_k, check_texts, id_type, plain_ids, texts_and_ids
from .paraphrase_pairs import paraphrase_pairs
from .reranking import (
    NO_CROSS_ENCODER_THRESHOLD,
    check_rerank_k,
    cross_encoder_threshold,
    rerank_matches,
    rerank_pairs,
    resolve_cross_encoder,
)

if TYPE_CHECKING:
    from ..models.siamese.modeling_siamese import SiameseModel

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
    `add`, save it to a folder and load it back. Scores are the cosine similarity of the model's
    L2-normalised embeddings (also for models with a classification head, whose head scores pairs,
    not a corpus). Where a cosine threshold is known (the model's calibrated `config.threshold`, or
    `threshold=`), each match also says whether it counts as a duplicate. Where the model is calibrated
    to probabilities on cosines (`model.calibrate(..., method="platt" | "isotonic")`), the index keeps
    that map (and saves it): `find_duplicates` then gives each pair's `probability` and takes
    `probability_threshold=`.

    With a cross-encoder (`cross_encoder=` here, or per call of `search` / `find_duplicates`), the index
    retrieves candidates and the cross-encoder reranks and decides them: `"score"` is then the
    cross-encoder's score in [0, 1], `"retrieval_score"` the cosine, and thresholds are cross-encoder
    scores (see `search`).

    Args:
        model: the `SiameseModel` that embeds texts (or the folder / Hub id to load one from). An
            index loaded without one can search precomputed embeddings and mine duplicates, but
            not embed new texts.
        tokenizer: the model's tokenizer; by default the one saved beside the model.
        backend: `"exact"` (chunked top-k in torch, default) or `"faiss"` (the `datasets` FAISS
            index, exact inner product unless `faiss_string_factory` asks for an approximate one).
        threshold: cosine similarity at or above which a match is a duplicate (default: the
            model's `config.threshold` where it is a cosine threshold).
        batch_size, max_length: encoding settings, for the corpus and the queries alike.
        truncate_dim: keep the first that many dimensions of every embedding, re-normalised (a model trained with
            the Matryoshka loss: at 128 of 384 dimensions the index takes a third of the memory); saved with the index.
        query_chunk_size, corpus_chunk_size: block sizes of the exact search; peak extra memory
            is about `query_chunk_size * corpus_chunk_size * 4` bytes (256 MiB by default),
            whatever the corpus size.
        faiss_string_factory: FAISS index factory string (e.g. `"HNSW32"`) for an approximate
            index; default a flat (exact) inner-product index.
        cross_encoder: a default reranker for `search` and `find_duplicates` (a
            `hfsiamese.cross_encoder.CrossEncoder` or its folder); a per-call `cross_encoder=` replaces it.
            It is not saved with the index (it is a model folder of its own): pass it again to `load`.

    Example:

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
        faiss_string_factory: str | None = None,
        cross_encoder: Any | None = None,
    ) -> None:
        if query_chunk_size < 1 or corpus_chunk_size < 1:
            raise ValueError(
                f"chunk sizes must be at least 1, got query_chunk_size={query_chunk_size}, "
                f"corpus_chunk_size={corpus_chunk_size}"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.backend = check_backend(backend)
        self.model = self._resolve_model(model)
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_length = max_length
        self.truncate_dim = truncate_dim
        if truncate_dim is not None and self.model is not None:
            check_truncate_dim(truncate_dim, self.model.config.sentence_embedding_dim)
        self.query_chunk_size = query_chunk_size
        self.corpus_chunk_size = corpus_chunk_size
        self.faiss_string_factory = faiss_string_factory
        self.threshold = check_threshold(
            threshold if threshold is not None else threshold_in_unit(getattr(self.model, "config", None), "cosine")
        )
        # Only a map of cosines applies here (a head's map is of its probabilities, which the index never computes).
        self.calibrator: ScoreCalibrator | None = stored_calibrator(getattr(self.model, "config", None), "cosine")
        self.embedding_dim: int | None = (truncate_dim or self.model.config.sentence_embedding_dim) if self.model is not None else None
        self.model_name_or_path: str | None = getattr(self.model, "name_or_path", None) or None
        self._embeddings = torch.empty(0, self.embedding_dim or 0)
        self._corpus: datasets.Dataset | None = None
        self._id_type: str | None = None
        self._id_set: set[Any] | None = None
        self._model_fingerprint: dict[str, Any] | None = None  # a loaded index's, kept when it is saved without a model
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
            show_progress_bar: show a tqdm bar while encoding.
            **kwargs: the constructor's options (`backend`, `threshold`, `batch_size`, chunk sizes...).
        """
        if model is None:
            raise ValueError("build needs a model to embed the corpus")
        texts, ids = texts_and_ids(corpus, ids, text_column, id_column)
        if not texts:
            raise ValueError("cannot build an index from an empty corpus")
        index = cls(model, tokenizer, **kwargs)
        index.add(texts, ids, show_progress_bar=show_progress_bar)
        return index

    def add(
        self, texts: Sequence[str], ids: Sequence[int | str] | None = None, *, show_progress_bar: bool = False
    ) -> None:
        """
        Embed `texts` and append them to the index. `ids` default to the next row numbers (only
        possible while the index's ids are integers); an id already in the index is an error, and
        so is an empty text. Nothing changes unless every text is embedded.
        """
        texts = check_texts(texts)
        if not texts:
            return
        new_ids = self._check_new_ids(ids, len(texts))
        embeddings = self._encode(texts, show_progress_bar=show_progress_bar)
        if embeddings.shape != (len(texts), self.embedding_dim):
            raise ValueError(
                f"the model gave embeddings of shape {tuple(embeddings.shape)}, expected ({len(texts)}, {self.embedding_dim})"
            )
        kind = self._id_type or id_type(new_ids)
        features = datasets.Features(
            {"id": datasets.Value("int64" if kind == "int" else "string"), "text": datasets.Value("string")}
        )
        rows = datasets.Dataset.from_dict({"id": new_ids, "text": texts}, features=features)
        if self._corpus is None:
            self._corpus = rows
            self._embeddings = embeddings.float().contiguous()
        else:
            drop_faiss_index(self._corpus)
            self._corpus = datasets.concatenate_datasets([self._corpus, rows])
            self._embeddings = torch.cat([self._embeddings, embeddings.float()])
        self._id_type = kind
        self._id_set.update(new_ids)

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
        clashing = [i for i in ids if i in existing]
        if clashing:
            raise ValueError(f"ids already in the index: {clashing[:5]}{' ...' if len(clashing) > 5 else ''}")
        return ids

    def _existing_ids(self) -> set[Any]:
        # Built on first need: an index loaded only to be searched never pays for a set of 1M ids.
        if self._id_set is None:
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
            from ..serving.loading import load_siamese_model

            return load_siamese_model(model)  # a PyTorch checkpoint or an ONNX export
        if model is not None and not hasattr(model, "encode"):
            raise TypeError(f"model must be a SiameseModel (or its folder), got {type(model).__name__}")
        return model

    # ----------------------------------------------------------------------------------------
    # Views
    # ----------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return 0 if self._corpus is None else self._corpus.num_rows

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_texts={len(self)}, embedding_dim={self.embedding_dim}, "
            f"backend={self.backend!r}, model={self.model_name_or_path!r}, threshold={self.threshold})"
        )

    @property
    def embeddings(self) -> torch.Tensor:
        """The `(num_texts, dim)` float32 embeddings, in row order."""
        return self._embeddings

    @property
    def corpus(self) -> datasets.Dataset | None:
        """The ids and texts as a `datasets.Dataset` (columns `id`, `text`), in row order."""
        return self._corpus

    @property
    def ids(self) -> list[int | str]:
        return [] if self._corpus is None else list(self._corpus["id"])

    @property
    def texts(self) -> list[str]:
        return [] if self._corpus is None else list(self._corpus["text"])

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
        reranker = self._reranker(cross_encoder)
        if reranker is None:
            if rerank_k is not None:
                raise ValueError("rerank_k applies only with a cross_encoder: without one the search returns the bi-encoder's top k")
            threshold = check_threshold(threshold) if threshold is not None else self.threshold
        else:
            rerank_k = check_rerank_k(rerank_k, k)
            threshold = cross_encoder_threshold(reranker, threshold)
        if not texts:
            return []
        self._check_not_empty()
        scores, rows = self.search_embeddings(self._encode(texts), rerank_k or k, backend=backend)
        if reranker is None:
            results = self._matches(scores, rows, threshold)
        else:
            candidates = self._matches(scores, rows, None)
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
        first; `rows` index `embeddings` and `corpus`. Queries should be L2-normalised (as
        `model.encode` returns them) for the scores to be cosine similarities.
        """
        check_k(k)
        self._check_not_empty()
        if query_embeddings.dim() != 2 or query_embeddings.shape[1] != self.embedding_dim:
            raise ValueError(
                f"query embeddings must have shape (num_queries, {self.embedding_dim}), got {tuple(query_embeddings.shape)}"
            )
        backend = check_backend(backend or self.backend)
        queries = query_embeddings.detach().float().cpu()
        if backend == "exact":
            return topk_cosine(
                queries,
                self._embeddings,
                k,
                query_chunk_size=self.query_chunk_size,
                corpus_chunk_size=self.corpus_chunk_size,
            )
        ensure_faiss_index(self._corpus, self._embeddings, self.faiss_string_factory)
        return faiss_topk(self._corpus, queries, min(k, len(self)))

    def _matches(
        self, scores: torch.Tensor, rows: torch.Tensor, threshold: float | None
    ) -> list[list[dict[str, Any]]]:
        """Turn `(scores, rows)` into per-query lists of match dicts, fetching all rows in one read."""
        found = self._corpus[rows.flatten().tolist()]
        ids, texts, flat_scores = found["id"], found["text"], scores.flatten().tolist()
        per_query = rows.shape[1]
        results = []
        for start in range(0, rows.numel(), per_query):
            matches = []
            for i in range(start, start + per_query):
                match = {"id": ids[i], "text": texts[i], "score": flat_scores[i]}
                if threshold is not None:
                    match["is_duplicate"] = flat_scores[i] >= threshold
                matches.append(match)
            results.append(matches)
        return results

    def _check_not_empty(self) -> None:
        if self._corpus is None:
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

        How: each text's `k` nearest other texts are found with the chunked exact top-k (the
        same search as `search`) and the pairs among them that pass the threshold are kept, each
        once (see `paraphrase_pairs`): no `N x N` matrix is ever built, whatever the threshold.
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
        if reranker is not None:
            return self._find_duplicates_reranked(
                reranker, threshold, k, probability_threshold, candidate_threshold, show_progress_bar
            )
        if candidate_threshold is not None:
            raise ValueError("candidate_threshold applies only with a cross_encoder: without one, threshold= is the cosine that decides")
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
            self._embeddings,
            threshold,
            k,
            query_chunk_size=self.query_chunk_size,
            corpus_chunk_size=self.corpus_chunk_size,
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

    # ----------------------------------------------------------------------------------------
    # Saving and loading
    # ----------------------------------------------------------------------------------------
    def save(self, save_directory: str | os.PathLike, *, overwrite: bool = False) -> None:
        """
        Write the index to a folder (see `index_files` for its files). A folder that
        already holds files is refused unless `overwrite=True`, which replaces the index files
        there (other files are left alone).
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
        }
        if self.model is not None:
            probes = self._encode(list(PROBE_QUESTIONS)).float()
            config["model_fingerprint"] = {
                "texts": list(PROBE_QUESTIONS),
                "embeddings": [[round(value, 7) for value in row] for row in probes.tolist()],
            }
        elif self._model_fingerprint is not None:
            config["model_fingerprint"] = self._model_fingerprint
        write_index_folder(Path(save_directory), self._embeddings, self._corpus, config, overwrite=overwrite)

    @classmethod
    def load(
        cls,
        save_directory: str | os.PathLike,
        model: SiameseModel | str | None = None,
        tokenizer: Any | None = None,
        **kwargs: Any,
    ) -> DuplicateIndex:
        """
        Load an index saved with `save`. With a `model`, it must be the model that built the index:
        its embeddings of the probe questions saved with the index (`PROBE_QUESTIONS`) must agree
        (cosine >= `SAME_MODEL_MIN_COSINE`), else a `ValueError`: another model's embeddings are not
        comparable and the search would return unrelated questions. A moved or renamed model folder
        passes (its weights are the same); an index saved before fingerprints only checks the size and
        warns on a different name. `**kwargs` are the constructor's options; the saved threshold is used
        unless `threshold=` or the model's calibrated one is given.
        """
        path = Path(save_directory)
        config, embeddings, corpus = read_index_folder(path)

        kwargs.setdefault("truncate_dim", config.get("truncate_dim"))  # the size it was built at, unless told
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
        index._embeddings = embeddings
        index._corpus = corpus
        index._id_type = "int" if corpus.features["id"].dtype.startswith("int") else "str"
        return index


# INDEX_CONFIG_NAME: re-exported for callers that recognise a saved index folder (recipes/search.py).
__all__ = ["DuplicateIndex", "INDEX_CONFIG_NAME"]
