"""
The index a command searches: the one saved in a folder, or one built from a corpus file (and saved there). One
function for `hfsiamese search` and `hfsiamese app`, so that both load the model and its tokenizer alike and refuse
the same things with the same messages, before the corpus is embedded (which may take minutes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from accelerate import PartialState
from transformers import AutoTokenizer

from hfsiamese.loading import load_siamese_model
from hfsiamese.search.corpus_files import CorpusFile
from hfsiamese.search.duplicate_index import DuplicateIndex
from hfsiamese.search.stores.index_files import INDEX_CONFIG_NAME
from hfsiamese.utils.output_dirs import is_same_folder

# Where the saved index says where its rows are, these options of a new one do not apply to it.
_WHERE_THE_ROWS_ARE = ("database", "collection")


def open_index(
    model_name_or_path: str,
    index_dir: str | None,
    corpus: Callable[[], CorpusFile] | None,
    *,
    model: Any | None = None,
    options: dict[str, Any] | None = None,
    build_options: dict[str, Any] | None = None,
    overwrite: bool = False,
    index_flag: str = "--index_dir",
    overwrite_flag: str | None = None,
    backend: str | None = None,
    runtime_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> DuplicateIndex | None:
    """
    The index saved in `index_dir` (its `INDEX_CONFIG_NAME` there), else one built from `corpus()` and saved to
    `index_dir` when given. None in the helper processes of a sharded build (`build_options["shards_dir"]`) under
    `accelerate launch`, which only encode.

    Args:
        model_name_or_path: the model's folder: loaded (unless `model` is given) and its tokenizer beside it;
            `backend` the runtime it is loaded with (`"auto"`: the fastest export it carries, see `load_model`),
            `runtime_options` that runtime's options (as for `load_model`).
        index_dir: a folder holding a saved index, or where to save the one built (None: not saved).
        corpus: reads the corpus file (None: no `--corpus` was given).
        options: `DuplicateIndex` options for loading and building alike (a database's place is taken from a
            saved index); `build_options` only for building (`batch_size`, `shards_dir`, `shard_size`).
        overwrite: build from `corpus` even where `index_dir` holds an index, replacing its files.
        index_flag, overwrite_flag: the command's flags, for the messages. With an `overwrite_flag` a corpus given
            beside a saved index is refused (which one is meant?); without one (the app) the saved index is loaded.
    """
    options = dict(options or {})
    saved = index_dir is not None and (Path(index_dir) / INDEX_CONFIG_NAME).is_file()
    if saved and not overwrite:
        if corpus is not None and overwrite_flag is not None:
            raise ValueError(
                f"{index_dir} already holds an index: drop --corpus to search it, or pass {overwrite_flag} "
                "to rebuild it from the corpus"
            )
        model, tokenizer = _model_and_tokenizer(model_name_or_path, model, backend, runtime_options)
        for name in _WHERE_THE_ROWS_ARE:  # the saved index says where its database is
            options.pop(name, None)
        return DuplicateIndex.load(index_dir, model, tokenizer, **options)
    if corpus is None:
        where = f" ({index_dir} holds no index yet)" if index_dir else ""
        raise ValueError(f"pass --corpus to build an index{where}")
    # An index saved in the model's folder would mix its files with the model's (or, rebuilt, replace them).
    if index_dir is not None and is_same_folder(index_dir, model_name_or_path):
        raise ValueError(f"{index_flag} {index_dir} is the model's own folder: choose another folder for the index")
    if index_dir is not None and not overwrite:
        target = Path(index_dir)
        # Checked before the corpus is embedded, which may take minutes, rather than when saving.
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            rebuild = f", or pass {overwrite_flag}" if overwrite_flag else ""
            raise FileExistsError(f"{index_flag} {target} exists and holds no index: choose an empty folder{rebuild}")
    texts, ids, metadata = corpus()
    model, tokenizer = _model_and_tokenizer(model_name_or_path, model, backend, runtime_options)
    build_options = build_options or {}
    index = DuplicateIndex.build(
        texts, model, tokenizer, ids=ids, metadata=metadata, show_progress_bar=True, **options, **build_options
    )
    if build_options.get("shards_dir") is not None and not PartialState().is_main_process:
        return None  # this process encoded its shards; the main one indexes, saves and searches
    if index_dir is not None:
        index.save(index_dir, overwrite=overwrite)
    return index


def _model_and_tokenizer(
    model_name_or_path: str,
    model: Any | None,
    backend: str | None,
    runtime_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[Any, Any]:
    """The model (loaded unless given: a PyTorch checkpoint, an ONNX or OpenVINO export, or with `backend="auto"` the
    fastest of them the folder carries) and the tokenizer saved beside it."""
    if model is None:
        model = load_siamese_model(model_name_or_path, backend=backend, runtime_options=runtime_options)
    return model, AutoTokenizer.from_pretrained(model_name_or_path)


__all__ = ["open_index"]
