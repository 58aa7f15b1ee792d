"""
Several training data sets in one `SiameseTrainer` run, each with its own loss.

`train_dataset` as a dict name → Dataset becomes one DataLoader dataset (`MultiDatasetView`, the data sets laid
end to end) whose batches each come from one data set (`MultiDatasetSampler`); the collator marks each batch with
its data set's position (`DATASET_INDEX`), by which the trainer picks the loss (`NamedLosses`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import torch

from hfsiamese.bi_encoder.batch_sampling import pair_lengths, training_sampler
from hfsiamese.data.arrow_batches import arrow_batch_dataset
from hfsiamese.data.collator import PAIR_BATCH_COLUMNS
from hfsiamese.data.multi_dataset_sampler import MultiDatasetSampler, check_weights
from hfsiamese.data.sampler import NoDuplicateGroupSampler
from hfsiamese.losses import SiameseLoss

#: The batch key naming the data set a batch came from (its position in the dict); never given to the model.
DATASET_INDEX = "dataset_index"


class MultiDatasetView(torch.utils.data.Dataset):
    """
    The data sets of a dict laid end to end for a DataLoader: `__getitems__` (a whole batch) returns a
    `DatasetBatch` of one data set's rows, Arrow tables when `arrow` (as `arrow_batch_dataset`); a batch
    reaching into two data sets is an error (the sampler never makes one).
    """

    def __init__(self, parts: Mapping[str, datasets.Dataset], *, arrow: bool = False) -> None:
        self.names = list(parts)
        self.datasets = dict(parts)
        self.parts = [arrow_batch_dataset(part) if arrow else part for part in parts.values()]
        self.offsets = np.concatenate([[0], np.cumsum([len(part) for part in self.parts])]).astype(np.int64)

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def with_arrow_batches(self) -> MultiDatasetView:
        """The same data sets, whose batches are Arrow tables (for `SiamesePairCollator`)."""
        return MultiDatasetView(self.datasets, arrow=True)

    def _locate(self, indices: Sequence[int]) -> tuple[int, np.ndarray]:
        rows = np.asarray(indices, dtype=np.int64).reshape(-1)
        parts = np.searchsorted(self.offsets, rows, side="right") - 1
        if rows.size == 0 or rows.min() < 0 or rows.max() >= len(self):
            raise IndexError(f"indices out of range for {len(self)} rows")
        if (parts != parts[0]).any():
            raise ValueError(f"a batch mixes the data sets {sorted({self.names[p] for p in parts.tolist()})}")
        part = int(parts[0])
        return part, rows - self.offsets[part]

    def __getitem__(self, index: int) -> dict[str, Any]:
        part, rows = self._locate([index])
        return {**self.parts[part][int(rows[0])], DATASET_INDEX: part}

    def __getitems__(self, indices: Sequence[int]) -> DatasetBatch:
        part, rows = self._locate(indices)
        return DatasetBatch(part, self.parts[part].__getitems__(rows.tolist()))


@dataclass
class DatasetBatch:
    """One batch's rows (row dicts or an Arrow table) and the position of the data set they come from."""

    index: int
    rows: list[dict[str, Any]] | pa.Table


@dataclass
class MultiDatasetCollator:
    """The pair collator on a `DatasetBatch`, adding `DATASET_INDEX` (one entry per row) to the batch."""

    collator: Callable[[Any], dict[str, torch.Tensor]]

    def __call__(self, features: DatasetBatch | Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        if isinstance(features, DatasetBatch):
            index, rows = features.index, features.rows
        else:  # row dicts from `MultiDatasetView.__getitem__`
            indices = {row[DATASET_INDEX] for row in features}
            if len(indices) != 1:
                raise ValueError(f"a batch mixes the data sets at positions {sorted(indices)}")
            index = indices.pop()
            rows = [{k: v for k, v in row.items() if k != DATASET_INDEX} for row in features]
        batch = self.collator(rows)
        first = next(iter(batch.values()))
        batch[DATASET_INDEX] = torch.full((first.shape[0],), index, dtype=torch.long)
        return batch


class NamedLosses:
    """The loss of each training data set: a dict name → loss naming each data set, or one loss for all."""

    def __init__(self, names: Sequence[str], loss: SiameseLoss | Mapping[str, SiameseLoss]) -> None:
        if isinstance(loss, Mapping):
            missing = [name for name in names if name not in loss]
            if missing:
                raise ValueError(f"the loss dict has no loss for the training data set {missing[0]!r}")
            unknown = [name for name in loss if name not in names]
            if unknown:
                raise ValueError(f"the loss dict names {unknown[0]!r}, which is no training data set ({list(names)})")
            self.by_name = {name: loss[name] for name in names}
        else:
            self.by_name = dict.fromkeys(names, loss)
        for name, value in self.by_name.items():
            if not isinstance(value, SiameseLoss):
                raise TypeError(
                    f"the loss of data set {name!r} must be a hfsiamese.losses.SiameseLoss, got {type(value).__name__}"
                )
        self.losses = list(self.by_name.values())

    def of_batch(self, inputs: Mapping[str, torch.Tensor]) -> SiameseLoss:
        """The loss of the data set this batch came from."""
        return self.losses[int(inputs[DATASET_INDEX].reshape(-1)[0])]


def multi_dataset_sampler(
    view: MultiDatasetView,
    *,
    batch_size: int,
    seed: int,
    strategy: str,
    weights: Mapping[str, float] | None,
    num_processes: int,
    no_duplicate_batches: bool,
    length_column: str | None,
) -> MultiDatasetSampler:
    """Batches of one data set at a time, each group-aware inside its data set (`training_sampler`) unless
    `no_duplicate_batches` is off (then plain shuffled batches, grouped by length when `length_column`)."""
    samplers = []
    for i, part in enumerate(view.datasets.values()):
        part_seed = int(np.random.SeedSequence([seed, i]).generate_state(1)[0])  # each data set its own order
        if no_duplicate_batches:
            sampler = training_sampler(part, batch_size=batch_size, seed=part_seed, length_column=length_column)
        else:
            lengths = pair_lengths(part, length_column) if length_column is not None else None
            sampler = NoDuplicateGroupSampler(np.arange(len(part)), batch_size, seed=part_seed, lengths=lengths)
        samplers.append(sampler)
    ordered = ordered_weights(view.names, weights, strategy)
    return MultiDatasetSampler(
        samplers,
        view.offsets[:-1].tolist(),
        batch_size,
        strategy=strategy,
        weights=ordered,
        names=view.names,
        seed=seed,
        num_processes=num_processes,
    )


def ordered_weights(names: Sequence[str], weights: Mapping[str, float] | None, strategy: str) -> list[float] | None:
    """The weights of the data sets `names`, in their order: each named once, positive, for proportional sampling."""
    if weights is None:
        return None
    missing = [name for name in names if name not in weights]
    unknown = [name for name in weights if name not in names]
    if missing or unknown:
        problem = f"no weight for {missing[0]!r}" if missing else f"a weight for {unknown[0]!r}, no such data set"
        raise ValueError(f"dataset_weights must name each training data set once: {problem}")
    check_weights(weights, strategy)
    return [float(weights[name]) for name in names]


def overall_eval_dataset(parts: Mapping[str, datasets.Dataset]) -> datasets.Dataset:
    """The evaluation data sets as one: the pair columns all of them hold, in the first one's types."""
    first = next(iter(parts.values()))
    columns = [
        c for c in first.column_names if c in PAIR_BATCH_COLUMNS and all(c in p.column_names for p in parts.values())
    ]
    features = first.select_columns(columns).features
    selected = [part.select_columns(columns) for part in parts.values()]
    return datasets.concatenate_datasets(
        [part if part.features == features else part.cast(features) for part in selected]
    )


__all__ = [
    "DATASET_INDEX",
    "DatasetBatch",
    "MultiDatasetCollator",
    "MultiDatasetView",
    "NamedLosses",
    "multi_dataset_sampler",
    "ordered_weights",
    "overall_eval_dataset",
]
