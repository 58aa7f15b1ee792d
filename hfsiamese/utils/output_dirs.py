"""Output folders: a user's earlier run, report or index is never overwritten by surprise.

Every writer of a folder (the training output, an evaluation report, a saved index) refuses the
same two cases with the same words; `ensure_writable_folder` is that one check. A training run given
no `--output_dir` gets a folder named after the run (`run_output_dir`), so two different runs do not
meet in one folder, and a run repeated gets a numbered folder beside the first instead of an error.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from transformers.utils import logging

logger = logging.get_logger(__name__)

OUTPUTS_ROOT = Path("outputs")


def give_umask_mode(*paths: str | Path) -> None:
    """
    Give files the mode the user's umask gives any new file (0644 usually). safetensors writes its files
    0600, so a model or index saved by one user could not be served by another (or from a container
    built by another) while every other file of the folder could be read.
    """
    mode = 0o666 & ~_umask()
    for path in paths:
        os.chmod(path, mode)


def _umask() -> int:
    current = os.umask(0)  # the only way to read it; set straight back
    os.umask(current)
    return current


def is_same_folder(folder: str | Path, other: str | Path | None) -> bool:
    """Whether `other` (None, a Hub id or a folder) is the existing folder `folder`, under any name (a link too)."""
    return other is not None and Path(folder).is_dir() and Path(other).is_dir() and os.path.samefile(folder, other)


def ensure_writable_folder(path: str | Path, *, overwrite: bool = False, label: str = "", remedy: str) -> None:
    """
    Refuse a path that is a file, or a folder that already holds files unless `overwrite`.

    The errors read "`label` `path` exists and is not a folder" and "`label` `path` is not empty:
    `remedy`", so each caller says how to proceed in its own terms (a flag, an argument).
    """
    path = Path(path)
    named = f"{label} {path}" if label else str(path)
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"{named} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise FileExistsError(f"{named} is not empty: {remedy}")


def ensure_writable_output_dir(output_dir: str | Path, *, overwrite: bool = False, resuming: bool = False) -> None:
    """Refuse to write into a non-empty folder unless asked: a user's earlier run must not be lost."""
    ensure_writable_folder(
        output_dir,
        overwrite=overwrite or resuming,
        label="output_dir",
        remedy="pass --overwrite_output_dir to write into it, --resume_from_checkpoint to continue the run there, "
        "or choose another --output_dir",
    )


def run_name(
    config_file: str | Path | None, train_source: str | None, loss: str, config_loss: str | None = None
) -> str:
    """
    The name of a training run: the training data's name and the loss (`pairs-contrastive` for
    `--train_file data/pairs.csv`, `glue_qqp-triplet` for `--dataset_name nyu-mll/glue --dataset_config_name qqp`), or without
    training data of its own the config's name (`lstm_qqp`), plus the loss when it is not the config's.
    """
    if train_source:
        source = str(train_source).rstrip("/")
        stem = Path(source).name.split(".")[0] if Path(source).suffix else source.split("/")[-1]
        return _safe(f"{stem}-{loss}")
    name = Path(config_file).stem if config_file else "siamese"
    return _safe(name if loss == config_loss else f"{name}-{loss}")


def run_output_dir(name: str, *, root: str | Path = OUTPUTS_ROOT, reuse: bool = False) -> Path:
    """
    `root/name`, or when that folder already holds files the first free `root/name-2`, `name-3`, ...
    (logged), so repeating a command never meets the previous run's folder. `reuse=True` (resuming,
    or overwriting on purpose) keeps `root/name` whatever it holds.
    """
    first = Path(root) / name
    if reuse:
        return first
    candidate, number = first, 1
    while candidate.exists() and (not candidate.is_dir() or any(candidate.iterdir())):
        number += 1
        candidate = first.with_name(f"{name}-{number}")
    if candidate != first:
        logger.warning(
            f"{first} holds an earlier run: this run writes to {candidate} (--output_dir chooses the folder)"
        )
    return candidate


def _safe(name: str) -> str:
    # A folder name on every file system: no separators, colons or spaces.
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "run"


__all__ = [
    "OUTPUTS_ROOT",
    "ensure_writable_folder",
    "ensure_writable_output_dir",
    "give_umask_mode",
    "is_same_folder",
    "run_name",
    "run_output_dir",
]
