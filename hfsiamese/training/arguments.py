"""The training recipes' arguments: what to train and on which data, and what the model card says about them.

They live in the package, not in the scripts, so that the builder, the data preparation, benchmarks
and tests take the very same dataclasses the recipes parse (with `hfsiamese.cli.config_and_flags`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hfsiamese.base.model_arguments import ARCHITECTURES, ModelArguments
from hfsiamese.bi_encoder.model_card import local_card_license
from hfsiamese.data.negative_filters import NegativeFilters
from hfsiamese.data.splits import check_split_fractions
from hfsiamese.data.validation_sample import DEFAULT_MAX_EVAL_PAIRS
from hfsiamese.utils.deprecation import renamed_option, warn_deprecated
from hfsiamese.utils.minilm import MINILM_HUB_ID, resolve_minilm_path

# Named in the card when a run trains on the embedded pairs (no train_file, no dataset_name).
EMBEDDED_QQP_NAME = "Quora Question Pairs (the BiMPM dev part in recipes/data/qqp_dev.tsv)"


@dataclass
class DataArguments:
    """Where the pairs come from and how validation is split off."""

    _argument_group_name = "data: where the pairs come from and how validation is split off"  # a --help section

    train_file: str | None = field(default=None, metadata={"help": "Pair file (default: the embedded QQP pairs)."})
    train_datasets: list[dict[str, Any]] | str | None = field(
        default=None,
        metadata={
            "help": "Several data sets in one run, each with its own loss (a config's list; on the command line as JSON): "
            "each entry gives train_file or dataset_name, and may give name, loss (and its options), weight (for "
            "multi_dataset_sampling proportional), columns and any other data argument; the rest comes from the top level."
        },
    )
    dataset_name: str | None = field(
        default=None,
        metadata={
            "help": "A Hub data set of pairs instead of train_file, e.g. 'nyu-mll/glue' (loaded with load_dataset)."
        },
    )
    dataset_config_name: str | None = field(
        default=None, metadata={"help": "dataset_name: its configuration, e.g. 'qqp' (as transformers' examples)."}
    )
    dataset_split: str = field(default="train", metadata={"help": "dataset_name: the split to train on."})
    validation_file: str | None = field(
        default=None, metadata={"help": "Labelled validation pairs; default: split off train_file by duplicate group."}
    )
    silver_pairs_file: str | None = field(
        default=None,
        metadata={
            "help": "Silver pairs to train on besides the gold ones: training questions paired and labelled by a cross-encoder "
            "at its threshold (hfsiamese silver-pairs, JSON lines; hard 0/1 labels). A file with a pair holding a validation "
            "or test question is refused; pairs repeating a gold training pair are dropped; max_train_pairs limits the gold "
            "pairs only."
        },
    )
    teacher_scores_file: str | None = field(
        default=None,
        metadata={
            "help": "Rows a teacher scored, which the losses on its scores (margin_mse, listwise_kl) train on instead of "
            "the pairs (the teacher_scores view): JSON lines (or .json, .parquet) of question1 (the query), question2 "
            "(its positive), negative (a list of texts) and teacher_scores ([score(q,p), score(q,n1), ...]), every row "
            "as many negatives. Validation still comes from the pairs; a row holding a validation or test question is "
            "refused."
        },
    )
    data_format: str | None = field(
        default=None, metadata={"help": "Force a format (see hfsiamese.data.PAIR_FORMATS)."}
    )
    question1_column: str | None = field(default=None, metadata={"help": "Column of the first texts."})
    question2_column: str | None = field(default=None, metadata={"help": "Column of the second texts."})
    label_column: str | None = field(default=None, metadata={"help": "Column of the 0/1 labels."})
    id1_column: str | None = field(default=None, metadata={"help": "Column of the first texts' ids (optional)."})
    id2_column: str | None = field(default=None, metadata={"help": "Column of the second texts' ids (optional)."})
    validation_fraction: float = field(default=0.1, metadata={"help": "Share of pairs split off for validation."})
    test_fraction: float = field(
        default=0.0,
        metadata={
            "help": "Share of pairs also split off as a test side (by question), scored at the end at the calibrated threshold."
        },
    )
    train_view: str = field(
        default="auto",
        metadata={
            "help": "Training rows: 'duplicate_pairs' (label-1 pairs), 'group_pairs' (all pairs within each duplicate group), "
            "'labelled_pairs' (duplicates and non-duplicates), 'triplets' (negatives from labelled non-duplicates, "
            "mined with the initial model where a pair's group has none), "
            "'mined_triplets' (negatives mined with the initial model), 'teacher_scores' (the rows of "
            "teacher_scores_file), or 'auto': what the loss needs (labelled losses: labelled_pairs; triplet: "
            "mined_triplets; margin_mse, listwise_kl: teacher_scores; others: duplicate_pairs)."
        },
    )
    mining_max_rank: int = field(
        default=50,
        metadata={"help": "mined_triplets, triplets: look no further than this rank (hfsiamese mine's --max_rank)."},
    )
    mining_top_k: int | None = field(default=None, metadata={"help": "Deprecated: use --mining_max_rank."})
    mining_margin: float = field(
        default=0.05,
        metadata={"help": "mined_triplets: drop candidates above s(anchor, positive) − margin (false negatives)."},
    )
    mining_relative_margin: float | None = field(
        default=0.05,
        metadata={
            "help": "mined_triplets: also drop candidates above s(anchor, positive) · (1 − relative margin); "
            "none to switch off."
        },
    )
    mining_skip_top: int = field(
        default=0,
        metadata={"help": "mined_triplets: skip this many nearest candidates (likely unlabelled duplicates)."},
    )
    max_pairs_per_group: int | None = field(default=None, metadata={"help": "train_view=group_pairs: cap per group."})
    split_seed: int = field(default=42, metadata={"help": "Seed of the train/validation split."})
    max_train_pairs: int | None = field(default=None, metadata={"help": "Use at most this many training pairs."})
    max_eval_pairs: int | None = field(
        default=DEFAULT_MAX_EVAL_PAIRS,
        metadata={
            "help": "Evaluate and calibrate the threshold on at most this many validation pairs: a larger validation set "
            "is sampled, stratified by label, with split_seed (the same pairs in every run with that seed), during "
            "training and after it; the summary says how many of how many. 0: all of them."
        },
    )
    preprocessing_num_workers: int | None = field(
        default=None,
        metadata={
            "help": "Processes for tokenisation (and for hashing questions and writing shards when preparing; "
            "`hfsiamese prepare` uses every core by default)."
        },
    )
    tokenize_in_collator: bool | None = field(
        default=None,
        metadata={
            "help": "Tokenise the training pairs batch by batch in the collator (as sentence-transformers does) rather "
            "than all of them before the first step: the same token lists, so the same batches and losses, but no "
            "up-front pass (minutes per million pairs) and no tokenised copy on disk. Default: on when training from a "
            "prepared folder (`hfsiamese prepare`, --prepare_data), off otherwise. Grouping by length needs it off."
        },
    )
    prepare_data: bool = field(
        default=False,
        metadata={
            "help": "Prepare train_file once, out of core (as `hfsiamese prepare` does), into a folder of the datasets "
            "cache named by the file's fingerprint and the data options, and train from it: a later run on the same "
            "file and options skips the reading, de-duplication, split and grouping. A train_file that is a prepared "
            "folder is read as one without it."
        },
    )

    def __post_init__(self) -> None:
        renamed_option(self, "mining_top_k", "mining_max_rank")
        try:  # the rule mining applies, checked here rather than after the model and the data are loaded
            NegativeFilters(
                skip_top=self.mining_skip_top,
                max_rank=self.mining_max_rank,
                margin=self.mining_margin,
                relative_margin=self.mining_relative_margin,
            )
        except ValueError as err:
            raise ValueError(f"--mining_* options: {err}") from None
        if self.max_train_pairs is not None and self.max_train_pairs < 1:  # else "the data set has no pairs"
            raise ValueError(f"max_train_pairs must be at least 1 (or unset), got {self.max_train_pairs}")
        if self.max_eval_pairs is not None and self.max_eval_pairs < 0:  # else said once the pairs are split
            raise ValueError(f"max_eval_pairs must be 0 (all pairs) or more, got {self.max_eval_pairs}")
        if not self.validation_file:  # the fractions split off the validation (and test) side; else unused
            check_split_fractions(self.validation_fraction, self.test_fraction)
        if self.split_seed < 0:  # numpy's own words: "expected non-negative integer"
            raise ValueError(f"split_seed must be a non-negative integer, got {self.split_seed}")
        if self.preprocessing_num_workers is not None and self.preprocessing_num_workers < 1:  # datasets' num_proc
            raise ValueError(
                f"preprocessing_num_workers must be at least 1 (or unset), got {self.preprocessing_num_workers}"
            )
        if isinstance(self.train_datasets, str):  # from the command line
            try:
                self.train_datasets = json.loads(self.train_datasets)
            except json.JSONDecodeError as err:
                raise ValueError(f"--train_datasets must be a JSON list of data sets: {err}") from None
        # `--dataset_name owner/name:config`, the old spelling, kept for one release.
        if self.dataset_name and ":" in self.dataset_name:
            name, _, config = self.dataset_name.partition(":")
            if self.dataset_config_name not in (None, config):
                raise ValueError(
                    f"--dataset_name {self.dataset_name} names configuration {config!r}, --dataset_config_name "
                    f"{self.dataset_config_name!r}: pass --dataset_name {name} --dataset_config_name <config>"
                )
            warn_deprecated(
                "option",
                "--dataset_name owner/name:config",
                said_old=f"--dataset_name {self.dataset_name}",
                said_new=f"--dataset_name {name} --dataset_config_name {config}",
                stacklevel=4,
            )
            self.dataset_name, self.dataset_config_name = name, config
        elif self.dataset_config_name and not self.dataset_name:
            raise ValueError("--dataset_config_name needs --dataset_name")

    @property
    def dataset_source(self) -> str | None:
        """`dataset_name` as hfsiamese's loaders read a Hub data set: `owner/name`, or `owner/name:config`."""
        if not self.dataset_name:
            return None
        return f"{self.dataset_name}:{self.dataset_config_name}" if self.dataset_config_name else self.dataset_name


def model_card_kwargs(model_args: ModelArguments, data_args: DataArguments) -> dict[str, Any]:
    """What the model card says about the run beyond what the trainer knows: data, base model, license, arguments."""
    if data_args.train_datasets:
        data: dict[str, Any] = dict(dataset=[str(entry.get("name") or entry.get("train_file") or entry.get("dataset_name"))
                                             for entry in data_args.train_datasets])  # fmt: skip
    elif data_args.dataset_name:
        data = dict(
            dataset=data_args.dataset_source,
            dataset_tags=data_args.dataset_name,
            dataset_args=data_args.dataset_config_name,
        )
    elif data_args.train_file:
        data = dict(dataset=Path(data_args.train_file).name)
    else:
        data = dict(dataset=EMBEDDED_QQP_NAME, dataset_tags="quora", language="en")
    if model_args.model_name_or_path or model_args.encoder_type == "transformer":
        base = model_args.model_name_or_path or MINILM_HUB_ID
        license = local_card_license(model_args.model_name_or_path or resolve_minilm_path())
    else:
        base, license = (None, "apache-2.0")  # weights trained from scratch by this Apache-2.0 recipe
    arguments = {}
    for args in (model_args, data_args):
        defaults = type(args)()
        arguments.update({k: v for k, v in vars(args).items() if v is not None and v != getattr(defaults, k)})
    return dict(**data, finetuned_from=base, license=license, arguments=arguments,
                sentence_transformers_path=model_args.export_sentence_transformers)  # fmt: skip


# ModelArguments (with ARCHITECTURES) lives below both families, which build from it; a run takes it from here too.
__all__ = ["ARCHITECTURES", "EMBEDDED_QQP_NAME", "DataArguments", "ModelArguments", "model_card_kwargs"]
