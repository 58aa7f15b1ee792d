"""`CrossEncoderTrainer`: the transformers Trainer for a cross-encoder over question pairs.

A cross-encoder scores each labelled pair on its own (no in-batch negatives, so batches need no duplicate
groups), with binary cross-entropy on its one logit: gold labels are 0/1, silver pairs
(`hfsiamese.distillation.silver_pairs`) may carry soft ones. Evaluation, threshold calibration and
saving are every pair model's (`hfsiamese.base.trainer.PairTrainer`), so the run reports the same metrics as a
bi-encoder's and its folder appears only complete.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import datasets
import torch
import torch.nn.functional as F
from torch import nn

from hfsiamese.base.model_card_rows import metrics_from_log_history
from hfsiamese.base.trainer import PairTrainer
from hfsiamese.base.training_args import PairTrainingArguments
from hfsiamese.cross_encoder.model import is_cross_encoder_config
from hfsiamese.cross_encoder.model_card import cross_encoder_card
from hfsiamese.cross_encoder.pair_inputs import LABELS, CrossPairCollator, model_inputs, swapped_inputs
from hfsiamese.cross_encoder.tokenizing_collator import TokenizingCrossPairCollator
from hfsiamese.cross_encoder.training_args import CrossEncoderTrainingArguments
from hfsiamese.utils.deprecation import warn_deprecated


class CrossEncoderTrainer(PairTrainer):
    """
    Trains a one-logit `AutoModelForSequenceClassification` (the `model` of a
    [`hfsiamese.cross_encoder.model.CrossEncoder`]) on pairs tokenised by `tokenize_cross_pairs`.

    Overrides only what a cross-encoder changes (the rest is `PairTrainer`'s):
    - `batch_loss` (what `compute_loss` returns): binary cross-entropy with logits on the `labels` (0/1, or soft
      labels in [0, 1]);
    - `labelled_scores` (what `prediction_step` returns): the pair's score, sigmoid of its logit, or with
      `config.pair_order == "both"` of the mean of both orders' logits (evaluation rows carry the other order as
      `*_swapped` columns).

    As every `PairTrainer`: evaluation calibrates `config.threshold` on the validation set and applies it unchanged
    to any other (`ThresholdCalibration`, as `SiameseTrainer`); saving is atomic (`StagedSavingMixin`); a NaN/inf
    loss stops training, or with `nan_policy="skip"` drops the batch.

    It takes `CrossEncoderTrainingArguments`, which have no loss options; `SiameseTrainingArguments`, which it took
    before, are still accepted until hfsiamese 0.3, with a FutureWarning (their loss options do not apply).
    """

    arguments_class = CrossEncoderTrainingArguments
    default_output_dir = "outputs/cross_encoder"
    collator_class = CrossPairCollator

    def checked_arguments(self, args: PairTrainingArguments | None) -> PairTrainingArguments:
        """`CrossEncoderTrainingArguments`, or for one release the `SiameseTrainingArguments` it used to take."""
        # A bi-encoder's arguments are told by the loss they build, so that this family imports nothing of the other.
        if isinstance(args, CrossEncoderTrainingArguments) or not hasattr(args, "build_loss"):
            return super().checked_arguments(args)
        warn_deprecated("argument", "CrossEncoderTrainer(args=SiameseTrainingArguments(...))", stacklevel=4)
        if getattr(args, "gradient_cache_mini_batch_size", None):
            raise ValueError(
                "gradient_cache_mini_batch_size applies to in-batch losses; a cross-encoder's loss is per pair"
            )
        return args

    def check_inputs(
        self,
        model: nn.Module | None,
        args: PairTrainingArguments,
        train_dataset: datasets.Dataset | None,
        eval_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None,
    ) -> None:
        """The model is a one-logit sequence classifier, and both datasets are tokenised pairs (the training pairs may be
        text when the collator tokenises them: `TokenizingCrossPairCollator`)."""
        if model is None or not is_cross_encoder_config(getattr(model, "config", None)):
            raise ValueError(
                "CrossEncoderTrainer trains a one-logit sequence-classification model: pass CrossEncoder(...).model"
            )
        tokenizes = isinstance(self.data_collator, TokenizingCrossPairCollator)  # text rows, tokenised per batch
        for name, dataset in (("train_dataset", train_dataset), ("eval_dataset", eval_dataset)):
            if tokenizes and name == "train_dataset":
                continue
            if isinstance(dataset, datasets.Dataset) and "input_ids" not in dataset.column_names:
                raise ValueError(
                    f"{name} has no input_ids column (columns: {dataset.column_names}): tokenise it with "
                    "hfsiamese.cross_encoder.pair_inputs.tokenize_cross_pairs"
                )

    def batch_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Any]:
        if LABELS not in inputs:
            raise ValueError("training rows need labels (a `label` column of 0/1, or soft labels in [0, 1])")
        outputs = model(**model_inputs(inputs))
        loss = F.binary_cross_entropy_with_logits(outputs.logits[:, 0].float(), inputs[LABELS].float())
        return self.checked_loss(loss, inputs), outputs

    def labelled_scores(
        self, model: nn.Module, inputs: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The score of each labelled pair (see the class docstring); the labels as 0/1 for the metrics."""
        config = self.accelerator.unwrap_model(model).config
        logits = model(**model_inputs(inputs)).logits[:, 0].float()
        swapped = swapped_inputs(inputs)
        if getattr(config, "pair_order", "given") == "both":
            if swapped is None:
                raise ValueError(
                    "this cross-encoder scores both orders: tokenise evaluation pairs with swapped_columns=True"
                )
            logits = (logits + model(**swapped).logits[:, 0].float()) / 2
        labels = inputs.get(LABELS)
        return torch.sigmoid(logits), None if labels is None else labels.round().long()

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
        repo_id = self.hub_repo_id()
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
