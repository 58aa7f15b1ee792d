"""
A searchable corpus of embedded texts that answers "has this question been asked before?".

The corpus (ids and texts) lives in a `datasets.Dataset`, so a saved index is memory-mapped Arrow
on load rather than a million Python strings; the embeddings are one float32 tensor. Search is
exact cosine top-k, either in torch (`topk_cosine`, chunked, no extra install) or through the
FAISS index that `datasets` attaches to a `Dataset` (`backend="faiss"`, the `faiss` extra).

On disk an index is a folder:

    index_config.json          format version, model that built it, embedding size, count, threshold
    embeddings.safetensors     the `(num_texts, dim)` float32 embeddings (tensor "embeddings")
    corpus/                    `Dataset.save_to_disk` of the columns `id` and `text`

Nothing is pickled, so loading an index from someone else cannot run code.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import datasets
import torch
from safetensors.torch import load_file, save_file

from .exact import topk_cosine

if TYPE_CHECKING:
    from ..modeling_siamese import SiameseModel

logger = logging.getLogger(__name__)

INDEX_CONFIG_NAME = "index_config.json"
EMBEDDINGS_NAME = "embeddings.safetensors"
CORPUS_DIR_NAME = "corpus"
FORMAT_VERSION = 1
BACKENDS = ("exact", "faiss")
_FAISS_INDEX_NAME = "embeddings"
_REQUIRED_CONFIG_KEYS = ("format_version", "embedding_dim", "num_texts", "model_name_or_path", "threshold")

Backend = Literal["exact", "faiss"]


def _import_faiss() -> Any:
    try:
        import faiss
    except ImportError as err:
        raise ImportError(
            'backend="faiss" needs the faiss package: pip install "hfsiamese[faiss]" (or use backend="exact", '
            "which needs nothing more)"
        ) from err
    return faiss


def _check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "faiss":
        _import_faiss()
    return backend


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer of at least 1, got {k!r}")
    return k


def _check_threshold(threshold: float | None) -> float | None:
    if threshold is not None and not -1.0 <= float(threshold) <= 1.0:
        raise ValueError(f"threshold is a cosine similarity and must lie in [-1, 1], got {threshold}")
    return None if threshold is None else float(threshold)


def _cosine_threshold(model: Any) -> float | None:
    """The model's calibrated threshold, if it applies to cosine similarity (not to a head's probability)."""
    config = getattr(model, "config", None)
    if config is None or getattr(config, "classifier_head", False):
        return None
    return getattr(config, "threshold", None)


def _check_texts(texts: Sequence[str], what: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{what} must be a list of strings, not a single string: wrap it in a list")
    texts = list(texts)
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{what}[{position}] is {type(text).__name__}, not a string")
        if not text.strip():
            raise ValueError(f"{what}[{position}] is empty: drop empty texts before indexing or searching")
    return texts


def _id_type(ids: list[Any]) -> str:
    """'int' or 'str': one Arrow column type for all ids, so that indexes can be saved and extended."""
    if all(isinstance(i, str) for i in ids):
        return "str"
    if all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return "int"
    kinds = sorted({type(i).__name__ for i in ids})
    raise TypeError(f"ids must be all integers or all strings, got {kinds}")


class DuplicateIndex:
    r"""
    Embeddings of a corpus of texts, searchable by cosine similarity, for duplicate detection.

    Build it from a list of texts or a `datasets.Dataset`, search it with new texts, grow it with
    `add`, save it to a folder and load it back. Scores are the cosine similarity of the model's
    L2-normalised embeddings (also for models with a classification head, whose head scores pairs,
    not a corpus). Where a cosine threshold is known (the model's calibrated `config.threshold`, or
    `threshold=`), each match also says whether it counts as a duplicate.

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
        query_chunk_size, corpus_chunk_size: block sizes of the exact search; peak extra memory
            is about `query_chunk_size * corpus_chunk_size * 4` bytes (256 MiB by default),
            whatever the corpus size.
        faiss_string_factory: FAISS index factory string (e.g. `"HNSW32"`) for an approximate
            index; default a flat (exact) inner-product index.

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
        query_chunk_size: int = 1024,
        corpus_chunk_size: int = 65536,
        faiss_string_factory: str | None = None,
    ) -> None:
        if query_chunk_size < 1 or corpus_chunk_size < 1:
            raise ValueError(
                f"chunk sizes must be at least 1, got query_chunk_size={query_chunk_size}, "
                f"corpus_chunk_size={corpus_chunk_size}"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.backend = _check_backend(backend)
        self.model = self._resolve_model(model)
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_length = max_length
        self.query_chunk_size = query_chunk_size
        self.corpus_chunk_size = corpus_chunk_size
        self.faiss_string_factory = faiss_string_factory
        self.threshold = _check_threshold(threshold if threshold is not None else _cosine_threshold(self.model))
        self.embedding_dim: int | None = self.model.config.sentence_embedding_dim if self.model is not None else None
        self.model_name_or_path: str | None = getattr(self.model, "name_or_path", None) or None
        self._embeddings = torch.empty(0, self.embedding_dim or 0)
        self._corpus: datasets.Dataset | None = None
        self._id_type: str | None = None
        self._id_set: set[Any] | None = None

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
        texts, ids = _texts_and_ids(corpus, ids, text_column, id_column)
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
        texts = _check_texts(texts)
        if not texts:
            return
        new_ids = self._check_new_ids(ids, len(texts))
        embeddings = self._encode(texts, show_progress_bar=show_progress_bar)
        if embeddings.shape != (len(texts), self.embedding_dim):
            raise ValueError(
                f"the model gave embeddings of shape {tuple(embeddings.shape)}, expected ({len(texts)}, {self.embedding_dim})"
            )
        id_type = self._id_type or _id_type(new_ids)
        features = datasets.Features(
            {"id": datasets.Value("int64" if id_type == "int" else "string"), "text": datasets.Value("string")}
        )
        rows = datasets.Dataset.from_dict({"id": new_ids, "text": texts}, features=features)
        if self._corpus is None:
            self._corpus = rows
            self._embeddings = embeddings.float().contiguous()
        else:
            self._drop_faiss_index()
            self._corpus = datasets.concatenate_datasets([self._corpus, rows])
            self._embeddings = torch.cat([self._embeddings, embeddings.float()])
        self._id_type = id_type
        self._id_set.update(new_ids)

    def _check_new_ids(self, ids: Sequence[int | str] | None, count: int) -> list[Any]:
        existing = self._existing_ids()
        if ids is None:
            if self._id_type == "str":
                raise ValueError("this index has string ids: pass ids=... for the new texts")
            start = len(self)
            ids = list(range(start, start + count))
        else:
            if isinstance(ids, str):
                raise TypeError("ids must be a list, not a single string")
            # numpy / torch integers become plain ints, so that they are checked and stored as such
            ids = [i.item() if hasattr(i, "item") and not isinstance(i, (str, bytes)) else i for i in ids]
            if len(ids) != count:
                raise ValueError(f"got {count} texts but {len(ids)} ids: give one id per text")
        kind = _id_type(ids)
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
        )

    @staticmethod
    def _resolve_model(model: SiameseModel | str | None) -> Any:
        if isinstance(model, (str, os.PathLike)):
            from transformers import AutoModel

            return AutoModel.from_pretrained(str(model))
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
    ) -> list[dict[str, Any]] | list[list[dict[str, Any]]]:
        """
        The `k` indexed texts most similar to each query, best first.

        Each match is a dict `{"id", "text", "score"}` (score: cosine similarity), plus
        `"is_duplicate"` (`score >= threshold`) when a threshold is known. A single string gives
        one list of matches; a list of strings gives one list per query (as pipelines do).
        `k` is capped at the size of the index.
        """
        single = isinstance(queries, str)
        texts = _check_texts([queries] if single else queries, "queries")
        _check_k(k)
        threshold = _check_threshold(threshold) if threshold is not None else self.threshold
        if not texts:
            return []
        self._check_not_empty()
        scores, rows = self.search_embeddings(self._encode(texts), k, backend=backend)
        results = self._matches(scores, rows, threshold)
        return results[0] if single else results

    def search_embeddings(
        self, query_embeddings: torch.Tensor, k: int = 10, *, backend: Backend | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """
        Tensor form of `search`: `(scores, rows)`, both `(num_queries, min(k, len(index)))`, best
        first; `rows` index `embeddings` and `corpus`. Queries should be L2-normalised (as
        `model.encode` returns them) for the scores to be cosine similarities.
        """
        _check_k(k)
        self._check_not_empty()
        if query_embeddings.dim() != 2 or query_embeddings.shape[1] != self.embedding_dim:
            raise ValueError(
                f"query embeddings must have shape (num_queries, {self.embedding_dim}), got {tuple(query_embeddings.shape)}"
            )
        backend = _check_backend(backend or self.backend)
        queries = query_embeddings.detach().float().cpu()
        if backend == "exact":
            return topk_cosine(
                queries,
                self._embeddings,
                k,
                query_chunk_size=self.query_chunk_size,
                corpus_chunk_size=self.corpus_chunk_size,
            )
        self._ensure_faiss_index()
        scores, rows = self._corpus.search_batch(_FAISS_INDEX_NAME, queries.contiguous().numpy(), k=min(k, len(self)))
        return torch.from_numpy(scores).float(), torch.from_numpy(rows).long()

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

    def _ensure_faiss_index(self) -> None:
        # A flat inner-product index over L2-normalised vectors ranks exactly as cosine similarity.
        if self._corpus.is_index_initialized(_FAISS_INDEX_NAME):
            return
        faiss = _import_faiss()
        vectors = self._embeddings.contiguous().numpy()
        self._corpus.add_faiss_index_from_external_arrays(
            vectors,
            _FAISS_INDEX_NAME,
            string_factory=self.faiss_string_factory,
            metric_type=faiss.METRIC_INNER_PRODUCT,
            batch_size=max(len(vectors), 1),
            train_size=len(vectors) if self.faiss_string_factory else None,
        )

    def _drop_faiss_index(self) -> None:
        if self._corpus is not None and self._corpus.is_index_initialized(_FAISS_INDEX_NAME):
            self._corpus.drop_index(_FAISS_INDEX_NAME)

    # ----------------------------------------------------------------------------------------
    # Paraphrase mining
    # ----------------------------------------------------------------------------------------
    def find_duplicates(
        self, threshold: float | None = None, k: int = 10, *, show_progress_bar: bool = False
    ) -> list[dict[str, Any]]:
        """
        Pairs of indexed texts that look like duplicates of each other: every pair `(a, b)`, `a`
        before `b` in the index, whose cosine similarity is at least `threshold` (default: the
        index's threshold), sorted by score (highest first).

        How: each text's `k` nearest other texts are found with the chunked exact top-k (the
        same search as `search`), and the pairs among them that pass the threshold are kept,
        each once. Memory is bounded by the chunk sizes plus `len(index) * k` candidates; no
        `N x N` matrix is ever built, whatever the threshold. A top-k cap is chosen over a
        "keep every score above the threshold" scan because the latter's output (and memory) is
        unbounded: a low threshold over 1M texts yields billions of pairs.

        The limit that comes with the cap: a pair is missed only when each of its two texts has
        `k` other neighbours scoring higher than the pair itself, i.e. inside a cluster of more
        than `k + 1` near-identical texts. When a text's `k`-th neighbour still passes the
        threshold this may have happened, and a warning says how many texts were capped; raise
        `k` then (`k >= len(index) - 1` is exhaustive). Cost is `len(index)^2` dot products.
        """
        _check_k(k)
        threshold = _check_threshold(threshold) if threshold is not None else self.threshold
        if threshold is None:
            raise ValueError(
                "no threshold: pass threshold=... (a cosine similarity), or build the index with a model whose "
                "config.threshold is calibrated (SiameseTrainer.evaluate)"
            )
        num_texts = len(self)
        if num_texts < 2:
            return []
        k = min(k, num_texts - 1)
        firsts, seconds, pair_scores = [], [], []
        capped = 0
        starts = range(0, num_texts, self.query_chunk_size)
        if show_progress_bar:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="Mining pairs", unit="chunk")
        for start in starts:
            own = torch.arange(start, min(start + self.query_chunk_size, num_texts))
            scores, rows = topk_cosine(
                self._embeddings[start : start + len(own)],
                self._embeddings,
                k,
                query_chunk_size=self.query_chunk_size,
                corpus_chunk_size=self.corpus_chunk_size,
                exclude_indices=own,
            )
            keep = scores >= threshold
            if k < num_texts - 1:
                capped += int(keep[:, -1].sum())
            anchors = own[:, None].expand_as(rows)[keep]
            partners = rows[keep]
            firsts.append(torch.minimum(anchors, partners))
            seconds.append(torch.maximum(anchors, partners))
            pair_scores.append(scores[keep])
        if capped:
            logger.warning(
                f"{capped} texts have all {k} nearest neighbours at or above the threshold {threshold}: "
                f"pairs inside such clusters may be missing; raise k (k={num_texts - 1} is exhaustive)"
            )
        first, second, score = torch.cat(firsts), torch.cat(seconds), torch.cat(pair_scores)
        if first.numel() == 0:
            return []
        # Each pair may come from both of its texts' neighbour lists: keep it once, with its best
        # score (the two dot products can differ in the last bit when computed in other chunks).
        keys, inverse = torch.unique(first * num_texts + second, return_inverse=True)
        best = torch.full((len(keys),), float("-inf")).scatter_reduce(0, inverse, score, reduce="amax")
        order = torch.sort(best, descending=True, stable=True).indices  # ties: index order
        keys, best = keys[order], best[order]
        rows_a, rows_b = (keys // num_texts).tolist(), (keys % num_texts).tolist()
        side_a, side_b = self._corpus[rows_a], self._corpus[rows_b]
        return [
            {"id_a": ia, "text_a": ta, "id_b": ib, "text_b": tb, "score": s}
            for ia, ta, ib, tb, s in zip(side_a["id"], side_a["text"], side_b["id"], side_b["text"], best.tolist())
        ]

    # ----------------------------------------------------------------------------------------
    # Saving and loading
    # ----------------------------------------------------------------------------------------
    def save(self, save_directory: str | os.PathLike, *, overwrite: bool = False) -> None:
        """
        Write the index to a folder (see the module docstring for the files). A folder that
        already holds files is refused unless `overwrite=True`, which replaces the index files
        there (other files are left alone).
        """
        self._check_not_empty()
        path = Path(save_directory)
        if path.exists() and not path.is_dir():
            raise FileExistsError(f"{path} exists and is not a folder")
        if path.is_dir() and any(path.iterdir()) and not overwrite:
            raise FileExistsError(
                f"{path} is not empty: pass overwrite=True to replace the index saved there, or choose another folder"
            )
        path.mkdir(parents=True, exist_ok=True)
        # Everything is written beside the target first and moved in at the end, so that saving
        # over the folder this index was loaded (memory-mapped) from never reads half-written files.
        with tempfile.TemporaryDirectory(dir=path, prefix=".saving-") as staging:
            staging = Path(staging)
            save_file({"embeddings": self._embeddings.contiguous()}, staging / EMBEDDINGS_NAME, metadata={"format": "pt"})
            self._corpus.save_to_disk(str(staging / CORPUS_DIR_NAME))
            config = {
                "format_version": FORMAT_VERSION,
                "model_name_or_path": self.model_name_or_path,
                "embedding_dim": self.embedding_dim,
                "num_texts": len(self),
                "id_type": self._id_type,
                "threshold": self.threshold,
            }
            (staging / INDEX_CONFIG_NAME).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
            # The config goes last: a folder without it is never mistaken for a complete index.
            (path / INDEX_CONFIG_NAME).unlink(missing_ok=True)
            os.replace(staging / EMBEDDINGS_NAME, path / EMBEDDINGS_NAME)
            if (path / CORPUS_DIR_NAME).exists():
                shutil.rmtree(path / CORPUS_DIR_NAME)
            os.replace(staging / CORPUS_DIR_NAME, path / CORPUS_DIR_NAME)
            os.replace(staging / INDEX_CONFIG_NAME, path / INDEX_CONFIG_NAME)

    @classmethod
    def load(
        cls,
        save_directory: str | os.PathLike,
        model: SiameseModel | str | None = None,
        tokenizer: Any | None = None,
        **kwargs: Any,
    ) -> DuplicateIndex:
        """
        Load an index saved with `save`. With a `model`, its embedding size must match the
        index's (a different model's embeddings are not comparable; a different name only warns,
        since a moved folder keeps its weights). `**kwargs` are the constructor's options; the
        saved threshold is used unless `threshold=` or the model's calibrated one is given.
        """
        path = Path(save_directory)
        if not path.is_dir():
            raise FileNotFoundError(f"no index folder at {path}")
        config = _read_index_config(path / INDEX_CONFIG_NAME)
        embeddings = _read_embeddings(path / EMBEDDINGS_NAME, config)
        corpus = _read_corpus(path / CORPUS_DIR_NAME, config)

        index = cls(model, tokenizer, **kwargs)
        if index.model is not None:
            model_dim = index.model.config.sentence_embedding_dim
            if model_dim != config["embedding_dim"]:
                raise ValueError(
                    f"the index in {path} holds {config['embedding_dim']}-dimensional embeddings (built with "
                    f"{config['model_name_or_path']!r}) but the model gives {model_dim}-dimensional ones: "
                    "load it with the model that built it, or rebuild the index"
                )
            if config["model_name_or_path"] and index.model_name_or_path != config["model_name_or_path"]:
                logger.warning(
                    f"the index in {path} was built with {config['model_name_or_path']!r}, the model given is "
                    f"{index.model_name_or_path!r}: scores are only meaningful with the same weights"
                )
        else:
            index.model_name_or_path = config["model_name_or_path"]
        if index.threshold is None:
            index.threshold = _check_threshold(config["threshold"])
        index.embedding_dim = config["embedding_dim"]
        index._embeddings = embeddings
        index._corpus = corpus
        index._id_type = "int" if corpus.features["id"].dtype.startswith("int") else "str"
        return index


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
def _texts_and_ids(
    corpus: Sequence[str] | datasets.Dataset,
    ids: Sequence[int | str] | None,
    text_column: str,
    id_column: str | None,
) -> tuple[list[str], list[Any] | None]:
    if isinstance(corpus, (datasets.DatasetDict, datasets.IterableDataset, datasets.IterableDatasetDict)):
        raise TypeError(f"pass one split as a datasets.Dataset, not a {type(corpus).__name__}")
    if isinstance(corpus, datasets.Dataset):
        for name, column in (("text_column", text_column), ("id_column", id_column)):
            if column is not None and column not in corpus.column_names:
                raise KeyError(f"{name} {column!r} is not a column of the dataset; columns: {corpus.column_names}")
        if ids is not None and id_column is not None:
            raise ValueError("pass either ids or id_column, not both")
        texts = _check_texts(list(corpus[text_column]), f"corpus[{text_column!r}]")
        if id_column is not None:
            ids = list(corpus[id_column])
        return texts, ids
    if id_column is not None:
        raise ValueError("id_column applies to a datasets.Dataset corpus; with a list of texts pass ids=...")
    return _check_texts(corpus, "corpus"), ids


def _read_index_config(file: Path) -> dict[str, Any]:
    if not file.is_file():
        raise FileNotFoundError(f"{file} is missing: {file.parent} is not a saved DuplicateIndex (or it is incomplete)")
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{file} is corrupted (not valid JSON: {err}); rebuild the index") from err
    if not isinstance(config, dict) or any(key not in config for key in _REQUIRED_CONFIG_KEYS):
        missing = [key for key in _REQUIRED_CONFIG_KEYS if not isinstance(config, dict) or key not in config]
        raise ValueError(f"{file} is not a DuplicateIndex config: missing {missing}")
    if config["format_version"] != FORMAT_VERSION:
        raise ValueError(
            f"{file} has format version {config['format_version']}; this hfsiamese reads version {FORMAT_VERSION}"
        )
    return config


def _read_embeddings(file: Path, config: dict[str, Any]) -> torch.Tensor:
    if not file.is_file():
        raise FileNotFoundError(f"{file} is missing: the index folder {file.parent} is incomplete; rebuild the index")
    try:
        tensors = load_file(str(file))
    except Exception as err:  # safetensors raises its own error types (and OSError) for bad files
        raise ValueError(f"{file} is corrupted (cannot be read as safetensors: {err}); rebuild the index") from err
    embeddings = tensors.get("embeddings")
    expected = (config["num_texts"], config["embedding_dim"])
    if embeddings is None or tuple(embeddings.shape) != expected:
        found = None if embeddings is None else tuple(embeddings.shape)
        raise ValueError(f"{file} should hold an 'embeddings' tensor of shape {expected}, found {found}")
    return embeddings.float()


def _read_corpus(directory: Path, config: dict[str, Any]) -> datasets.Dataset:
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is missing: the index folder {directory.parent} is incomplete")
    try:
        corpus = datasets.load_from_disk(str(directory))
    except Exception as err:  # Arrow and datasets raise many types for damaged files
        raise ValueError(f"{directory} is corrupted (cannot be loaded as a saved Dataset: {err}); rebuild the index") from err
    if not isinstance(corpus, datasets.Dataset) or sorted(corpus.column_names) != ["id", "text"]:
        raise ValueError(f"{directory} should hold a Dataset with the columns 'id' and 'text'")
    if corpus.num_rows != config["num_texts"]:
        raise ValueError(
            f"{directory} holds {corpus.num_rows} texts but {directory.parent / INDEX_CONFIG_NAME} says {config['num_texts']}"
        )
    return corpus


__all__ = ["DuplicateIndex"]
