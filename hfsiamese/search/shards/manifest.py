"""
The manifest of a shards folder (`shards.json`): what makes resuming safe.

Shards of another corpus, shard size or model in the same folder would be silently mixed into one matrix,
so the folder records its format version, corpus fingerprint (count + sha256 of the texts), shard size,
embedding size, encoding settings and model fingerprint (probe embeddings), and a rerun that differs is
refused and told to use another folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hfsiamese.search.shards.shard_files import SHARD_PATTERN, num_shards, partial_name
from hfsiamese.utils.json_files import read_json_record

MANIFEST_NAME = "shards.json"
FORMAT_VERSION = 1
# Texts every run embeds with its model, saved in the manifest: a rerun with another model (or the same
# folder retrained in place) embeds them differently and is refused, while the same weights moved to another
# folder, machine or device pass. The same model on CPU and GPU agrees to ~1e-6; an int8 or bf16 variant
# (~0.97-0.999) does not pass, since its shards would not be comparable with the others at full precision.
PROBE_TEXTS = ("How do I learn Python?", "What is the capital of France?")
SAME_MODEL_MIN_COSINE = 0.9999
_MANIFEST_KEYS = ("format_version", "num_texts", "corpus_sha256", "shard_size", "embedding_dim", "encoding", "model")


def corpus_fingerprint(texts: Sequence[str]) -> str:
    """sha256 over the texts in order (each one's UTF-8 length, then its bytes): streamed, one text at a time."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, not a single string: wrap it in a list")
    digest = hashlib.sha256()
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{position}] is {type(text).__name__}, not a string")
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def expected_manifest(
    texts: Sequence[str],
    shard_size: int,
    fingerprint: dict[str, Any],
    *,
    max_length: int | None,
    truncate_dim: int | None,
) -> dict[str, Any]:
    """The manifest of encoding `texts` with the fingerprinted model (`model_encoding.model_fingerprint`)."""
    sha256 = corpus_fingerprint(texts)  # also refuses a single string and non-strings, naming the position
    if len(texts) == 0:
        raise ValueError("texts is empty: there is nothing to encode")
    return {
        "format_version": FORMAT_VERSION,
        "num_texts": len(texts),
        "corpus_sha256": sha256,
        "shard_size": shard_size,
        "num_shards": num_shards(len(texts), shard_size),
        "embedding_dim": fingerprint["embedding_dim"],
        "encoding": {"max_length": max_length, "truncate_dim": truncate_dim},
        "model": {key: value for key, value in fingerprint.items() if key != "embedding_dim"},
    }


def read_manifest(shards_dir: Path) -> dict[str, Any] | None:
    """The manifest in `shards_dir`, or None where there is none; an error for a damaged one."""
    file = shards_dir / MANIFEST_NAME
    if not file.is_file():
        return None
    remedy = f"delete {shards_dir} to start over, or encode into another folder"
    manifest = read_json_record(file, _MANIFEST_KEYS, kind="an embedding shards manifest", remedy=remedy)
    if manifest["format_version"] != FORMAT_VERSION:
        raise ValueError(
            f"{file} has format version {manifest['format_version']}; this hfsiamese reads version {FORMAT_VERSION}: {remedy}"
        )
    return manifest


def check_manifest(shards_dir: Path, expected: dict[str, Any]) -> None:
    """Refuse a folder whose manifest differs from `expected` (another corpus, shard size, model or setting)."""
    saved = read_manifest(shards_dir)
    if saved is None:
        raise FileNotFoundError(
            f"{shards_dir / MANIFEST_NAME} is missing: the main process writes it before any shard (see its error)"
        )
    difference = manifest_difference(saved, expected)
    if difference:
        raise ValueError(
            f"{shards_dir} holds shards of {difference}: encode into another folder, or delete {shards_dir} to start over"
        )


def manifest_difference(saved: dict[str, Any], expected: dict[str, Any]) -> str | None:
    """What differs between a saved manifest and this run's, in words; None where they agree."""
    if saved["num_texts"] != expected["num_texts"] or saved["corpus_sha256"] != expected["corpus_sha256"]:
        return (
            f"another corpus ({saved['num_texts']} texts, sha256 {saved['corpus_sha256'][:12]}; these are "
            f"{expected['num_texts']} texts, sha256 {expected['corpus_sha256'][:12]})"
        )
    if saved["shard_size"] != expected["shard_size"]:
        return f"shard_size={saved['shard_size']}, not {expected['shard_size']} (pass shard_size={saved['shard_size']} to resume)"
    if saved["encoding"] != expected["encoding"]:
        return f"another encoding ({_settings(saved['encoding'])}; this run: {_settings(expected['encoding'])})"
    before, now = saved["model"], expected["model"]
    names = f"{before.get('name_or_path')!r}, not this model {now.get('name_or_path')!r}"
    if saved["embedding_dim"] != expected["embedding_dim"]:
        return f"another model ({names}: {saved['embedding_dim']} dimensions, not {expected['embedding_dim']})"
    if before.get("precision", "fp32") != now.get("precision", "fp32"):  # folders written before it was recorded: fp32
        return (
            f"another precision ({before.get('precision', 'fp32')}; this process encodes in {now.get('precision')}, as "
            "given by dtype= or model.set_encode_precision(...)): leave both unset to resume in the folder's precision"
        )
    agreement = _probe_agreement(before, now)
    if agreement < SAME_MODEL_MIN_COSINE:
        return f"another model ({names}: it embeds the probe texts differently, cosine {agreement:.4f} < {SAME_MODEL_MIN_COSINE})"
    return None


def _settings(values: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in values.items())


def _probe_agreement(before: dict[str, Any], now: dict[str, Any]) -> float:
    """The lowest cosine between the saved and the current embeddings of the probe texts (-1 if the probes differ)."""
    if before.get("probe_texts") != now["probe_texts"]:
        return -1.0
    saved, current = (
        np.asarray(before["probe_embeddings"], dtype=np.float64),
        np.asarray(now["probe_embeddings"], dtype=np.float64),
    )
    if saved.shape != current.shape:
        return -1.0
    norms = np.linalg.norm(saved, axis=1) * np.linalg.norm(current, axis=1)
    return float(np.min(np.sum(saved * current, axis=1) / np.maximum(norms, 1e-12)))


def prepare_folder(shards_dir: Path, expected: dict[str, Any]) -> None:
    """
    Create the folder and write the manifest where there is none (atomically); leave a folder whose manifest
    differs alone (`check_manifest` then says how). Shard files without a manifest are refused: nothing says
    what they hold.
    """
    if shards_dir.exists() and not shards_dir.is_dir():
        raise FileExistsError(f"{shards_dir} exists and is not a folder")
    shards_dir.mkdir(parents=True, exist_ok=True)
    if read_manifest(shards_dir) is not None:
        return
    if any(shards_dir.glob(SHARD_PATTERN)):
        raise FileExistsError(
            f"{shards_dir} holds shard files but no {MANIFEST_NAME}, so nothing says which corpus and model they are of: "
            "delete them, or encode into another folder"
        )
    file = shards_dir / MANIFEST_NAME
    partial = partial_name(file)
    try:
        partial.write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
        os.replace(partial, file)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
