"""
A `DuplicateIndex` on disk: one folder, written so that a half-written one is never taken for an index.

    index_config.json          format version, model that built it, embedding size, count, threshold
    embeddings.safetensors     the `(num_texts, dim)` float32 embeddings (tensor "embeddings")
    corpus/                    `Dataset.save_to_disk` of the columns `id` and `text`

Nothing is pickled, so loading an index from someone else cannot run code. Every damaged or missing
part is an error naming the file and saying to rebuild.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import datasets
import torch
from safetensors.torch import load_file, save_file

from ..runs.output_dirs import ensure_writable_folder, give_umask_mode

INDEX_CONFIG_NAME = "index_config.json"
EMBEDDINGS_NAME = "embeddings.safetensors"
CORPUS_DIR_NAME = "corpus"
FORMAT_VERSION = 1
_REQUIRED_CONFIG_KEYS = ("format_version", "embedding_dim", "num_texts", "model_name_or_path", "threshold")


def write_index_folder(
    path: Path, embeddings: torch.Tensor, corpus: datasets.Dataset, config: dict[str, Any], *, overwrite: bool
) -> None:
    """
    Write the three parts to `path` (`config` without `format_version`, which is added here). A folder
    that already holds files is refused unless `overwrite`, which replaces the index files there (other
    files are left alone).
    """
    ensure_writable_folder(
        path, overwrite=overwrite, remedy="pass overwrite=True to replace the index saved there, or choose another folder"
    )
    path.mkdir(parents=True, exist_ok=True)
    # Everything is written beside the target first and moved in at the end, so that saving
    # over the folder this index was loaded (memory-mapped) from never reads half-written files.
    with tempfile.TemporaryDirectory(dir=path, prefix=".saving-") as staging:
        staging = Path(staging)
        save_file({"embeddings": embeddings.contiguous()}, staging / EMBEDDINGS_NAME, metadata={"format": "pt"})
        corpus.save_to_disk(str(staging / CORPUS_DIR_NAME))
        config = {"format_version": FORMAT_VERSION, **config}
        (staging / INDEX_CONFIG_NAME).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        # The config goes last: a folder without it is never mistaken for a complete index.
        (path / INDEX_CONFIG_NAME).unlink(missing_ok=True)
        give_umask_mode(staging / EMBEDDINGS_NAME)  # safetensors writes 0600: readable as the rest instead
        os.replace(staging / EMBEDDINGS_NAME, path / EMBEDDINGS_NAME)
        if (path / CORPUS_DIR_NAME).exists():
            shutil.rmtree(path / CORPUS_DIR_NAME)
        os.replace(staging / CORPUS_DIR_NAME, path / CORPUS_DIR_NAME)
        os.replace(staging / INDEX_CONFIG_NAME, path / INDEX_CONFIG_NAME)


def read_index_folder(path: Path) -> tuple[dict[str, Any], torch.Tensor, datasets.Dataset]:
    """`(config, embeddings, corpus)` of a saved index, each checked against the config."""
    if not path.is_dir():
        raise FileNotFoundError(f"no index folder at {path}")
    config = _read_index_config(path / INDEX_CONFIG_NAME)
    embeddings = _read_embeddings(path / EMBEDDINGS_NAME, config)
    corpus = _read_corpus(path / CORPUS_DIR_NAME, config)
    return config, embeddings, corpus


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


__all__ = ["CORPUS_DIR_NAME", "EMBEDDINGS_NAME", "FORMAT_VERSION", "INDEX_CONFIG_NAME", "read_index_folder", "write_index_folder"]
