"""`CrossEncoderTrainer`: the transformers Trainer for a cross-encoder over question pairs.

A cross-encoder scores each labelled pair on its own (no in-batch negatives, so batches need no duplicate
groups), with binary cross-entropy on its one logit: gold labels are 0/1, silver pairs
(`hfsiamese.distillation.silver_pairs`) may carry soft ones. Evaluation, threshold calibration and
saving are the Siamese trainer's (`ThresholdCalibration`, `StagedSavingMixin`), so the run reports the
same metrics and its folder appears only complete.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import Trainer

from hfsiamese.base.atomic_save import CheckpointStaging
from hfsiamese.base.core_sharing_callback import CoreSharingCallback
from hfsiamese.base.nonfinite_loss import NonFiniteLossGuard, SkippedBatch
from hfsiamese.base.staged_saving import StagedSavingMixin
from hfsiamese.base.threshold_calibration import CalibratingEvaluationMixin, ThresholdCalibration
from hfsiamese.bi_encoder.model_card import metrics_from_log_history
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.cross_encoder.model import is_cross_encoder_config
from hfsiamese.cross_encoder.model_card import cross_encoder_card
from hfsiamese.cross_encoder.pair_inputs import LABELS, CrossPairCollator, model_inputs, swapped_inputs
from hfsiamese.utils.console import use_single_progress_bar
from hfsiamese.utils.process_group import check_process_group


class CrossEncoderTrainer(StagedSavingMixin, CalibratingEvaluationMixin, Trainer):
    """
    Trains a one-logit `AutoModelForSequenceClassification` (the `model` of a
    [`hfsiamese.cross_encoder.model.CrossEncoder`]) on pairs tokenised by `tokenize_cross_pairs`.

    Overrides only what a cross-encoder changes:
    - `compute_loss`: binary cross-entropy with logits on the `labels` (0/1, or soft labels in [0, 1]);
    - `prediction_step`: the pair's score, sigmoid of its logit, or with `config.pair_order == "both"` of the
      mean of both orders' logits (evaluation rows carry the other order as `*_swapped` columns);
    - evaluation calibrates `config.threshold` on the validation set and applies it unchanged to any other
      (`ThresholdCalibration`, as `SiameseTrainer`); saving is atomic (`StagedSavingMixin`);
    - a NaN/inf loss stops training, or with `nan_policy="skip"` drops the batch.

    It takes the Siamese recipes' arguments (`SiameseTrainingArguments`); their loss options train bi-encoders
    and do not apply (`hfsiamese train` refuses them for a cross-encoder).
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
        training_questions: np.ndarray | None = None,
        **kwargs: Any,
    ) -> None:
        if args is None:
            args = SiameseTrainingArguments(output_dir="outputs/cross_encoder")
        if not isinstance(args, SiameseTrainingArguments):
            raise TypeError("CrossEncoderTrainer needs SiameseTrainingArguments (calibration and NaN options)")
        if model is None or not is_cross_encoder_config(getattr(model, "config", None)):
            raise ValueError(
                "CrossEncoderTrainer trains a one-logit sequence-classification model: pass CrossEncoder(...).model"
            )
        if args.gradient_cache_mini_batch_size:
            raise ValueError(
                "gradient_cache_mini_batch_size applies to in-batch losses; a cross-encoder's loss is per pair"
            )
        if data_collator is None:
            if processing_class is None:
                raise ValueError("pass processing_class=tokenizer (used to pad pairs) or a data_collator")
            data_collator = CrossPairCollator(processing_class)
        for name, dataset in (("train_dataset", train_dataset), ("eval_dataset", eval_dataset)):
            if isinstance(dataset, datasets.Dataset) and "input_ids" not in dataset.column_names:
                raise ValueError(
                    f"{name} has no input_ids column (columns: {dataset.column_names}): tokenise it with "
                    "hfsiamese.cross_encoder.pair_inputs.tokenize_cross_pairs"
                )
        check_process_group(args.world_size)
        if args.device.type == "cpu":  # pinned host memory only speeds copies to an accelerator; torch warns on a CPU
            args.dataloader_pin_memory = False
        self.calibration = ThresholdCalibration(args, lambda: self.accelerator.unwrap_model(self.model).config)
        kwargs.setdefault("compute_metrics", self.calibration)
        super().__init__(
            model=model,
            args=args,
            data_collator=data_collator,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=processing_class,
            **kwargs,
        )
        use_single_progress_bar(self)
        self.add_callback(CoreSharingCallback())
        self.nonfinite_loss = NonFiniteLossGuard(args.nan_policy)
        self.checkpoint_staging = CheckpointStaging()
        self.training_questions = training_questions

    def compute_loss(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, Any]:
        if LABELS not in inputs:
            raise ValueError("training rows need labels (a `label` column of 0/1, or soft labels in [0, 1])")
        outputs = model(**model_inputs(inputs))
        loss = F.binary_cross_entropy_with_logits(outputs.logits[:, 0].float(), inputs[LABELS].float())
        if model.training:
            self.nonfinite_loss.check(loss, inputs, self)
        return (loss, outputs) if return_outputs else loss

    def training_step(
        self, model: nn.Module, inputs: dict[str, torch.Tensor], num_items_in_batch: torch.Tensor | int | None = None
    ) -> torch.Tensor:
        """The Trainer's step; a batch whose loss is NaN/inf stops training or, with `nan_policy="skip"`, is dropped."""
        try:
            return super().training_step(model, inputs, num_items_in_batch)
        except SkippedBatch as skipped:
            return skipped.loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        self.nonfinite_loss.add_to_logs(logs)
        super().log(logs, start_time)

    def prediction_step(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor],
        prediction_loss_only: bool,
        ignore_keys: list[str] | None = None,
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        """The score of each labelled pair (see the class docstring); the labels as 0/1 for the metrics."""
        inputs = self._prepare_inputs(inputs)
        config = self.accelerator.unwrap_model(model).config
        with torch.no_grad():
            logits = model(**model_inputs(inputs)).logits[:, 0].float()
            swapped = swapped_inputs(inputs)
            if getattr(config, "pair_order", "given") == "both":
                if swapped is None:
                    raise ValueError(
                        "this cross-encoder scores both orders: tokenise evaluation pairs with swapped_columns=True"
                    )
                logits = (logits + model(**swapped).logits[:, 0].float()) / 2
        labels = inputs.get(LABELS)
        return None, torch.sigmoid(logits), None if labels is None else labels.round().long()

    def create_model_card(
        self,
        *,
        language: str | None = None,
        license: str | None = None,
        model_name: str | None = None,
        finetuned_from: str | None = None,
        dataset_tags: str | list[str] | None = None,
        dataset: str | list[str] | None = None,
        metrics: dict[str, float] | None = None,
        **unused: Any,
    ) -> None:
        """
        Write the cross-encoder's card (`hfsiamese.cross_encoder.model_card`) to `<output_dir>/README.md`. Takes what
        `hfsiamese.training.run_end.save_run` passes to `SiameseTrainer.create_model_card`; the arguments a cross-encoder's card
        has no place for (`arguments`, `tags`, `sentence_transformers_path`, ...) are ignored.
        """
        if not self.is_world_process_zero():
            return
        repo_id = getattr(self, "hub_model_id", None) or self.args.hub_model_id or self.args.output_dir
        card = cross_encoder_card(
            self.accelerator.unwrap_model(self.model).config,
            model_name=model_name or Path(self.args.output_dir).name,
            repo_id=repo_id,
            metrics=metrics if metrics is not None else metrics_from_log_history(self.state.log_history),
            base_model=finetuned_from,
            dataset_name=", ".join(dataset) if isinstance(dataset, list) else dataset,
            dataset_id=dataset_tags[0] if isinstance(dataset_tags, list) and dataset_tags else dataset_tags or None,
            license=license,
            language=language,
            train_rows=len(self.train_dataset) if isinstance(self.train_dataset, datasets.Dataset) else None,
        )
        os.makedirs(self.args.output_dir, exist_ok=True)
        card.save(os.path.join(self.args.output_dir, "README.md"))


__all__ = ["CrossEncoderTrainer"]
