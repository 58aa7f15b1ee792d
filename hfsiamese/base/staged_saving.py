"""
Saving a pair model's training run so that a crash never leaves a half-written folder that loads.

Checkpoints are written under `tmp-checkpoint-N/` and renamed in one step (`atomic_save.CheckpointStaging`);
the final model is saved atomically (`save_model_atomically`); a push of a checkpoint carries the modeling
code beside its weights; every save holds the fingerprint of the training questions. `PairTrainer`, the base of
both families' trainers, mixes it in before `transformers.Trainer`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.numpy
from torch import nn

from hfsiamese.base.atomic_save import CheckpointStaging, save_model_atomically
from hfsiamese.base.sharded_training import saved_as_its_own_class
from hfsiamese.data.question_fingerprints import FINGERPRINT_FILE, fingerprint_tensors
from hfsiamese.utils.output_dirs import give_umask_mode


class StagedSavingMixin:
    """
    The Trainer's saving, made atomic (mixed in before `transformers.Trainer`). Needs `self.checkpoint_staging`
    (a `CheckpointStaging`) and `self.training_questions` (question hashes, or None), set in `__init__`.
    """

    checkpoint_staging: CheckpointStaging
    training_questions: np.ndarray | None

    def _get_output_dir(self, trial: Any) -> str:
        # While a checkpoint is staged, the Trainer's own saving code writes into the staging folder.
        return self.checkpoint_staging.folder or super()._get_output_dir(trial)

    def _save_checkpoint(self, model: nn.Module, trial: Any) -> None:
        """The Trainer's checkpoint, written under `tmp-checkpoint-N/` and renamed to `checkpoint-N` in one step."""
        write = super()._save_checkpoint
        self.checkpoint_staging.save(
            self, super()._get_output_dir(trial), lambda: write(model, trial), self._push_with_modeling_code
        )

    def _push_from_checkpoint(self, checkpoint_folder: str) -> None:
        # Called by the Trainer while the checkpoint is still in its staging folder: push it once renamed.
        if not self.checkpoint_staging.defer_push(checkpoint_folder):
            self._push_with_modeling_code(checkpoint_folder)

    def _push_with_modeling_code(self, checkpoint_folder: str) -> None:
        """
        The Trainer's per-checkpoint push uploads `output_dir` after copying in only the weights and
        config.json from the checkpoint: the modeling code saved beside them (`*.py`, which `auto_map`
        points at) would be missing from the Hub until the final push. Copy it too.
        """
        if self.is_world_process_zero():
            for code_file in Path(checkpoint_folder).glob("*.py"):
                shutil.copy(code_file, Path(self.args.output_dir) / code_file.name)
        super()._push_from_checkpoint(checkpoint_folder)

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        """The Trainer's save (weights, config, tokenizer), then the training questions' fingerprint beside them."""
        with saved_as_its_own_class(
            self.model
        ):  # under FSDP2, else the checkpoint names torch's FSDP class as its code
            super()._save(output_dir, state_dict)
        if self.training_questions is not None and self.args.should_save:
            path = Path(output_dir if output_dir is not None else self.args.output_dir) / FINGERPRINT_FILE
            safetensors.numpy.save_file(fingerprint_tensors(self.training_questions), str(path))
            give_umask_mode(path)

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        """
        Save the model, tokenizer and config for `from_pretrained`, atomically (`save_model_atomically`):
        a crash mid-save leaves either the previous save or a folder `from_pretrained` refuses.

        DeepSpeed and FSDP saves (all processes write) and checkpoints (staged as a whole by
        `_save_checkpoint`) go through the Trainer's own `save_model`.
        """
        staged_elsewhere = self.checkpoint_staging.folder is not None
        if staged_elsewhere or not self.args.should_save or self.is_deepspeed_enabled or self.is_fsdp_enabled:
            return super().save_model(output_dir, _internal_call)
        write = super().save_model
        save_model_atomically(
            output_dir if output_dir is not None else self.args.output_dir,
            lambda folder: write(folder, _internal_call=True),
        )
        if self.args.push_to_hub and not _internal_call:  # `push_to_hub` itself saves with _internal_call
            self.push_to_hub(commit_message="Model save", revision=self.args.hub_revision)


__all__ = ["StagedSavingMixin"]
