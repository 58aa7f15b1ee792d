"""
A run on several data sets (`train_datasets` in a `hfsiamese train` config), each with its own loss.

Each entry of `train_datasets` names one data set as the top-level data arguments would (`train_file` or
`dataset_name`, its columns, `validation_file`, `train_view`, ...), plus its `name`, its `loss` (default: the run's
`loss`) with that loss's options (default: the run's), and its `weight` for proportional sampling. What an entry does
not say it takes from the top-level data arguments. Each data set is split, grouped and viewed on its own
(`load_splits`, `training_view`); the trainer gets them as dicts (`SiameseTrainer` with several data sets).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets

from hfsiamese.data.multi_dataset_sampler import check_weights
from hfsiamese.losses import LOSS_OPTIONS, SiameseLoss, current_loss_name, get_loss, loss_kwargs_for
from hfsiamese.training.arguments import DataArguments
from hfsiamese.training.preparation import load_splits

if TYPE_CHECKING:
    from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments

# Top-level data arguments that say where one data set's pairs are: each entry says it for itself.
SOURCE_FIELDS = ("train_file", "dataset_name", "dataset_config_name", "validation_file", "silver_pairs_file")
ENTRY_KEYS = frozenset({"name", "loss", "weight"})


@dataclass
class TrainingDataset:
    """One entry of `train_datasets`: its name, its data arguments, its loss and options, its weight."""

    name: str
    data_args: DataArguments
    loss: str | None = None
    loss_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    weight: float | None = None

    def build_loss(self, training_args: SiameseTrainingArguments) -> SiameseLoss:
        """Its loss (else the run's `loss`), with its options over the run's; options it does not take are dropped."""
        name = current_loss_name(self.loss or training_args.loss)
        options = {**training_args.loss_options(), **self.loss_options}
        return get_loss(name, **loss_kwargs_for(name, **options))


def training_datasets(data_args: DataArguments) -> list[TrainingDataset]:
    """The entries of `data_args.train_datasets`, checked: a one-line error names the first problem."""
    entries = data_args.train_datasets
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, Mapping) for entry in entries):
        raise ValueError(
            "train_datasets must be a non-empty list of data sets, each a mapping (train_file: ..., loss: ...)"
        )
    given = [name for name in SOURCE_FIELDS if getattr(data_args, name)]
    if given:
        raise ValueError(
            f"with train_datasets, give {given[0]} inside the data set it belongs to, not at the top level"
        )
    data_fields = {f.name for f in dataclasses.fields(DataArguments)} - {"train_datasets"}
    parsed = []
    for number, entry in enumerate(entries, start=1):
        unknown = sorted(set(entry) - data_fields - ENTRY_KEYS - LOSS_OPTIONS)
        if unknown:
            raise ValueError(f"train_datasets entry {number}: unknown keys {unknown}")
        if not entry.get("train_file") and not entry.get("dataset_name"):
            raise ValueError(f"train_datasets entry {number}: give its train_file or dataset_name")
        values = {key: value for key, value in entry.items() if key in data_fields}
        entry_args = dataclasses.replace(data_args, train_datasets=None, **values)
        parsed.append(
            TrainingDataset(
                name=str(entry.get("name") or _default_name(entry_args)),
                data_args=entry_args,
                loss=entry.get("loss"),
                loss_options={key: value for key, value in entry.items() if key in LOSS_OPTIONS},
                weight=entry.get("weight"),
            )
        )
    names = [entry.name for entry in parsed]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"train_datasets: two data sets are named {repeated[0]!r}: give each its own `name`")
    weighted = [entry for entry in parsed if entry.weight is not None]
    if weighted and len(weighted) < len(parsed):
        unweighted = next(entry.name for entry in parsed if entry.weight is None)
        raise ValueError(f"train_datasets: give every data set a weight or none; {unweighted!r} has none")
    if weighted:
        check_weights({entry.name: entry.weight for entry in weighted}, "proportional")  # type: ignore[misc]
    return parsed


def dataset_weights(entries: list[TrainingDataset]) -> dict[str, float] | None:
    """The entries' weights by name, or None when they give none (proportional to their sizes)."""
    if entries[0].weight is None:
        return None
    return {entry.name: float(entry.weight) for entry in entries if entry.weight is not None}


def load_several_splits(entries: list[TrainingDataset]) -> dict[str, datasets.DatasetDict]:
    """Each data set's splits (training pairs with `group_id`, validation, test), made as a single run makes them."""
    return {entry.name: load_splits(entry.data_args) for entry in entries}


def combined_training_pairs(parts: Mapping[str, datasets.DatasetDict]) -> datasets.Dataset:
    """The training questions of every data set, as one set of pairs (a word vocabulary and the fingerprint read them)."""
    return datasets.concatenate_datasets(
        [splits["train"].select_columns(["question1", "question2"]) for splits in parts.values()]
    )


def _default_name(data_args: DataArguments) -> str:
    """A data set's name from where it comes from: the file's stem, or the Hub data set's name (and configuration)."""
    if data_args.dataset_name:
        name = data_args.dataset_name.rstrip("/").split("/")[-1]
        return f"{name}_{data_args.dataset_config_name}" if data_args.dataset_config_name else name
    return Path(str(data_args.train_file)).name.split(".")[0]


__all__ = [
    "TrainingDataset",
    "combined_training_pairs",
    "dataset_weights",
    "load_several_splits",
    "training_datasets",
]
