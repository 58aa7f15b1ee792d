"""`PairTrainer`: the transformers Trainer with what training any pair model shares; each family subclasses it.

`SiameseTrainer` (bi-encoders, in-batch losses) and `CrossEncoderTrainer` (binary cross-entropy on pairs) differ in
their loss, batches, evaluation scores and model card; everything else is here, once: the arguments and collator a
trainer starts from, threshold calibration on the validation pairs (`threshold_calibration`), saves that appear only
complete (`staged_saving`), the NaN/inf loss policy (`nonfinite_loss`), the loss's logged statistics, CPU core
sharing, the run's precision for evaluation's encoding, and resuming from "auto".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import datasets
import numpy as np
import torch
from torch import nn
from transformers import Trainer

from hfsiamese.base.atomic_save import CheckpointStaging
from hfsiamese.base.checkpoints import resolve_resume_checkpoint
from hfsiamese.base.core_sharing_callback import CoreSharingCallback
from hfsiamese.base.cpu_precision import check_bf16_model
from hfsiamese.base.gradient_averaging import all_reduce_gradients
from hfsiamese.base.loss_statistics import LossStatistics
from hfsiamese.base.nonfinite_loss import NonFiniteLossGuard, SkippedBatch
from hfsiamese.base.sharded_training import is_sharded
from hfsiamese.base.staged_saving import StagedSavingMixin
from hfsiamese.base.threshold_calibration import ThresholdCalibration
from hfsiamese.base.training_args import PairTrainingArguments
from hfsiamese.utils.console import use_single_progress_bar
from hfsiamese.utils.process_group import check_process_group

# What the Trainer builds a sampler with: a function of the data set.
SamplerFn = Callable[[Any], torch.utils.data.Sampler]


class PairTrainer(StagedSavingMixin, Trainer):
    """
    A Trainer for a model that scores question pairs. A family's trainer names its arguments class
    (`arguments_class`, also the default arguments, writing to `default_output_dir`) and the collator that pads
    its pairs (`collator_class`, built by `default_collator` on `processing_class` when no `data_collator` is
    given), checks its
    inputs (`check_inputs`), computes a batch's loss (`batch_loss`, which `compute_loss` returns; it passes its loss
    through `checked_loss`) and scores an evaluation batch (`labelled_scores`: the pair's score, one per labelled
    pair, which `prediction_step` returns). What it gets from here:

    - evaluation calibrates `config.threshold` on the validation set (`metric_key_prefix="eval"`) and applies it
      unchanged to any other (`ThresholdCalibration`, also the default `compute_metrics`);
    - saving is atomic, with the training questions' fingerprint beside the weights (`StagedSavingMixin`);
    - a NaN/inf loss stops training, or with `nan_policy="skip"` drops the batch (`NonFiniteLossGuard`);
    - the logs carry the loss's statistics and the skipped batches; `train` resumes from "auto";
    - on a CPU, threads adapt to other processes between steps (`CoreSharingCallback`), and no loader pins memory.
    """

    arguments_class: ClassVar[type[PairTrainingArguments]] = PairTrainingArguments
    default_output_dir: ClassVar[str] = "outputs/pairs"
    collator_class: ClassVar[type | None] = None
    args: PairTrainingArguments

    def __init__(
        self,
        model: nn.Module | None = None,
        args: PairTrainingArguments | None = None,
        data_collator: Any | None = None,
        train_dataset: datasets.Dataset | None = None,
        eval_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None = None,
        processing_class: Any | None = None,
        training_questions: np.ndarray | None = None,
        eval_pairs_total: int | None = None,
        **kwargs: Any,
    ) -> None:
        """
        As `transformers.Trainer`, plus `training_questions`: the hashes of the training questions
        (`hfsiamese.data.question_fingerprints.pair_question_hashes`), saved beside the weights at every save; the
        recipes pass them. `eval_pairs_total`: the size of the validation set `eval_dataset` was sampled from
        (`hfsiamese.data.validation_sample`), reported beside the pairs evaluated (`eval_num_pairs`) as
        `eval_pairs_total`, so a figure on a sample says so.
        """
        args = self.checked_arguments(args)
        if data_collator is None:
            if processing_class is None:
                raise ValueError("pass processing_class=tokenizer (used to pad pairs) or a data_collator")
            data_collator = self.default_collator(processing_class)
        self.data_collator = data_collator  # (the Trainer sets it too) what `check_inputs` may ask of the collator
        self.check_inputs(model, args, train_dataset, eval_dataset)
        check_process_group(args.world_size)  # processes that did not join one group would race on output_dir
        check_bf16_model(model, args)  # an LSTM this CPU cannot run in bf16: one line, before any step
        self.calibration = ThresholdCalibration(args, lambda: self.accelerator.unwrap_model(self.model).config)
        self.calibration.check_before_training(getattr(model, "config", None), eval_dataset)
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
        if hasattr(self.model, "set_encode_precision"):  # evaluation's encode calls follow the run's --bf16
            reason = getattr(args, "precision_reason", None) or f"bf16 {args.bf16}"
            self.model.set_encode_precision(
                torch.bfloat16 if args.bf16 else None, f"the training run's precision ({reason})"
            )
        self.loss_statistics = LossStatistics()
        self.nonfinite_loss = NonFiniteLossGuard(args.nan_policy)
        self.checkpoint_staging = CheckpointStaging()
        self.training_questions = training_questions
        self.eval_pairs_total = eval_pairs_total

    def checked_arguments(self, args: PairTrainingArguments | None) -> PairTrainingArguments:
        """`args`, or the family's defaults when None; arguments of another class are refused."""
        if args is None:
            return self.arguments_class(output_dir=self.default_output_dir)
        if not isinstance(args, self.arguments_class):
            raise TypeError(f"{type(self).__name__} needs {self.arguments_class.__name__}, got {type(args).__name__}")
        return args

    def default_collator(self, processing_class: Any) -> Any:
        """The collator of a trainer given none: the family's `collator_class`, padding pairs with `processing_class`."""
        if self.collator_class is None:
            raise ValueError(f"{type(self).__name__} has no default collator: pass a data_collator")
        return self.collator_class(processing_class)

    def check_inputs(
        self,
        model: nn.Module | None,
        args: PairTrainingArguments,
        train_dataset: datasets.Dataset | None,
        eval_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None,
    ) -> None:
        """A family's checks of what it was given, before the Trainer starts: a one-line error naming the problem."""

    def _get_dataloader(
        self,
        dataset: Any,
        description: str,
        batch_size: int,
        sampler_fn: SamplerFn | None = None,
        is_training: bool = False,
        dataloader_key: str | None = None,
    ) -> torch.utils.data.DataLoader:
        """
        The Trainer's loader, from the data as the family shapes it (`loader_data`: this is the one override of the
        Trainer's private loader method); pinned host memory only speeds copies to an accelerator (torch warns per
        loader on a CPU).
        """
        pin_memory = self.args.dataloader_pin_memory
        self.args.dataloader_pin_memory = pin_memory and self.args.device.type != "cpu"
        try:
            with self.loader_data(dataset, sampler_fn) as (data, sampler):
                return super()._get_dataloader(data, description, batch_size, sampler, is_training, dataloader_key)
        finally:
            self.args.dataloader_pin_memory = pin_memory

    @contextmanager
    def loader_data(self, dataset: Any, sampler_fn: SamplerFn | None) -> Iterator[tuple[Any, SamplerFn | None]]:
        """What a loader is made from (the data set and its sampler function) while it is made: both as given here; a
        family may reshape them, or set the trainer up for the making (its collator) and restore it after."""
        yield dataset, sampler_fn

    def train(
        self,
        resume_from_checkpoint: str | bool | None = None,
        trial: Any = None,
        ignore_keys_for_eval: list[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """
        The Trainer's `train`; `resume_from_checkpoint` also takes "auto" (like True: the newest
        checkpoint in `output_dir`), passes over incomplete checkpoint folders, and fails with a
        clear error when there is none.
        """
        resume_from_checkpoint = resolve_resume_checkpoint(resume_from_checkpoint, self.args.output_dir)
        return super().train(resume_from_checkpoint, trial, ignore_keys_for_eval, **kwargs)

    def training_step(
        self, model: nn.Module, inputs: dict[str, torch.Tensor], num_items_in_batch: torch.Tensor | int | None = None
    ) -> torch.Tensor:
        """
        The family's step (`pair_training_step`). A batch whose loss is NaN/inf stops training or, with
        `nan_policy="skip"`, is dropped before any backward pass (`nonfinite_loss`).
        """
        try:
            return self.pair_training_step(model, inputs, num_items_in_batch)
        except SkippedBatch as skipped:
            if self.accelerator.num_processes > 1 and self.accelerator.sync_gradients and not is_sharded(self):
                # The skipped batch was this step's last, whose backward would have averaged the
                # gradients of the earlier accumulated batches over processes: average them here.
                # (FSDP/DeepSpeed own their gradients; there `check_sharded_training` refuses skip with accumulation.)
                all_reduce_gradients(self.accelerator.unwrap_model(model).parameters())
            # Returned as is: the Trainer's `logging_nan_inf_filter` keeps it out of the logged loss.
            return skipped.loss

    def pair_training_step(
        self, model: nn.Module, inputs: dict[str, torch.Tensor], num_items_in_batch: torch.Tensor | int | None = None
    ) -> torch.Tensor:
        """One training step of a batch: the Trainer's, unless the family trains otherwise."""
        return super().training_step(model, inputs, num_items_in_batch)

    def compute_loss(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, Any]:
        """The family's loss of the batch (`batch_loss`), with the model's outputs when the Trainer asks for them."""
        loss, outputs = self.batch_loss(model, inputs)
        return (loss, outputs) if return_outputs else loss

    def batch_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Any]:
        """A batch's loss, passed through `checked_loss`, and the model's outputs."""
        raise NotImplementedError(f"{type(self).__name__} must implement batch_loss")

    def checked_loss(
        self, loss: torch.Tensor, inputs: dict[str, torch.Tensor], stats: dict[str, torch.Tensor] | None = None
    ) -> torch.Tensor:
        """`loss`; in training, a NaN/inf one stops the run or skips the batch (`nonfinite_loss`), and the loss's own
        `stats` are kept for the logs (`loss_statistics`)."""
        if self.model.training:
            self.nonfinite_loss.check(loss, inputs, self)
            if stats is not None:
                self.loss_statistics.add(stats)
        return loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Add the loss's own statistics (e.g. how many negatives were hard), averaged since the last log,
        and with `nan_policy="skip"` the number of batches skipped since training (re)started."""
        if self.loss_statistics and "loss" in logs:
            logs.update({f"loss_{name}": mean for name, mean in self.loss_statistics.pop_means().items()})
        self.nonfinite_loss.add_to_logs(logs)
        super().log(logs, start_time)

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
        with self.calibration.evaluating(metric_key_prefix):
            metrics = super().evaluate(eval_dataset, ignore_keys=ignore_keys, metric_key_prefix=metric_key_prefix)
        self.calibration.store(metrics, metric_key_prefix)
        if self.eval_pairs_total is not None and eval_dataset is None and metric_key_prefix == "eval":
            metrics["eval_pairs_total"] = self.eval_pairs_total  # the set's size; `eval_num_pairs`: those evaluated
        return metrics

    def prediction_step(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor],
        prediction_loss_only: bool,
        ignore_keys: list[str] | None = None,
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        """The score of each labelled pair and its label, for the metrics (`labelled_scores`, the family's); no loss:
        a family's training loss need not be defined on evaluation pairs (an in-batch loss is not on non-duplicates)."""
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            scores, labels = self.labelled_scores(model, inputs)
        return None, scores, labels

    def labelled_scores(
        self, model: nn.Module, inputs: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """An evaluation batch's pair scores, as the threshold applies to them, and its labels as the metrics read them."""
        raise NotImplementedError(f"{type(self).__name__} must implement labelled_scores")

    def hub_repo_id(self) -> str:
        """Where the model card says the model lives: the Hub repository it is pushed to, else `output_dir`."""
        return getattr(self, "hub_model_id", None) or self.args.hub_model_id or self.args.output_dir


__all__ = ["PairTrainer"]
