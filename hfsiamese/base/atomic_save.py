"""Saves that appear on disk only once complete: checkpoints and the final model.

The transformers Trainer (5.x) writes a checkpoint straight into `checkpoint-N` (weights, then
optimizer, scheduler, RNG states, trainer state), and `save_model` straight into the output folder.
A crash in between leaves a folder that `resume_from_checkpoint=True` picks as the newest one. Here a
save is written under a temporary name, flushed to disk, then renamed: a rename within one file
system is atomic, so a `checkpoint-N` folder is either absent or complete.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, rotate_checkpoints
from transformers.utils import CONFIG_NAME, logging

from hfsiamese.base.checkpoints import STAGING_PREFIX, TRAINER_STATE_NAME
from hfsiamese.models.siamese.adapters import ADAPTER_CONFIG_FILE, ADAPTER_FOLDER
from hfsiamese.utils.run_lock import pid_alive

logger = logging.get_logger(__name__)

_WEIGHT_PATTERN = re.compile(r"^(pytorch_)?model(-\d+-of-\d+)?\.(safetensors|bin)(\.index\.json)?$")


class CheckpointStaging:
    """
    Stages the Trainer's own checkpoint writing: while `save` runs, the trainer points the Trainer's
    output folder at `folder` (a `tmp-checkpoint-N/` folder) and holds back the Hub push it asks
    for; then the finished checkpoint is renamed to `checkpoint-N` and pushed from there.
    """

    def __init__(self) -> None:
        self.folder: str | None = None
        self._deferred_push: str | None = None

    def defer_push(self, checkpoint_folder: str) -> bool:
        """Hold back a push asked for while the checkpoint is still staged; False when nothing is staged."""
        if self.folder is None:
            return False
        self._deferred_push = checkpoint_folder
        return True

    def save(self, trainer: Any, run_dir: str, write: Callable[[], None], push: Callable[[str], None]) -> None:
        """
        Run `write` (the Trainer's `_save_checkpoint`) into `tmp-checkpoint-N/` of `run_dir`, then
        rename the checkpoint into place, rotate the real checkpoints and push it if asked.
        """
        args, state = trainer.args, trainer.state
        name = f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        staging = os.path.join(run_dir, f"{STAGING_PREFIX}{name}")
        if args.should_save:
            shutil.rmtree(staging, ignore_errors=True)  # left by a crash while saving this step before
        trainer.accelerator.wait_for_everyone()
        self.folder = staging
        try:
            write()
        finally:
            self.folder = None
        trainer.accelerator.wait_for_everyone()  # every process has written its part (e.g. its RNG state)
        written, final = os.path.join(staging, name), os.path.join(run_dir, name)
        if state.best_model_checkpoint == written:
            state.best_model_checkpoint = final
            if args.should_save:
                state.save_to_json(os.path.join(written, TRAINER_STATE_NAME))
        if args.should_save:
            publish_folder(written, final)
            os.rmdir(staging)
            # The Trainer rotated checkpoints in the staging folder (a no-op): rotate the real ones.
            rotate_checkpoints(run_dir, args.save_total_limit, state.best_model_checkpoint, use_mtime=True)
            remove_staging_leftovers(run_dir, rf"{PREFIX_CHECKPOINT_DIR}-\d+")  # of other steps' crashed saves
        trainer.accelerator.wait_for_everyone()
        if self._deferred_push is not None:
            self._deferred_push = None
            push(final)


def save_model_atomically(output_dir: str | os.PathLike, write: Callable[[str], None]) -> None:
    """
    Run `write(folder)` (a model save for `from_pretrained`) into a temporary folder, flush it, then
    rename it to `output_dir` when that is new or empty. Into a non-empty folder (a run's output with
    its checkpoints) the files are moved with config.json last, after removing the previous
    config.json, so a crash mid-save leaves a folder `from_pretrained` refuses rather than a mix of
    two saves. Files other than the model's stay untouched.
    """
    target = Path(output_dir).resolve()
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"cannot save the model to {target}: it exists and is not a folder")
    fresh = not target.exists() or not any(target.iterdir())
    parent = target.parent if fresh else target
    parent.mkdir(parents=True, exist_ok=True)
    # Not tempfile.mkdtemp: its folders are private (0o700), and this one becomes the user's output.
    # The pid in the name tells a crashed save's leftovers from a live save of another process.
    staging = parent / f"{STAGING_PREFIX}{target.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    write(str(staging))
    if fresh and _make_room(target):
        publish_folder(staging, target)
    else:
        fsync_tree(staging)
        move_model_files(staging, target)
    remove_staging_leftovers(parent, re.escape(target.name))  # of earlier saves that crashed


def _make_room(target: Path) -> bool:
    """Remove the empty `target` for the rename; False when something wrote into it meanwhile (then merge)."""
    try:
        target.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        return False  # not empty any more: never swap out a folder with files in it
    return True


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

    `target` loses its previous config.json (weight files the new save does not have, a LoRA save's `adapter/`) first, so
    until the new config.json lands the folder holds no config and `from_pretrained` refuses it
    rather than loading new weights with an old config, or the reverse. Other files stay.
    """
    staging, target = Path(staging), Path(target)
    new_files = {path.name for path in staging.iterdir()}
    (target / CONFIG_NAME).unlink(missing_ok=True)
    for path in target.iterdir():
        if path.is_file() and _WEIGHT_PATTERN.match(path.name) and path.name not in new_files:
            path.unlink()  # an earlier save's weights, e.g. shards the new save no longer has
    if (target / ADAPTER_FOLDER / ADAPTER_CONFIG_FILE).is_file():  # an earlier LoRA save's adapters: a folder
        shutil.rmtree(
            target / ADAPTER_FOLDER
        )  # os.replace cannot replace a non-empty one, and a new save may have none
    for path in sorted(staging.iterdir(), key=lambda p: p.name == CONFIG_NAME):
        os.replace(path, target / path.name)
    staging.rmdir()
    _fsync_folder(target)


def remove_staging_leftovers(folder: str | os.PathLike, name_pattern: str) -> None:
    """Delete the staging folders (`tmp-<name>`, `tmp-<name>[-<pid>]-<8 hex>`, `tmp-<name>-replaced`) that
    crashed saves left in `folder`, for names matching the regular expression `name_pattern`. A folder
    whose pid is a live process other than this one is another save in progress, and stays."""
    pattern = re.compile(rf"^{re.escape(STAGING_PREFIX)}(?:{name_pattern})(?:-(\d+))?(-[0-9a-f]{{8}}|-replaced)?$")
    root = Path(folder)
    if not root.is_dir():
        return
    for path in root.iterdir():
        match = pattern.match(path.name) if path.is_dir() else None
        if match and match.group(1) and int(match.group(1)) != os.getpid() and pid_alive(int(match.group(1))):
            continue
        if match:
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
    with contextlib.suppress(OSError):  # some file systems refuse fsync on folders; the rename itself is still atomic
        _fsync(str(path))


__all__ = [
    "CheckpointStaging",
    "fsync_tree",
    "move_model_files",
    "publish_folder",
    "remove_staging_leftovers",
    "save_model_atomically",
]
