"""`SiameseTrainer`: the transformers Trainer with in-batch losses, group-aware batches and calibration.

The class keeps only what the bi-encoder changes of `hfsiamese.base.trainer.PairTrainer` (calibration, staged
saving, the NaN/inf policy, logging, core sharing: both families'); each job it hands on lives in a module of its
own: `batch_loading` (the Trainer's sampler and data loader hooks, a mixin of this class) over `batch_sampling`
(which pairs share a batch), `gradient_cache`, `lora_checkpoints` (resuming a LoRA run, whose
checkpoints hold merged weights), `truncated_evaluation`; `create_model_card` hands what the trainer knows of the
run to `hfsiamese.bi_encoder.model_card`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch
from torch import nn

from hfsiamese.base.gradient_averaging import all_reduce_gradients
from hfsiamese.base.nonfinite_loss import NonFiniteLossError
from hfsiamese.base.sharded_training import check_sharded_training, use_fsdp2_layers_without_input_embeddings
from hfsiamese.base.trainer import PairTrainer
from hfsiamese.bi_encoder.batch_loading import PairBatchesMixin
from hfsiamese.bi_encoder.dataset_checks import check_pair_columns, check_teacher_scores, check_training_labels
from hfsiamese.bi_encoder.gradient_cache import gradient_cache_step, side_inputs
from hfsiamese.bi_encoder.lora_checkpoints import load_lora_checkpoint
from hfsiamese.bi_encoder.model_card import build_model_card, metrics_from_log_history
from hfsiamese.bi_encoder.multi_dataset import (
    DATASET_INDEX,
    MultiDatasetView,
    NamedLosses,
    ordered_weights,
    overall_eval_dataset,
)
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.bi_encoder.truncated_evaluation import truncated_evaluation_dims, truncated_scores
from hfsiamese.data.collator import SiamesePairCollator
from hfsiamese.data.multi_dataset_sampler import MultiDatasetSampler
from hfsiamese.data.sampler import NoDuplicateGroupSampler
from hfsiamese.data.tokenizing_collator import TokenizingPairCollator
from hfsiamese.losses import SiameseLoss, loss_name
from hfsiamese.losses.teacher_scores import TEACHER_SCORES_COLUMN
from hfsiamese.models.siamese.scoring import pair_scores

# What a batch holds for the loss (or the evaluation) but not for the model's forward.
BATCH_ONLY_KEYS = ("labels", "group_ids", TEACHER_SCORES_COLUMN, DATASET_INDEX)


class SiameseTrainer(PairBatchesMixin, PairTrainer):
    """
    Trains a [`SiameseModel`] on duplicate pairs with an in-batch loss.

    Overrides only what the Siamese setting changes (the rest is `PairTrainer`'s):
    - `batch_loss` (what `compute_loss` returns): embeds both sides and applies the loss of `args.loss` (or `loss=`)
      to the whole batch, passing it what it declares it uses (`hfsiamese.losses.SiameseLoss`: a teacher's scores too,
      from a `teacher_scores` column, for `margin_mse` and `listwise_kl`);
    - the train sampler: batches never hold two pairs of one duplicate group (`group_id` column), so
      in-batch negatives are real negatives; with `train_sampling_strategy="group_by_length"` the
      batches also gather pairs of similar length, so little padding is computed;
    - evaluation: scores labelled pairs (duplicates and non-duplicates) by cosine similarity (or the
      classification head's probability) and reports accuracy/precision/recall/F1 at the calibrated
      threshold, average precision and ROC-AUC; the threshold is stored in `model.config.threshold`.
      With a Matryoshka loss, the same metrics at each smaller size it trains (`eval_dim128_...`);
    - training: with `gradient_cache_mini_batch_size`, a GradCache step (the whole batch's in-batch loss in
      the memory of a mini-batch); a LoRA run resumes from its checkpoints' adapters and head;
    - several data sets: `train_dataset` may be a dict name → Dataset, with `loss` a dict name → loss (or one
      loss for all) and `dataset_weights` (name → weight, for `multi_dataset_sampling="proportional"`); a batch
      never mixes data sets (`hfsiamese.bi_encoder.multi_dataset`). A dict `eval_dataset` reports the metrics
      of all its pairs together (`eval_*`, which calibrate the threshold) and of each data set (`eval_<name>_*`).

    As every `PairTrainer`: checkpoints and the final model appear on disk only once complete, each with the
    fingerprint of the questions it was trained on (`training_questions`, hashes: see
    `hfsiamese.data.question_fingerprints`), so that an evaluation on them can be told apart; a NaN/inf loss
    stops training, or with `nan_policy="skip"` drops the batch.
    """

    args: SiameseTrainingArguments
    loss_fn: SiameseLoss

    arguments_class = SiameseTrainingArguments
    default_output_dir = "outputs/siamese"
    collator_class = SiamesePairCollator

    def __init__(
        self,
        model: nn.Module | None = None,
        args: SiameseTrainingArguments | None = None,
        data_collator: Any | None = None,
        train_dataset: datasets.Dataset | Mapping[str, datasets.Dataset] | None = None,
        eval_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None = None,
        processing_class: Any | None = None,
        loss: SiameseLoss | Mapping[str, SiameseLoss] | None = None,
        training_questions: np.ndarray | None = None,
        dataset_weights: Mapping[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        """As `PairTrainer`, plus `loss` (else `args.build_loss()`; a dict: one per training data set) and
        `dataset_weights` (several training data sets, proportional sampling: name → weight)."""
        self._given_loss = loss  # None: `args.build_loss()`, once the arguments are checked (`check_inputs`)
        self.dataset_weights = dict(dataset_weights) if dataset_weights is not None else None
        self.named_losses: NamedLosses | None = None  # several training data sets: the loss of each
        self._overall_eval: tuple[int, datasets.Dataset] | None = None
        if isinstance(train_dataset, Mapping):
            self._train_parts: dict[str, datasets.Dataset] | None = dict(train_dataset)
            train_dataset = MultiDatasetView(self._train_parts)
        else:
            self._train_parts = None
        super().__init__(
            model, args, data_collator, train_dataset, eval_dataset, processing_class, training_questions, **kwargs
        )
        # FSDP/DeepSpeed (from accelerate's config): refuse what bypasses their wrapper; FSDP2's layer units.
        check_sharded_training(self)
        use_fsdp2_layers_without_input_embeddings(self)
        # Our losses are per-batch means: the Trainer divides them by the accumulation steps.
        self.loss_is_scaled_for_ga = False
        self._group_sampler: NoDuplicateGroupSampler | MultiDatasetSampler | None = None
        # A Matryoshka loss's smaller sizes, which evaluation reports too (`eval_dim128_average_precision`, ...).
        losses = self.named_losses.losses if self.named_losses is not None else [self.loss_fn]
        self.evaluation_dims = next(
            (dims for loss in losses if (dims := truncated_evaluation_dims(loss, self.model))), ()
        )
        self.calibration.truncated_dims = self.evaluation_dims

    def check_inputs(
        self,
        model: nn.Module | None,
        args: SiameseTrainingArguments,  # type: ignore[override]
        train_dataset: datasets.Dataset | None,
        eval_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None,
    ) -> None:
        """Both datasets hold pairs; the loss (built from `args` unless given) is one, and the labels suit it.
        Several training data sets: a loss for each (the same one, or a dict naming each), weights naming each."""
        if self._train_parts is not None:
            self._check_training_parts(args, self._train_parts)
            return
        if self.dataset_weights is not None:
            raise ValueError(
                "dataset_weights needs several training data sets (train_dataset as a dict name → Dataset)"
            )
        if isinstance(self._given_loss, Mapping):
            raise ValueError(
                "a dict of losses needs several training data sets (train_dataset as a dict name → Dataset)"
            )
        tokenising = isinstance(getattr(self, "data_collator", None), TokenizingPairCollator)
        for name, dataset in (("train_dataset", train_dataset), ("eval_dataset", eval_dataset)):
            check_pair_columns(name, dataset, texts_allowed=tokenising)
        loss_fn = self._given_loss if self._given_loss is not None else args.build_loss()
        if not isinstance(loss_fn, SiameseLoss):
            raise TypeError(
                f"loss must be a hfsiamese.losses.SiameseLoss (it declares what it needs), got {type(loss_fn).__name__}"
            )
        check_training_labels(train_dataset, loss_fn, args.loss)
        check_teacher_scores(train_dataset, loss_fn, args.loss)
        self.loss_fn = loss_fn

    def _check_training_parts(self, args: SiameseTrainingArguments, parts: dict[str, datasets.Dataset]) -> None:
        """Several training data sets: each holds pairs its loss can train on; the weights name each once."""
        if not parts:
            raise ValueError("train_dataset is an empty dict: name at least one data set")
        if args.remove_unused_columns:
            raise ValueError(
                "several training data sets need remove_unused_columns=False (batches carry their data set)"
            )
        for name, part in parts.items():
            check_pair_columns(f"train_dataset[{name!r}]", part)
        self.named_losses = NamedLosses(
            list(parts), self._given_loss if self._given_loss is not None else args.build_loss()
        )
        for (name, part), loss in zip(parts.items(), self.named_losses.losses, strict=True):
            check_training_labels(part, loss, f"{loss_name(loss) or type(loss).__name__} (data set {name!r})")
        ordered_weights(list(parts), self.dataset_weights, args.multi_dataset_sampling)
        self.loss_fn = self.named_losses.losses[0]

    # ------------------------------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------------------------------
    def batch_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Any]:
        outputs = model(**{k: v for k, v in inputs.items() if k not in BATCH_ONLY_KEYS})
        loss = self._loss_from_embeddings(
            inputs, outputs.embeddings_a, outputs.embeddings_b, outputs.embeddings_n, outputs.logits
        )
        return loss, outputs

    def _loss_from_embeddings(
        self,
        inputs: dict[str, torch.Tensor],
        embeddings_a: torch.Tensor,
        embeddings_b: torch.Tensor,
        embeddings_n: torch.Tensor | None,
        logits: torch.Tensor | None,
    ) -> torch.Tensor:
        """Apply the loss (of the batch's data set, with several), passing it what it declares it uses; in training,
        check the value and keep the statistics."""
        loss_fn = self.named_losses.of_batch(inputs) if self.named_losses is not None else self.loss_fn
        output = loss_fn.compute(
            embeddings_a,
            embeddings_b,
            labels=inputs.get("labels") if loss_fn.requires_labels else None,
            group_ids=inputs.get("group_ids"),
            negatives=embeddings_n if loss_fn.uses_negatives else None,
            logits=logits if loss_fn.uses_logits else None,
            teacher_scores=inputs.get(TEACHER_SCORES_COLUMN) if loss_fn.requires_teacher_scores else None,
        )
        return self.checked_loss(output.loss, inputs, output.stats)

    def pair_training_step(
        self, model: nn.Module, inputs: dict[str, torch.Tensor], num_items_in_batch: torch.Tensor | int | None = None
    ) -> torch.Tensor:
        """The Trainer's step, or a GradCache step when `gradient_cache_mini_batch_size` is set."""
        if not self.args.gradient_cache_mini_batch_size:
            return super().pair_training_step(model, inputs, num_items_in_batch)
        return self._gradient_cache_step(model, inputs)

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
            logits = (
                unwrapped.classifier(embeddings["a"], embeddings["b"]) if unwrapped.classifier is not None else None
            )
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

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model: nn.Module | None = None) -> None:
        """The Trainer's, or for a LoRA run its adapters and head: its checkpoints hold merged weights (`lora_checkpoints`)."""
        if not load_lora_checkpoint(model if model is not None else self.model, resume_from_checkpoint):
            super()._load_from_checkpoint(resume_from_checkpoint, model)

    def _load_best_model(self) -> None:
        """The Trainer's, or for a LoRA run the best checkpoint's adapters and head (`lora_checkpoints`)."""
        if not load_lora_checkpoint(self.model, self.state.best_model_checkpoint):
            super()._load_best_model()

    # ------------------------------------------------------------------------------------------
    # Evaluation
    # ------------------------------------------------------------------------------------------
    def evaluate(
        self,
        eval_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None = None,
        ignore_keys: list[str] | None = None,
        metric_key_prefix: str = "eval",
    ) -> dict[str, float]:
        """
        As `PairTrainer.evaluate`; a dict of data sets is scored as one (`<prefix>_*`: on the validation sets this
        calibrates the threshold), then each at that threshold (`<prefix>_<name>_*`).
        """
        parts = eval_dataset if eval_dataset is not None else self.eval_dataset
        if not isinstance(parts, Mapping):
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        metrics = super().evaluate(self._overall_eval_dataset(parts), ignore_keys, metric_key_prefix)
        for name, part in parts.items():
            metrics.update(super().evaluate(part, ignore_keys, f"{metric_key_prefix}_{name}"))
        return metrics

    def _overall_eval_dataset(self, parts: Mapping[str, datasets.Dataset]) -> datasets.Dataset:
        """All pairs of `parts` as one data set (kept for the trainer's own dict, evaluated at every evaluation)."""
        if self._overall_eval is not None and self._overall_eval[0] == id(parts):
            return self._overall_eval[1]
        overall = overall_eval_dataset(parts)
        if parts is self.eval_dataset:
            self._overall_eval = (id(parts), overall)
        return overall

    def labelled_scores(
        self, model: nn.Module, inputs: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The model's pair scores (cosine, or the head's P(duplicate)) and the labels as given."""
        outputs = model(**{k: v for k, v in inputs.items() if k not in BATCH_ONLY_KEYS})
        scores = pair_scores(outputs.similarity, outputs.logits)
        if self.evaluation_dims:  # one column per size: the full one first, then the cut ones
            scores = torch.stack([scores, *truncated_scores(outputs, self.evaluation_dims)], dim=1)
        return scores.detach().float(), inputs.get("labels")

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
        Write the Siamese model card (`hfsiamese.bi_encoder.model_card`) to `<output_dir>/README.md`. `push_to_hub` calls
        this before uploading the folder, so the Hub gets this card instead of the Trainer's generic one.

        The Trainer's arguments keep their meaning: `finetuned_from` is the base model's Hub id, `dataset_tags`
        the training data's Hub id (`dataset_args` its configuration) and `dataset` a readable name; `tasks` is
        ignored (the card's task is always duplicate detection). `arguments` are the run's other arguments (e.g.
        the recipe's model and data arguments), `metrics` its final metrics (default: the latest logged ones).
        """
        if not self.is_world_process_zero():
            return
        args = self.args
        model = self.accelerator.unwrap_model(self.model)
        repo_id = self.hub_repo_id()
        if sentence_transformers_path and Path(sentence_transformers_path).resolve() == Path(args.output_dir).resolve():
            sentence_transformers_path = repo_id  # exported into this very folder: it loads from the same place
        card = build_model_card(
            model,
            model_name=model_name or Path(args.output_dir).name,
            metrics=metrics if metrics is not None else metrics_from_log_history(self.state.log_history),
            training_args=args,
            arguments=arguments,
            loss=self.loss_fn,
            tokenizer=self.processing_class,
            repo_id=repo_id,
            dataset_name=", ".join(dataset) if isinstance(dataset, list) else dataset,
            dataset_id=_first(dataset_tags),
            dataset_config=_first(dataset_args),
            train_rows=len(self.train_dataset)
            if isinstance(self.train_dataset, (datasets.Dataset, MultiDatasetView))
            else None,
            training_datasets=self._training_datasets_of_card(),
            eval_pairs=_eval_pairs(self.eval_dataset),
            global_step=self.state.global_step or None,
            base_model=finetuned_from,
            language=language,
            license=license,
            tags=[tags] if isinstance(tags, str) else tags,
            sentence_transformers_path=sentence_transformers_path,
        )
        os.makedirs(args.output_dir, exist_ok=True)
        card.save(os.path.join(args.output_dir, "README.md"))

    def _training_datasets_of_card(self) -> list[dict[str, Any]] | None:
        """Several training data sets: each one's name, rows, loss and weight, for the model card."""
        if self._train_parts is None or self.named_losses is None:
            return None
        weights = self.dataset_weights or {}
        return [
            {
                "name": name,
                "rows": len(part),
                "loss": loss_name(loss) or type(loss).__name__,
                "weight": weights.get(name),
            }
            for (name, part), loss in zip(self._train_parts.items(), self.named_losses.losses, strict=True)
        ]


__all__ = ["NonFiniteLossError", "SiameseTrainer"]


def _first(value: str | list[str] | None) -> str | None:
    return value[0] if isinstance(value, list) and value else value or None


def _eval_pairs(eval_dataset: Any) -> int | None:
    """The validation pairs: of the data set, or of all of a dict's."""
    if isinstance(eval_dataset, Mapping):
        return sum(len(part) for part in eval_dataset.values())
    return len(eval_dataset) if isinstance(eval_dataset, datasets.Dataset) else None
