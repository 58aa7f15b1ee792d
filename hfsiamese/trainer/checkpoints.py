"""Checkpoint folders that only ever appear complete, and finding the one to resume from.

The transformers Trainer (5.x) writes a checkpoint straight into `checkpoint-N` (weights, then
optimizer, scheduler, RNG states, trainer state), and `save_model` straight into the output folder.
A crash in between leaves a folder that `resume_from_checkpoint=True` picks as the newest one. Here a
save is written under a temporary name, flushed to disk, then renamed: a rename within one file
system is atomic, so a `checkpoint-N` folder is either absent or complete.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import (
    CONFIG_NAME,
    SAFE_WEIGHTS_INDEX_NAME,
    SAFE_WEIGHTS_NAME,
    WEIGHTS_INDEX_NAME,
    WEIGHTS_NAME,
    logging,
)

logger = logging.get_logger(__name__)

TRAINER_STATE_NAME = "trainer_state.json"
# Staging folders start with this: neither transformers' `checkpoint-*` glob nor its
# `^checkpoint-\d+$` pattern matches them, so nothing ever resumes from a half-written one.
STAGING_PREFIX = "tmp-"
_CHECKPOINT_PATTERN = re.compile(rf"^{PREFIX_CHECKPOINT_DIR}-(\d+)$")
_WEIGHT_FILES = (SAFE_WEIGHTS_NAME, SAFE_WEIGHTS_INDEX_NAME, WEIGHTS_NAME, WEIGHTS_INDEX_NAME)
_WEIGHT_PATTERN = re.compile(r"^(pytorch_)?model(-\d+-of-\d+)?\.(safetensors|bin)(\.index\.json)?$")

__all__ = ["STAGING_PREFIX", "last_checkpoint", "resolve_resume_checkpoint"]


def is_complete_checkpoint(folder: str | os.PathLike) -> bool:
    """A checkpoint folder with weights and a readable trainer state (what resuming needs first)."""
    folder = Path(folder)
    state = folder / TRAINER_STATE_NAME
    if not state.is_file() or not any((folder / name).is_file() for name in _WEIGHT_FILES):
        return False
    try:
        json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return True


def last_checkpoint(output_dir: str | os.PathLike) -> str | None:
    """
    The newest complete `checkpoint-N` folder of `output_dir`, or None.

    Incomplete ones (left by a Trainer that saves in place and crashed mid-save) are passed over
    with a warning; `SiameseTrainer` itself only ever renames finished folders into place.
    """
    root = Path(output_dir)
    if not root.is_dir():
        return None
    steps = sorted(
        (int(match.group(1)), path)
        for path in root.iterdir()
        if path.is_dir() and (match := _CHECKPOINT_PATTERN.match(path.name))
    )
    for _, path in reversed(steps):
        if is_complete_checkpoint(path):
            return str(path)
        logger.warning(f"{path} is incomplete (no weights or no readable {TRAINER_STATE_NAME}): not resuming from it")
    return None


def resolve_resume_checkpoint(value: str | bool | None, output_dir: str | os.PathLike) -> str | None:
    """
    The checkpoint folder that `resume_from_checkpoint=value` means: None/False for none; "auto"
    (or True, as in transformers) for the newest complete checkpoint in `output_dir`; else a path.
    Raises FileNotFoundError, naming what was looked for, when there is nothing to resume from.
    """
    if value is None or value is False:
        return None
    if value is True or (isinstance(value, str) and value.lower() == "auto"):
        found = last_checkpoint(output_dir)
        if found is None:
            raise FileNotFoundError(
                f"resume_from_checkpoint=auto: no complete {PREFIX_CHECKPOINT_DIR}-N folder in {output_dir} "
                "(checkpoints are written with save_strategy 'steps' or 'epoch'); start the run without "
                "--resume_from_checkpoint, or pass a checkpoint folder"
            )
        return found
    path = Path(value)
    if not path.is_dir():
        raise FileNotFoundError(f"resume_from_checkpoint: {path} is not a folder (pass a {PREFIX_CHECKPOINT_DIR}-N folder or 'auto')")
    if not is_complete_checkpoint(path):
        raise FileNotFoundError(
            f"resume_from_checkpoint: {path} is not a complete checkpoint (it needs model weights and {TRAINER_STATE_NAME})"
        )
    return str(path)


def fsync_tree(folder: str | os.PathLike) -> None:
    """Flush every file of `folder` (and the folder entries) to disk, so a rename publishes written data."""
    for root, _, files in os.walk(folder):
        for name in files:
            _fsync(os.path.join(root, name))
        _fsync_folder(root)


def publish_folder(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """
    Rename the finished folder `source` to `target` (same file system). An existing `target` (the
    same step saved again, after resuming from an earlier checkpoint) is swapped out, never merged
    into: at every instant `target` is absent, the old complete folder, or the new complete one.
    """
    source, target = Path(source), Path(target)
    fsync_tree(source)
    if target.exists():
        replaced = target.with_name(f"{STAGING_PREFIX}{target.name}-replaced")
        shutil.rmtree(replaced, ignore_errors=True)
        os.rename(target, replaced)
        os.rename(source, target)
        shutil.rmtree(replaced, ignore_errors=True)
    else:
        os.rename(source, target)
    _fsync_folder(target.parent)


def move_model_files(staging: str | os.PathLike, target: str | os.PathLike) -> None:
    """
    Move the files of a finished model save into the non-empty folder `target`, config.json last.

    `target` loses its previous config.json (and weight files the new save does not have) first, so
    until the new config.json lands the folder holds no config and `from_pretrained` refuses it
    rather than loading new weights with an old config, or the reverse. Other files stay.
    """
    staging, target = Path(staging), Path(target)
    new_files = {path.name for path in staging.iterdir()}
    (target / CONFIG_NAME).unlink(missing_ok=True)
    for path in target.iterdir():
        if path.is_file() and _WEIGHT_PATTERN.match(path.name) and path.name not in new_files:
            path.unlink()  # an earlier save's weights, e.g. shards the new save no longer has
    for path in sorted(staging.iterdir(), key=lambda p: p.name == CONFIG_NAME):
        os.replace(path, target / path.name)
    staging.rmdir()
    _fsync_folder(target)


def remove_staging_leftovers(folder: str | os.PathLike, name_pattern: str) -> None:
    """Delete the staging folders (`tmp-<name>`, `tmp-<name>-<8 hex>`, `tmp-<name>-replaced`) that
    crashed saves left in `folder`, for names matching the regular expression `name_pattern`."""
    pattern = re.compile(rf"^{re.escape(STAGING_PREFIX)}(?:{name_pattern})(-[0-9a-f]{{8}}|-replaced)?$")
    root = Path(folder)
    if not root.is_dir():
        return
    for path in root.iterdir():
        if path.is_dir() and pattern.match(path.name):
            logger.info(f"removing {path}, left by a save that did not finish")
            shutil.rmtree(path, ignore_errors=True)


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(path: str | os.PathLike) -> None:
    # Folder entries (a rename, a new file) are made durable by fsync on the folder, where supported.
    if os.name == "nt":
        return
    try:
        _fsync(str(path))
    except OSError:
        pass  # some file systems refuse fsync on folders; the rename itself is still atomic
