"""`SiameseTrainer`: the transformers Trainer with in-batch losses, group-aware batches and calibration."""

from __future__ import annotations

from typing import Any

import datasets
import numpy as np
import pyarrow.compute as pc
import torch
from torch import nn
from transformers import EvalPrediction, Trainer
from transformers.trainer_pt_utils import LengthGroupedSampler
from transformers.utils import logging

from ..data.arrow_columns import column_arrow, column_numpy
from ..data.collator import SiamesePairCollator
from ..data.sampler import NoDuplicateGroupSampler
from ..metrics import pair_classification_metrics
from .gradient_cache import all_reduce_gradients, gradient_cache_step, side_inputs
from .siamese_config import SiameseTrainingArguments

logger = logging.get_logger(__name__)

REQUIRED_COLUMNS = ("input_ids_a", "attention_mask_a", "input_ids_b", "attention_mask_b")
BATCH_ONLY_KEYS = ("labels", "group_ids")


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
        return NoDuplicateGroupSampler(group_ids, batch_size=self._train_batch_size, seed=self.args.seed, lengths=lengths)

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
            for key, value in getattr(self.loss_fn, "last_stats", {}).items():
                self._loss_stats.setdefault(key, []).append(float(value))
        return loss

    def training_step(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor],
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor:
        """The Trainer's step, or a GradCache step when `gradient_cache_mini_batch_size` is set."""
        mini_batch = self.args.gradient_cache_mini_batch_size
        if not mini_batch:
            return super().training_step(model, inputs, num_items_in_batch)
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

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Add the loss's own statistics (e.g. how many negatives were hard), averaged since the last log."""
        if self._loss_stats and "loss" in logs:
            for key, values in self._loss_stats.items():
                logs[f"loss_{key}"] = round(sum(values) / len(values), 4)
            self._loss_stats = {}
        super().log(logs, start_time)

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
        if eval_pred.label_ids is None:
            raise ValueError("evaluation pairs need a `labels` (or `label`) column of 0/1")
        scores = np.asarray(eval_pred.predictions, dtype=np.float64).reshape(-1)
        labels = np.asarray(eval_pred.label_ids).reshape(-1)
        threshold = None if self._calibrating else self._stored_threshold()
        return pair_classification_metrics(scores, labels, threshold=threshold, calibrate_for=self.args.calibrate_for)

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
    for dataset in dataset.values() if isinstance(dataset, dict) else [dataset]:
        columns = getattr(dataset, "column_names", None)
        if columns is None:
            continue
        missing = [c for c in REQUIRED_COLUMNS if c not in columns]
        if missing:
            raise ValueError(
                f"{name} lacks {missing} (has {columns}); tokenise it with hfsiamese.data.tokenize_pairs"
            )
