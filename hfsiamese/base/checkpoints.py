"""Checkpoint folders: their names, which ones are complete, and which one to resume from.

`SiameseTrainer` writes a checkpoint under a staging name and renames it into place (`atomic_save`),
so its own `checkpoint-N` folders are always complete; folders left by a Trainer that saves in
place and crashed are recognised here and passed over.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME, WEIGHTS_INDEX_NAME, WEIGHTS_NAME, logging

logger = logging.get_logger(__name__)

TRAINER_STATE_NAME = "trainer_state.json"
# Staging folders start with this: neither transformers' `checkpoint-*` glob nor its
# `^checkpoint-\d+$` pattern matches them, so nothing ever resumes from a half-written one.
STAGING_PREFIX = "tmp-"
_CHECKPOINT_PATTERN = re.compile(rf"^{PREFIX_CHECKPOINT_DIR}-(\d+)$")
_WEIGHT_FILES = (SAFE_WEIGHTS_NAME, SAFE_WEIGHTS_INDEX_NAME, WEIGHTS_NAME, WEIGHTS_INDEX_NAME)

__all__ = [
    "STAGING_PREFIX",
    "TRAINER_STATE_NAME",
    "is_complete_checkpoint",
    "last_checkpoint",
    "resolve_resume_checkpoint",
]


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
        raise FileNotFoundError(
            f"resume_from_checkpoint: {path} is not a folder (pass a {PREFIX_CHECKPOINT_DIR}-N folder or 'auto')"
        )
    if not is_complete_checkpoint(path):
        raise FileNotFoundError(
            f"resume_from_checkpoint: {path} is not a complete checkpoint (it needs model weights and {TRAINER_STATE_NAME})"
        )
    return str(path)
