"""
What a `DuplicateIndex` writes beside its rows when saved (`index_config`) and how a saved folder becomes an index
again (`load_index`), as the index's `save` and `load` (`IndexFolder`): the model's fingerprint (its embeddings of
`PROBE_QUESTIONS`, which tell at load time whether the model given is the one that built the index: a folder can be
moved or renamed, its weights' embeddings cannot), the threshold and calibration, the store and where a database is,
and a FAISS index's settings and measured recall. The files themselves are `index_files`.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

import torch

from hfsiamese.models.siamese.score_calibrator import ScoreCalibrator
from hfsiamese.models.siamese.scoring import check_threshold
from hfsiamese.search.backends import DATABASE_BACKENDS, store_and_runtime
from hfsiamese.search.groups.group_storage import load_groups_file, save_groups_file
from hfsiamese.search.groups.index_groups import IndexGroups
from hfsiamese.search.index_contents import IndexContents
from hfsiamese.search.lexical.hybrid_search import save_lexical
from hfsiamese.search.lexical.hybrid_settings import saved_hybrid_options
from hfsiamese.search.stores.ann_index import AnnSpec
from hfsiamese.search.stores.index_files import INDEX_CONFIG_NAME, read_index_folder
from hfsiamese.search.stores.recall_tuning import RecallReport

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.models.siamese.modeling_siamese import SiameseModel
    from hfsiamese.search.index_protocol import SearchIndex
    from hfsiamese.search.stores.faiss_store import FaissStore
    from hfsiamese.search.stores.in_memory import InMemoryStore

logger = logging.getLogger("hfsiamese.search.duplicate_index")  # the logger these lines have always come from

# An int8 export of the same model stays above 0.97 cosine on these; another model scores unrelated neighbours
# and lands far below.
PROBE_QUESTIONS = (
    "How do I learn Python?",
    "Why is the sky blue?",
    "What is the best way to lose weight?",
    "How can I make money online?",
    "What is the capital of France?",
    "How do I cook rice?",
)
SAME_MODEL_MIN_COSINE = 0.95

Index = TypeVar("Index", bound="SearchIndex")  # `load_index` gives back the class it is handed


def index_config(index: SearchIndex) -> dict[str, Any]:
    """The `index_config.json` of `index` (the store adds what it keeps: a FAISS index's settings)."""
    config: dict[str, Any] = {
        "model_name_or_path": index.model_name_or_path,
        "embedding_dim": index.embedding_dim,
        "num_texts": len(index),
        "truncate_dim": index.truncate_dim,
        "id_type": index._id_type,
        "threshold": index.threshold,
        "calibration": None if index.calibrator is None else index.calibrator.to_dict(),
        "backend": index.store_name,
    }
    if index.lexical is not None:  # absent without hybrid: such configs are as before
        config["hybrid"] = index.lexical.spec.to_dict()
    if index.model is not None:
        probes = index.encode(list(PROBE_QUESTIONS)).float()
        config["model_fingerprint"] = {
            "texts": list(PROBE_QUESTIONS),
            "embeddings": [[round(value, 7) for value in row] for row in probes.tolist()],
        }
    elif index._model_fingerprint is not None:
        config["model_fingerprint"] = index._model_fingerprint
    if index.store_name in DATABASE_BACKENDS:
        config["database"] = {"location": index.database, "collection": index.collection}
    return config


def load_index(
    cls: Callable[..., Index],
    path: Path,
    model: Any,
    tokenizer: Any,
    mmap: bool | None,
    kwargs: dict[str, Any],
) -> Index:
    """`DuplicateIndex.load` (see there)."""
    config, table, corpus, ann_file = read_index_folder(path, mmap=mmap)
    kwargs.setdefault("truncate_dim", config.get("truncate_dim"))  # the size it was built at, unless told
    saved_recall = _saved_recall(config, path)
    target_given = "recall_target" in kwargs
    if saved_recall is not None:
        kwargs.setdefault("recall_target", saved_recall.target)  # the target it was measured against, unless told
    store, runtime = store_and_runtime(kwargs.get("store"), kwargs.pop("backend", None))  # warned: an old store name
    kwargs.update(store=store or config.get("backend", "exact"), backend=runtime)  # saved as "backend": the store
    if not {"hybrid", "rrf_k", "lexical_weight"} & kwargs.keys():  # searched as saved, unless told
        kwargs.update(saved_hybrid_options(config.get("hybrid"), str(path / INDEX_CONFIG_NAME)))
    database = config.get("database")
    if kwargs["store"] in DATABASE_BACKENDS and database is not None:
        kwargs.setdefault("database", database["location"])
        kwargs.setdefault("collection", database["collection"])
    index = cls(model, tokenizer, **kwargs)
    if index.model is not None:
        _check_model(index, config, path)
    else:
        index.model_name_or_path = config["model_name_or_path"]
    if index.threshold is None:
        index.threshold = check_threshold(config["threshold"])
    if index.calibrator is None and config.get("calibration"):  # folders saved before calibration lack the key
        index.calibrator = ScoreCalibrator.from_dict(config["calibration"])
    index.embedding_dim = config["embedding_dim"]
    index._model_fingerprint = config.get("model_fingerprint")
    index._id_type = config.get("id_type")
    if index.store.database:
        return index
    if table is None:
        raise ValueError(
            f"the index in {path} lives in a database collection: load it with its saved store (the default)"
        )
    store = cast("InMemoryStore", index.store)  # numbered rows, kept in the folder
    store.embedding_dim = index.embedding_dim
    store.table, store.corpus = table, corpus
    if index.lexical is not None:
        index.lexical.take_saved(store, path)
    index._id_type = store.id_type or "str"
    saved_spec = AnnSpec.from_dict(config["ann"]) if config.get("ann") else None
    if index.store_name == "faiss" and ann_file is not None and saved_spec is not None:
        store = cast("FaissStore", store)
        asked = store.spec
        if asked.is_default or asked.resolved(len(index), index.embedding_dim) == saved_spec:
            # A rebuild (after a delete, or rebuild_ann) starts from what was asked: "auto" is tuned again.
            saved_ask = config.get("ann_asked")
            store.take_saved(
                ann_file,
                saved_spec,
                AnnSpec.from_dict(saved_ask) if asked.is_default and saved_ask else None,
                saved_recall,
            )
            report = saved_recall
            if (
                target_given
                and report is not None
                and store.recall_target is not None
                and report.recall < store.recall_target
            ):
                warnings.warn(
                    f"the FAISS index in {path} ({report.settings}) was measured to find {report.recall:.3f} of the "
                    f"exact top {report.k}, below recall_target={store.recall_target}: index.rebuild_ann() tunes it "
                    "to this target",
                    UserWarning,
                    stacklevel=3,
                )
    return index


class IndexFolder(IndexContents):
    """An index as a folder: `save` and `load` (`DuplicateIndex` is one: it holds its `groups` and `_groups`)."""

    groups: Any
    _groups: IndexGroups

    def save(self, save_directory: str | os.PathLike, *, overwrite: bool = False) -> None:
        """
        Write the index to a folder (see `index_files` for its files). A folder that already holds files is refused
        unless `overwrite=True`, which replaces the index files there (other files are left alone). A FAISS index is
        saved with it (loading does not rebuild it); a database index saves only where its collection is.
        """
        self.check_not_empty()
        self._store.save(save_directory, index_config(self), overwrite=overwrite)
        save_lexical(self, Path(save_directory))  # derived from the texts: rebuilt at load if missing
        if not self._store.database:  # a database keeps its groups beside its rows
            save_groups_file(self.groups, save_directory)

    @classmethod
    def load(
        cls,
        save_directory: str | os.PathLike,
        model: SiameseModel | str | None = None,
        tokenizer: Any | None = None,
        *,
        mmap: bool | None = None,
        **kwargs: Any,
    ) -> Self:
        """
        Load an index saved with `save`. With a `model`, it must be the model that built the index: its embeddings
        of the probe questions saved with the index (`PROBE_QUESTIONS`) must agree (cosine >= `SAME_MODEL_MIN_COSINE`),
        else a `ValueError`: another model's embeddings are not comparable. A moved or renamed model folder passes;
        an index saved before fingerprints only checks the size and warns on a different name. `**kwargs` are the
        constructor's options; the saved threshold is used unless `threshold=` or the model's calibrated one is
        given, and the saved store (and FAISS index) unless `store=` (or other FAISS settings) are given; `backend="auto"`
        chooses the model's runtime when `model` is a folder (see the constructor).

        `mmap=True` leaves the embeddings in the folder's file, read as needed (memory-mapped): a corpus larger than
        memory can be searched, best through a quantised FAISS index (an exact search reads the whole file each
        time, about 4x slower at 1M texts). Default: `True` for an index saved with quantised FAISS codes.
        """
        index = load_index(cls, Path(save_directory), model, tokenizer, mmap, kwargs)
        if not index._store.database:
            index._groups = IndexGroups(load_groups_file(save_directory))
        return index


def _check_model(index: SearchIndex, config: dict[str, Any], path: Path) -> None:
    """Refuse a model of another size, or (by the saved fingerprint) another model; warn on a name only."""
    model_dim = index.truncate_dim or index.model.config.sentence_embedding_dim
    if model_dim != config["embedding_dim"]:
        raise ValueError(
            f"the index in {path} holds {config['embedding_dim']}-dimensional embeddings (built with "
            f"{config['model_name_or_path']!r}) but the model gives {model_dim}-dimensional ones"
            f"{' (truncate_dim)' if index.truncate_dim else ''}: load it with the model (and truncate_dim) "
            "that built it, or rebuild the index"
        )
    if config.get("model_fingerprint"):
        _check_same_model(index, config["model_fingerprint"], path, config["model_name_or_path"])
    elif config["model_name_or_path"] and index.model_name_or_path != config["model_name_or_path"]:
        logger.warning(
            f"the index in {path} was built with {config['model_name_or_path']!r}, the model given is "
            f"{index.model_name_or_path!r}: scores are only meaningful with the same weights"
        )


def _check_same_model(index: SearchIndex, fingerprint: dict[str, Any], path: Path, built_with: str | None) -> None:
    """Refuse a model whose embeddings of the saved probe questions differ from the building model's."""
    saved = torch.tensor(fingerprint["embeddings"], dtype=torch.float32)
    now = index.encode(list(fingerprint["texts"])).float().cpu()
    agreement = torch.nn.functional.cosine_similarity(saved, now, dim=1).min().item()
    if agreement < SAME_MODEL_MIN_COSINE:
        raise ValueError(
            f"the index in {path} was built with another model ({built_with!r}): this model "
            f"({index.model_name_or_path!r}) embeds its probe questions differently (cosine {agreement:.3f} < "
            f"{SAME_MODEL_MIN_COSINE}), so its searches would return unrelated questions; search it with the model "
            "that built it, or rebuild the index with this one"
        )


def _saved_recall(config: dict[str, Any], path: Path) -> RecallReport | None:
    """The measurement saved with an index (None for an index saved before indexes measured their recall)."""
    saved = config.get("recall")
    if saved is None:
        return None
    try:
        return RecallReport.from_dict(saved)
    except (TypeError, ValueError, AttributeError) as err:
        raise ValueError(f"{path / INDEX_CONFIG_NAME} has a damaged 'recall' entry ({err}); rebuild the index") from err


__all__ = ["PROBE_QUESTIONS", "SAME_MODEL_MIN_COSINE", "IndexFolder", "index_config", "load_index"]
