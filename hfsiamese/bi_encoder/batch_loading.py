"""
Which pairs a `SiameseTrainer` batches together and how they reach the collator: the Trainer's sampler and data
loader hooks, as a mixin of the trainer (the sampling rules themselves are `batch_sampling`'s and `multi_dataset`'s).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import datasets
import torch
from torch import nn

from hfsiamese.bi_encoder.batch_sampling import length_grouped_sampler, training_sampler
from hfsiamese.bi_encoder.multi_dataset import MultiDatasetCollator, MultiDatasetView, multi_dataset_sampler
from hfsiamese.data.arrow_batches import arrow_batch_dataset
from hfsiamese.data.collator import PAIR_BATCH_COLUMNS, SiamesePairCollator
from hfsiamese.data.multi_dataset_sampler import MultiDatasetSampler
from hfsiamese.data.sampler import NoDuplicateGroupSampler
from hfsiamese.data.tokenizing_collator import TEXT_SIDES, TokenizingPairCollator

if TYPE_CHECKING:
    from hfsiamese.base.trainer import PairTrainer, SamplerFn
    from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
    from hfsiamese.losses import SiameseLoss

    _TrainerBase = PairTrainer  # what the mixin's `super()` calls reach: the trainer it is mixed into
else:
    _TrainerBase = object

__all__ = ["PairBatchesMixin"]


class PairBatchesMixin(_TrainerBase):
    """
    The batch hooks of `SiameseTrainer` (a `transformers.Trainer`): training batches never hold two pairs of one
    duplicate group, optionally gather pairs of similar length, and never mix data sets; pairs reach the collator as
    Arrow tables. Reads the trainer's `args`, `loss_fn` and `dataset_weights`; keeps the sampler it builds.
    """

    args: SiameseTrainingArguments
    loss_fn: SiameseLoss
    dataset_weights: Mapping[str, float] | None
    _group_sampler: NoDuplicateGroupSampler | MultiDatasetSampler | None = None

    def _get_train_sampler(self, train_dataset: datasets.Dataset | None = None) -> torch.utils.data.Sampler | None:
        by_length = self.args.train_sampling_strategy == "group_by_length"
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        if isinstance(dataset, MultiDatasetView):
            # The processes' batches of one step come from one data set: one loss per step.
            self._group_sampler = multi_dataset_sampler(
                dataset,
                batch_size=self._train_batch_size,
                seed=self.args.seed,
                strategy=self.args.multi_dataset_sampling,
                weights=self.dataset_weights,
                num_processes=self.accelerator.num_processes,
                no_duplicate_batches=self.args.no_duplicate_batches,
                length_column=self.args.length_column_name if by_length else None,
            )
            return self._group_sampler
        # Rows a teacher scored compare only their own candidates: without duplicate groups, plain shuffled batches.
        ungrouped_scores = self.loss_fn.requires_teacher_scores and "group_id" not in getattr(
            dataset, "column_names", []
        )
        if not self.args.no_duplicate_batches or ungrouped_scores:
            return super()._get_train_sampler(train_dataset)
        self._group_sampler = training_sampler(
            dataset,
            batch_size=self._train_batch_size,
            seed=self.args.seed,
            length_column=self.args.length_column_name if by_length else None,
        )
        return self._group_sampler

    @contextmanager
    def loader_data(self, dataset: Any, sampler_fn: SamplerFn | None) -> Iterator[tuple[Any, SamplerFn | None]]:
        """
        Pairs reach the collator as one Arrow table per batch (`arrow_batch_dataset`), padded by array
        operations: no Python int per token between the Arrow columns and the batch tensors. The samplers
        still see the `datasets.Dataset`. With `remove_unused_columns` the Trainer wraps the collator in a
        row-dict filter, so the rows then travel as dicts (the collator pads those the same way).
        """
        arrow = isinstance(self.data_collator, SiamesePairCollator) and not self.args.remove_unused_columns
        if isinstance(dataset, MultiDatasetView):
            # Batches of one data set each, marked with it (`DATASET_INDEX`) for the loss.
            collator = self.data_collator
            self.data_collator = MultiDatasetCollator(collator)
            try:
                yield (dataset.with_arrow_batches() if arrow else dataset), sampler_fn
            finally:
                self.data_collator = collator
            return
        if isinstance(dataset, datasets.Dataset) and arrow:
            if sampler_fn is not None:
                sampler_fn = partial(_sampler_of_view, sampler_fn)
            texts = tuple(column for _, column in TEXT_SIDES)  # a collator that tokenises reads the texts too
            tokenising = isinstance(self.data_collator, TokenizingPairCollator)
            dataset = arrow_batch_dataset(dataset, PAIR_BATCH_COLUMNS + texts if tokenising else PAIR_BATCH_COLUMNS)
        yield dataset, sampler_fn

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
        """With length grouping, group evaluation pairs by their two sides' lengths too."""
        if self.args.train_sampling_strategy == "group_by_length" and isinstance(eval_dataset, datasets.Dataset):
            return length_grouped_sampler(
                eval_dataset,
                batch_size=self.args.eval_batch_size,
                seed=self.args.seed,
                length_column=self.args.length_column_name,
            )
        return super()._get_eval_sampler(eval_dataset)


def _sampler_of_view(sampler_fn: SamplerFn, view: Any) -> torch.utils.data.Sampler:
    """The Trainer's sampler built on the `datasets.Dataset` behind an Arrow batch view."""
    return sampler_fn(view.dataset)
