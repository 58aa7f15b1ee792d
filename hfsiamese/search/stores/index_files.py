"""
A `DuplicateIndex` on disk: one folder, written so that a half-written one is never taken for an index.

    index_config.json          format version, model that built it, embedding size, count, threshold, backend
    embeddings.npy             the `(num_texts, dim)` float32 embeddings (numpy's format: memory-mappable)
    corpus/                    `Dataset.save_to_disk` of the columns `id` and `text`
    ann.faiss                  the FAISS index, for `store="faiss"` (its settings in the config's `ann`, the
                               settings asked for in `ann_asked`, its measured recall in `recall`: absent from
                               folders saved before indexes measured themselves, which load as they did)

An index in a Qdrant collection saves only `index_config.json` (its `database` says where the
collection is). Format 1 folders (embeddings in `embeddings.safetensors`) are still read. Nothing is
pickled, so loading an index from someone else cannot run code. Every damaged or missing part is an
error naming the file and saying to rebuild.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from safetensors.torch import load_file

from hfsiamese.search.stores.ann_index import AnnSpec
from hfsiamese.search.stores.embedding_table import EmbeddingTable
from hfsiamese.utils.json_files import read_json_record
from hfsiamese.utils.output_dirs import ensure_writable_folder, give_umask_mode

INDEX_CONFIG_NAME = "index_config.json"
EMBEDDINGS_NAME = "embeddings.npy"
LEGACY_EMBEDDINGS_NAME = "embeddings.safetensors"  # format 1
CORPUS_DIR_NAME = "corpus"
ANN_NAME = "ann.faiss"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
_REQUIRED_CONFIG_KEYS = ("format_version", "embedding_dim", "num_texts", "model_name_or_path", "threshold")


def write_index_folder(
    path: Path,
    embeddings: EmbeddingTable | None,
    corpus: datasets.Dataset | None,
    config: dict[str, Any],
    *,
    overwrite: bool,
    ann: Any | None = None,
) -> None:
    """
    Write the parts to `path` (`config` without `format_version`, which is added here; no embeddings
    and corpus for an index that lives in a database). A folder that already holds files is refused
    unless `overwrite`, which replaces the index files there (other files are left alone).
    """
    ensure_writable_folder(
        path,
        overwrite=overwrite,
        remedy="pass overwrite=True to replace the index saved there, or choose another folder",
    )
    path.mkdir(parents=True, exist_ok=True)
    # Everything is written beside the target first and moved in at the end, so that saving
    # over the folder this index was loaded (memory-mapped) from never reads half-written files.
    with tempfile.TemporaryDirectory(dir=path, prefix=".saving-") as staging:
        staging = Path(staging)
        if embeddings is not None:
            embeddings.write_npy(staging / EMBEDDINGS_NAME)
            corpus.save_to_disk(str(staging / CORPUS_DIR_NAME))
        if ann is not None:
            ann.write(staging / ANN_NAME)
        config = {"format_version": FORMAT_VERSION, **config}
        (staging / INDEX_CONFIG_NAME).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        # The config goes last: a folder without it is never mistaken for a complete index.
        (path / INDEX_CONFIG_NAME).unlink(missing_ok=True)
        for stale in (LEGACY_EMBEDDINGS_NAME, ANN_NAME, EMBEDDINGS_NAME):
            if not (staging / stale).exists():
                (path / stale).unlink(missing_ok=True)  # an older index's part this one does not have
        for name in (EMBEDDINGS_NAME, ANN_NAME):
            if (staging / name).exists():
                give_umask_mode(staging / name)
                os.replace(staging / name, path / name)
        if (path / CORPUS_DIR_NAME).exists():
            shutil.rmtree(path / CORPUS_DIR_NAME)
        if (staging / CORPUS_DIR_NAME).exists():
            os.replace(staging / CORPUS_DIR_NAME, path / CORPUS_DIR_NAME)
        os.replace(staging / INDEX_CONFIG_NAME, path / INDEX_CONFIG_NAME)


def read_index_folder(
    path: Path, *, mmap: bool | None = None
) -> tuple[dict[str, Any], EmbeddingTable | None, datasets.Dataset | None, Path | None]:
    """`(config, embeddings, corpus, FAISS index file or None)` of a saved index, each checked against the config
    (embeddings and corpus are None for an index that lives in a database). `mmap=None`: the embeddings are
    memory-mapped for an index saved with quantised FAISS codes (which reads only the rows it rescores), read
    into memory otherwise."""
    if not path.is_dir():
        raise FileNotFoundError(f"no index folder at {path}")
    config = _read_index_config(path / INDEX_CONFIG_NAME)
    if config.get("database"):
        return config, None, None, None
    if config["format_version"] == 1:
        embeddings = _read_legacy_embeddings(path / LEGACY_EMBEDDINGS_NAME, config)
    else:
        if mmap is None:
            mmap = bool(config.get("ann")) and AnnSpec.from_dict(config["ann"]).quantized
        embeddings = _read_embeddings(path / EMBEDDINGS_NAME, config, mmap=mmap)
    corpus = _read_corpus(path / CORPUS_DIR_NAME, config)
    ann_file = path / ANN_NAME
    return config, embeddings, corpus, ann_file if ann_file.is_file() else None


def _read_index_config(file: Path) -> dict[str, Any]:
    if not file.is_file():
        raise FileNotFoundError(f"{file} is missing: {file.parent} is not a saved DuplicateIndex (or it is incomplete)")
    config = read_json_record(
        file,
        _REQUIRED_CONFIG_KEYS,
        kind="a DuplicateIndex config",
        remedy="rebuild the index",
        remedy_if_incomplete=False,
    )
    if config["format_version"] not in READABLE_VERSIONS:
        raise ValueError(
            f"{file} has format version {config['format_version']}; this hfsiamese reads versions {READABLE_VERSIONS}"
        )
    return config


def _read_embeddings(file: Path, config: dict[str, Any], *, mmap: bool) -> EmbeddingTable:
    if not file.is_file():
        raise FileNotFoundError(f"{file} is missing: the index folder {file.parent} is incomplete; rebuild the index")
    try:
        table = EmbeddingTable.open_npy(file, mmap=mmap)
    except (ValueError, OSError, EOFError) as err:  # numpy's errors for a damaged or foreign file
        raise ValueError(f"{file} is corrupted (cannot be read as a .npy array: {err}); rebuild the index") from err
    expected = (config["num_texts"], config["embedding_dim"])
    if table.shape != expected or table.dtype != np.float32:
        raise ValueError(f"{file} should hold a float32 array of shape {expected}, found {table.dtype} {table.shape}")
    return table


def _read_legacy_embeddings(file: Path, config: dict[str, Any]) -> EmbeddingTable:
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
    return EmbeddingTable(expected[1], embeddings.float().numpy())


def _read_corpus(directory: Path, config: dict[str, Any]) -> datasets.Dataset:
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is missing: the index folder {directory.parent} is incomplete")
    try:
        corpus = datasets.load_from_disk(str(directory))
    except Exception as err:  # Arrow and datasets raise many types for damaged files
        raise ValueError(
            f"{directory} is corrupted (cannot be loaded as a saved Dataset: {err}); rebuild the index"
        ) from err
    if not isinstance(corpus, datasets.Dataset) or sorted(corpus.column_names) != ["id", "text"]:
        raise ValueError(f"{directory} should hold a Dataset with the columns 'id' and 'text'")
    if corpus.num_rows != config["num_texts"]:
        raise ValueError(
            f"{directory} holds {corpus.num_rows} texts but {directory.parent / INDEX_CONFIG_NAME} says {config['num_texts']}"
        )
    return corpus


__all__ = [
    "ANN_NAME",
    "CORPUS_DIR_NAME",
    "EMBEDDINGS_NAME",
    "LEGACY_EMBEDDINGS_NAME",
    "FORMAT_VERSION",
    "INDEX_CONFIG_NAME",
    "read_index_folder",
    "write_index_folder",
]
