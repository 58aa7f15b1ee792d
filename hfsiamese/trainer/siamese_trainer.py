"""`SiameseTrainer`: the transformers Trainer with in-batch losses, group-aware batches and calibration."""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow.compute as pc
import torch
from torch import nn
from transformers import EvalPrediction, Trainer
from transformers.trainer_pt_utils import LengthGroupedSampler
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, rotate_checkpoints
from transformers.utils import logging

from ..data.arrow_columns import column_arrow, column_numpy
from ..data.collator import SiamesePairCollator
from ..data.sampler import NoDuplicateGroupSampler
from ..metrics import pair_classification_metrics
from ..model_card import build_model_card, metrics_from_log_history
from .checkpoints import (
    STAGING_PREFIX,
    TRAINER_STATE_NAME,
    fsync_tree,
    move_model_files,
    publish_folder,
    remove_staging_leftovers,
    resolve_resume_checkpoint,
)
from .gradient_cache import all_reduce_gradients, gradient_cache_step, side_inputs
from .siamese_config import SiameseTrainingArguments

logger = logging.get_logger(__name__)

REQUIRED_COLUMNS = ("input_ids_a", "attention_mask_a", "input_ids_b", "attention_mask_b")
BATCH_ONLY_KEYS = ("labels", "group_ids")


class NonFiniteLossError(RuntimeError):
    """The training loss was NaN or infinite (with `nan_policy="raise"`)."""


class _SkippedBatch(Exception):
    """Unwinds a training step whose loss is not finite, before any backward pass (`nan_policy="skip"`)."""

    def __init__(self, loss: torch.Tensor) -> None:
        super().__init__("non-finite loss")
        self.loss = loss


class SiameseTrainer(Trainer):
    """
    Trains a [`SiameseModel`] on duplicate pairs with an in-batch loss.

    Overrides only what the Siamese setting changes:
    - `compute_loss`: embeds both sides and applies the loss of `args.loss` to the whole batch;
    - the train sampler: batches never hold two pairs of one duplicate group (`group_id` column), so
      in-batch negatives are real negatives; with `train_sampling_strategy="group_by_length"` the
      batches also gather pairs of similar length, so little padding is computed;
    - evaluation: scores labelled pairs (duplicates and non-duplicates) by cosine similarity and
      reports accuracy/precision/recall/F1 at the calibrated threshold, average precision and
      ROC-AUC; the threshold is stored in `model.config.threshold`.
    """

    args: SiameseTrainingArguments

    def __init__(
        self,
        model: nn.Module | None = None,
        args: SiameseTrainingArguments | None = None,
        data_collator: Any | None = None,
        train_dataset: datasets.Dataset | None = None,
        eval_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None = None,
        processing_class: Any | None = None,
        loss: nn.Module | None = None,
        **kwargs: Any,
    ) -> None:
        if args is None:
            args = SiameseTrainingArguments(output_dir="outputs/siamese")
        if not isinstance(args, SiameseTrainingArguments):
            raise TypeError("SiameseTrainer needs SiameseTrainingArguments (it adds the loss and calibration options)")
        if data_collator is None:
            if processing_class is None:
                raise ValueError("pass processing_class=tokenizer (used to pad pairs) or a data_collator")
            data_collator = SiamesePairCollator(processing_class)
        for name, dataset in (("train_dataset", train_dataset), ("eval_dataset", eval_dataset)):
            _check_pair_columns(name, dataset)
        loss_fn = loss if loss is not None else args.build_loss()
        _check_training_labels(train_dataset, loss_fn, args.loss)
        kwargs.setdefault("compute_metrics", self._compute_pair_metrics)
        super().__init__(
            model=model,
            args=args,
            data_collator=data_collator,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=processing_class,
            **kwargs,
        )
        self.loss_fn = loss_fn
        self._loss_stats: dict[str, list[float]] = {}
        # Our losses are per-batch means: the Trainer divides them by the accumulation steps.
        self.loss_is_scaled_for_ga = False
        self._calibrating = False
        self._skipped_batches = 0
        self._group_sampler: NoDuplicateGroupSampler | None = None
        self._checkpoint_staging_dir: str | None = None
        self._deferred_push: str | None = None

    # ------------------------------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------------------------------
    def _get_train_sampler(self, train_dataset: datasets.Dataset | None = None) -> torch.utils.data.Sampler | None:
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        if not self.args.no_duplicate_batches:
            return super()._get_train_sampler(train_dataset)
        if "group_id" in dataset.column_names:
            group_ids = column_numpy(dataset, "group_id")
        else:
            logger.warning(
                "train_dataset has no `group_id` column: batches may hold duplicates of one another, which the "
                "loss then counts as negatives. Add groups with hfsiamese.data.assign_duplicate_groups."
            )
            group_ids = np.arange(len(dataset))  # every pair its own group: plain shuffled batches
        lengths = None
        if self.args.train_sampling_strategy == "group_by_length":
            lengths = _pair_lengths(dataset, self.args.length_column_name)
        self._group_sampler = NoDuplicateGroupSampler(
            group_ids, batch_size=self._train_batch_size, seed=self.args.seed, lengths=lengths
        )
        return self._group_sampler

    def _run_epoch(self, model: nn.Module, epoch: int, *args: Any, **kwargs: Any) -> Any:
        """
        Set our sampler's epoch before the Trainer (5.x) iterates the epoch. Its own `set_epoch` calls
        do not reach the sampler in one case: resuming mid-epoch under several processes, where
        accelerate's `skip_first_batches` wraps the sharded batch sampler one level deeper than its
        `set_epoch` looks. The resumed epoch would then replay epoch 0's order.
        """
        if self._group_sampler is not None:
            self._group_sampler.set_epoch(epoch)
        return super()._run_epoch(model, epoch, *args, **kwargs)

    def _get_eval_sampler(self, eval_dataset: datasets.Dataset) -> torch.utils.data.Sampler | None:
        """With length grouping, group evaluation pairs by their two sides' lengths too (the base
        class would look for a single `input_ids` column)."""
        if self.args.train_sampling_strategy == "group_by_length" and isinstance(eval_dataset, datasets.Dataset):
            return LengthGroupedSampler(
                self.args.eval_batch_size,
                lengths=_pair_lengths(eval_dataset, self.args.length_column_name).tolist(),
                generator=torch.Generator().manual_seed(self.args.seed),
            )
        return super()._get_eval_sampler(eval_dataset)

    def compute_loss(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, Any]:
        outputs = model(**{k: v for k, v in inputs.items() if k not in BATCH_ONLY_KEYS})
        loss = self._loss_from_embeddings(
            inputs, outputs.embeddings_a, outputs.embeddings_b, outputs.embeddings_n, outputs.logits
        )
        return (loss, outputs) if return_outputs else loss

    def _loss_from_embeddings(
        self,
        inputs: dict[str, torch.Tensor],
        embeddings_a: torch.Tensor,
        embeddings_b: torch.Tensor,
        embeddings_n: torch.Tensor | None,
        logits: torch.Tensor | None,
    ) -> torch.Tensor:
        """Apply the loss, passing each input only to losses that take it."""
        loss_inputs: dict[str, Any] = {"group_ids": inputs.get("group_ids")}
        if getattr(self.loss_fn, "pair_type", "duplicates") == "labelled":
            loss_inputs["labels"] = inputs.get("labels")
        if getattr(self.loss_fn, "uses_negatives", False):
            loss_inputs["negatives"] = embeddings_n
        if getattr(self.loss_fn, "uses_logits", False):
            loss_inputs["logits"] = logits
        loss = self.loss_fn(embeddings_a, embeddings_b, **loss_inputs)
        if self.model.training:
            self._check_loss_is_finite(loss, inputs)
            for key, value in getattr(self.loss_fn, "last_stats", {}).items():
                self._loss_stats.setdefault(key, []).append(float(value))
        return loss

    def train(
        self,
        resume_from_checkpoint: str | bool | None = None,
        trial: Any = None,
        ignore_keys_for_eval: list[str] | None = None,
        **kwargs: Any,
    ):
        """
        The Trainer's `train`; `resume_from_checkpoint` also takes "auto" (like True: the newest
        checkpoint in `output_dir`), passes over incomplete checkpoint folders, and fails with a
        clear error when there is none.
        """
        resume_from_checkpoint = resolve_resume_checkpoint(resume_from_checkpoint, self.args.output_dir)
        return super().train(resume_from_checkpoint, trial, ignore_keys_for_eval, **kwargs)

    def training_step(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor],
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor:
        """
        The Trainer's step, or a GradCache step when `gradient_cache_mini_batch_size` is set. A batch
        whose loss is NaN/inf stops training or, with `nan_policy="skip"`, is dropped before any
        backward pass (see `_check_loss_is_finite`).
        """
        try:
            if not self.args.gradient_cache_mini_batch_size:
                return super().training_step(model, inputs, num_items_in_batch)
            return self._gradient_cache_step(model, inputs)
        except _SkippedBatch as skipped:
            if self.accelerator.num_processes > 1 and self.accelerator.sync_gradients:
                # The skipped batch was this step's last, whose backward would have averaged the
                # gradients of the earlier accumulated batches over processes: average them here.
                all_reduce_gradients(self.accelerator.unwrap_model(model).parameters())
            # Returned as is: the Trainer's `logging_nan_inf_filter` keeps it out of the logged loss.
            return skipped.loss

    def _gradient_cache_step(self, model: nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """One GradCache forward/backward (`gradient_cache_mini_batch_size`)."""
        mini_batch = self.args.gradient_cache_mini_batch_size
        model.train()
        inputs = self._prepare_inputs(inputs)
        # The passes run on the unwrapped module, outside DDP's forward, so DDP does not reduce;
        # the gradients are averaged over processes below, at the step that syncs.
        unwrapped = self.accelerator.unwrap_model(model)
        sides = {side: features for side in ("a", "b", "n") if (features := side_inputs(inputs, side)) is not None}

        def loss_of(embeddings: dict[str, torch.Tensor]) -> torch.Tensor:
            logits = unwrapped.classifier(embeddings["a"], embeddings["b"]) if unwrapped.classifier is not None else None
            return self._loss_from_embeddings(inputs, embeddings["a"], embeddings["b"], embeddings.get("n"), logits)

        with self.compute_loss_context_manager():
            loss = gradient_cache_step(
                unwrapped.embed,
                sides,
                loss_of,
                mini_batch_size=mini_batch,
                loss_scale=1.0 / self.current_gradient_accumulation_steps,
            )
        if self.accelerator.sync_gradients:
            all_reduce_gradients(unwrapped.parameters())
        return loss / self.current_gradient_accumulation_steps

    def _check_loss_is_finite(self, loss: torch.Tensor, inputs: dict[str, torch.Tensor]) -> None:
        """
        Never train on silently after a NaN/inf loss (the Trainer would: its `logging_nan_inf_filter`
        only hides it from the logs). Runs before the backward pass, so that a skipped batch leaves
        no trace in the gradients. All processes agree on the verdict (one small all-reduce), so that
        none stops or skips alone while the others wait for it in a collective.
        """
        local_bad = ~torch.isfinite(loss.detach()).all()
        bad = local_bad.to(torch.float32)
        if self.accelerator.num_processes > 1:
            bad = self.accelerator.reduce(bad.reshape(1), reduction="sum")
        if not bool(bad.sum() > 0):
            return
        step = self.state.global_step + 1  # the step being computed (global_step counts finished ones)
        if bool(local_bad):
            value = loss.detach().float().reshape(-1)[0].item()
            what = f"the training loss is {value} at global step {step} (epoch {self.state.epoch or 0:.2f}) {self._describe_batch(inputs)}"
        else:
            what = f"the training loss is not finite on another process at global step {step} (epoch {self.state.epoch or 0:.2f})"
        if self.args.nan_policy == "skip":
            self._skipped_batches += 1
            logger.warning(f"skipping the batch: {what} ({self._skipped_batches} batches skipped so far)")
            raise _SkippedBatch(loss.detach())
        raise NonFiniteLossError(
            f"{what}. Lower the learning rate, check these pairs, or pass --nan_policy skip to drop such batches."
        )

    def _describe_batch(self, inputs: dict[str, torch.Tensor], rows: int = 2) -> str:
        """The batch in words: its size, first duplicate groups and first pairs of texts."""
        size = inputs["input_ids_a"].shape[0]
        parts = []
        if inputs.get("group_ids") is not None:
            parts.append(f"group ids {inputs['group_ids'][:rows].tolist()}")
        if hasattr(self.processing_class, "batch_decode"):
            sides = [self.processing_class.batch_decode(inputs[f"input_ids_{s}"][:rows], skip_special_tokens=True) for s in "ab"]
            parts.append("pairs " + "; ".join(f"{a!r} / {b!r}" for a, b in zip(*sides)))
        return f"in a batch of {size} pairs (first {rows}: {', '.join(parts) or 'no detail available'})"

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Add the loss's own statistics (e.g. how many negatives were hard), averaged since the last log,
        and with `nan_policy="skip"` the number of batches skipped since training (re)started."""
        if self._loss_stats and "loss" in logs:
            for key, values in self._loss_stats.items():
                logs[f"loss_{key}"] = round(sum(values) / len(values), 4)
            self._loss_stats = {}
        if self.args.nan_policy == "skip":
            if "loss" in logs:
                logs["skipped_batches"] = self._skipped_batches
            elif "train_loss" in logs:  # the end of training: also lands in the returned metrics
                logs["train_skipped_batches"] = self._skipped_batches
        super().log(logs, start_time)

    # ------------------------------------------------------------------------------------------
    # Saving: checkpoints and the final model appear on disk only once complete
    # ------------------------------------------------------------------------------------------
    def _get_output_dir(self, trial: Any) -> str:
        # While `_save_checkpoint` runs, the Trainer's own saving code writes into the staging folder.
        if self._checkpoint_staging_dir is not None:
            return self._checkpoint_staging_dir
        return super()._get_output_dir(trial)

    def _save_checkpoint(self, model: nn.Module, trial: Any) -> None:
        """
        The Trainer's checkpoint (weights, optimizer, scheduler, RNG states, trainer state), written
        under `tmp-checkpoint-N/` and then renamed to `checkpoint-N` in one step, so that a crash
        mid-save never leaves a `checkpoint-N` that resuming would take for complete.
        """
        run_dir = super()._get_output_dir(trial)
        name = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
        staging = os.path.join(run_dir, f"{STAGING_PREFIX}{name}")
        if self.args.should_save:
            shutil.rmtree(staging, ignore_errors=True)  # left by a crash while saving this step before
        self.accelerator.wait_for_everyone()
        self._checkpoint_staging_dir = staging
        try:
            super()._save_checkpoint(model, trial)
        finally:
            self._checkpoint_staging_dir = None
        self.accelerator.wait_for_everyone()  # every process has written its part (e.g. its RNG state)
        written, final = os.path.join(staging, name), os.path.join(run_dir, name)
        if self.state.best_model_checkpoint == written:
            self.state.best_model_checkpoint = final
            if self.args.should_save:
                self.state.save_to_json(os.path.join(written, TRAINER_STATE_NAME))
        if self.args.should_save:
            publish_folder(written, final)
            os.rmdir(staging)
            # The Trainer rotated checkpoints in the staging folder (a no-op): rotate the real ones.
            rotate_checkpoints(run_dir, self.args.save_total_limit, self.state.best_model_checkpoint, use_mtime=True)
            remove_staging_leftovers(run_dir, rf"{PREFIX_CHECKPOINT_DIR}-\d+")  # of other steps' crashed saves
        self.accelerator.wait_for_everyone()
        if self._deferred_push is not None:
            self._deferred_push = None
            super()._push_from_checkpoint(final)

    def _push_from_checkpoint(self, checkpoint_folder: str) -> None:
        # Called by the Trainer while the checkpoint is still in its staging folder: push it once renamed.
        if self._checkpoint_staging_dir is not None:
            self._deferred_push = checkpoint_folder
            return
        super()._push_from_checkpoint(checkpoint_folder)

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        """
        Save the model, tokenizer and config for `from_pretrained`, atomically: written to a temporary
        folder, flushed, then renamed to `output_dir` when that is new or empty. Into a non-empty
        folder (a run's output with its checkpoints) the files are moved with config.json last, after
        removing the previous config.json, so a crash mid-save leaves a folder `from_pretrained`
        refuses rather than a mix of two saves. Files other than the model's stay untouched.

        DeepSpeed and FSDP saves (all processes write) and checkpoints (staged as a whole by
        `_save_checkpoint`) go through the Trainer's own `save_model`.
        """
        staged_elsewhere = self._checkpoint_staging_dir is not None
        if staged_elsewhere or not self.args.should_save or self.is_deepspeed_enabled or self.is_fsdp_enabled:
            return super().save_model(output_dir, _internal_call)
        target = Path(output_dir if output_dir is not None else self.args.output_dir).resolve()
        if target.exists() and not target.is_dir():
            raise FileExistsError(f"cannot save the model to {target}: it exists and is not a folder")
        fresh = not target.exists() or not any(target.iterdir())
        parent = target.parent if fresh else target
        parent.mkdir(parents=True, exist_ok=True)
        # Not tempfile.mkdtemp: its folders are private (0o700), and this one becomes the user's output.
        staging = parent / f"{STAGING_PREFIX}{target.name}-{uuid.uuid4().hex[:8]}"
        staging.mkdir()
        super().save_model(str(staging), _internal_call=True)
        if fresh:
            if target.exists():
                target.rmdir()  # empty: make room for the rename
            publish_folder(staging, target)
        else:
            fsync_tree(staging)
            move_model_files(staging, target)
        remove_staging_leftovers(parent, re.escape(target.name))  # of earlier saves that crashed
        if self.args.push_to_hub and not _internal_call:  # `push_to_hub` itself saves with _internal_call
            self.push_to_hub(commit_message="Model save", revision=self.args.hub_revision)

    # ------------------------------------------------------------------------------------------
    # Evaluation
    # ------------------------------------------------------------------------------------------
    def prediction_step(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor],
        prediction_loss_only: bool,
        ignore_keys: list[str] | None = None,
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        """Score the labelled pairs; the in-batch training loss is undefined on non-duplicates."""
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            outputs = model(**{k: v for k, v in inputs.items() if k not in BATCH_ONLY_KEYS})
        # A classification head decides by its probability of "duplicate"; otherwise the cosine.
        scores = outputs.logits.float().softmax(dim=-1)[:, 1] if outputs.logits is not None else outputs.similarity
        return None, scores.detach().float(), inputs.get("labels")

    def _compute_pair_metrics(self, eval_pred: EvalPrediction) -> dict[str, float]:
        from ..metrics.thresholds import UnreachablePrecisionError, threshold_above

        if eval_pred.label_ids is None:
            raise ValueError("evaluation pairs need a `labels` (or `label`) column of 0/1")
        scores = np.asarray(eval_pred.predictions, dtype=np.float64).reshape(-1)
        labels = np.asarray(eval_pred.label_ids).reshape(-1)
        options = dict(calibrate_for=self.args.calibrate_for, target_precision=self.args.target_precision)
        threshold = None if self._calibrating else self._stored_threshold()
        try:
            return pair_classification_metrics(scores, labels, threshold=threshold, **options)
        except UnreachablePrecisionError as err:
            # A still-weak model at an early evaluation must not end the run. Keep the precision
            # promise instead: call no evaluated pair a duplicate (recall 0 shows it), and say so.
            logger.warning(f"{err}: storing a threshold above every score until an evaluation reaches the target")
            return pair_classification_metrics(scores, labels, threshold=threshold_above(scores), **options)

    def _stored_threshold(self) -> float:
        threshold = self.accelerator.unwrap_model(self.model).config.threshold
        if threshold is None:
            raise ValueError("calibrate_threshold=False needs a model whose config.threshold is set")
        return threshold

    def evaluate(
        self,
        eval_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None = None,
        ignore_keys: list[str] | None = None,
        metric_key_prefix: str = "eval",
    ) -> dict[str, float]:
        """
        Score labelled pairs. On the validation set (`metric_key_prefix="eval"`, the Trainer's own
        evaluations included) the threshold is calibrated and stored in `config.threshold` when
        `calibrate_threshold`; any other prefix (e.g. `"test"`) is scored at the stored threshold,
        so a test set never tunes the threshold it is judged by.
        """
        self._calibrating = self.args.calibrate_threshold and metric_key_prefix == "eval"
        try:
            metrics = super().evaluate(eval_dataset, ignore_keys=ignore_keys, metric_key_prefix=metric_key_prefix)
        finally:
            self._calibrating = False
        threshold = metrics.get(f"{metric_key_prefix}_threshold")
        if self.args.calibrate_threshold and metric_key_prefix == "eval" and threshold is not None:
            self.accelerator.unwrap_model(self.model).config.threshold = float(threshold)
        return metrics

    # ------------------------------------------------------------------------------------------
    # Sharing
    # ------------------------------------------------------------------------------------------
    def create_model_card(
        self,
        language: str | None = None,
        license: str | None = None,
        tags: str | list[str] | None = None,
        model_name: str | None = None,
        finetuned_from: str | None = None,
        tasks: str | list[str] | None = None,
        dataset_tags: str | list[str] | None = None,
        dataset: str | list[str] | None = None,
        dataset_args: str | list[str] | None = None,
        arguments: dict[str, Any] | None = None,
        metrics: dict[str, float] | None = None,
        sentence_transformers_path: str | None = None,
    ) -> None:
        """
        Write the Siamese model card (`hfsiamese.model_card`) to `<output_dir>/README.md`. `push_to_hub` calls
        this before uploading the folder, so the Hub gets this card instead of the Trainer's generic one.

        The Trainer's arguments keep their meaning: `finetuned_from` is the base model's Hub id, `dataset_tags`
        the training data's Hub id (`dataset_args` its configuration) and `dataset` a readable name; `tasks` is
        ignored (the card's task is always duplicate detection). `arguments` are the run's other arguments (e.g.
        the recipe's model and data arguments), `metrics` its final metrics (default: the latest logged ones).
        """
        if not self.is_world_process_zero():
            return
        model = self.accelerator.unwrap_model(self.model)
        repo_id = getattr(self, "hub_model_id", None) or self.args.hub_model_id or self.args.output_dir
        if sentence_transformers_path and Path(sentence_transformers_path).resolve() == Path(self.args.output_dir).resolve():
            sentence_transformers_path = repo_id  # exported into this very folder: it loads from the same place
        card = build_model_card(
            model,
            model_name=model_name or Path(self.args.output_dir).name,
            metrics=metrics if metrics is not None else metrics_from_log_history(self.state.log_history),
            training_args=self.args,
            arguments=arguments,
            tokenizer=self.processing_class,
            repo_id=repo_id,
            dataset_name=", ".join(dataset) if isinstance(dataset, list) else dataset,
            dataset_id=_first(dataset_tags),
            dataset_config=_first(dataset_args),
            train_rows=len(self.train_dataset) if isinstance(self.train_dataset, datasets.Dataset) else None,
            eval_pairs=len(self.eval_dataset) if isinstance(self.eval_dataset, datasets.Dataset) else None,
            global_step=self.state.global_step or None,
            base_model=finetuned_from,
            language=language,
            license=license,
            tags=[tags] if isinstance(tags, str) else tags,
            sentence_transformers_path=sentence_transformers_path,
        )
        os.makedirs(self.args.output_dir, exist_ok=True)
        card.save(os.path.join(self.args.output_dir, "README.md"))


def _first(value: str | list[str] | None) -> str | None:
    return value[0] if isinstance(value, list) and value else value or None


def _pair_lengths(dataset: datasets.Dataset, length_column: str) -> np.ndarray:
    """Tokens per pair (both sides), from a precomputed column or the token-id lists' lengths."""
    if length_column in dataset.column_names:
        return column_numpy(dataset, length_column)
    return sum(pc.list_value_length(column_arrow(dataset, f"input_ids_{side}")).to_numpy() for side in ("a", "b"))


def _check_training_labels(train_dataset: datasets.Dataset | None, loss_fn: nn.Module, loss_name: str) -> None:
    """Duplicate-pair losses must not see non-duplicates (they would become positives); labelled-pair losses need labels."""
    if train_dataset is None:
        return
    pair_type = getattr(loss_fn, "pair_type", "duplicates")
    if "labels" not in train_dataset.column_names:
        if pair_type == "labelled":
            raise ValueError(f"{loss_name} trains on labelled pairs: train_dataset needs a `labels` (or `label`) column")
        return
    labels = column_numpy(train_dataset, "labels")
    if len(labels) == 0:
        raise ValueError("train_dataset holds no pairs to train on")
    if pair_type == "duplicates" and (labels != 1).any():
        raise ValueError(
            f"{loss_name} trains on duplicate pairs only, but train_dataset holds {(labels != 1).sum()} "
            "non-duplicate pairs: keep label 1 (hfsiamese.data.duplicate_pairs)"
        )
    if pair_type == "labelled" and len(np.unique(labels)) < 2:
        raise ValueError(f"{loss_name} learns from duplicates AND non-duplicates, but train_dataset holds only label {labels[0]}")


def _check_pair_columns(name: str, dataset: Any) -> None:
    if dataset is None:
        return
    for part in dataset.values() if isinstance(dataset, dict) else [dataset]:
        columns = getattr(part, "column_names", None)
        if columns is None:
            continue
        missing = [c for c in REQUIRED_COLUMNS if c not in columns]
        if missing:
            raise ValueError(
                f"{name} lacks {missing} (has {columns}); tokenise it with hfsiamese.data.tokenize_pairs"
            )
