"""`hfsiamese prepare`: a pair file read, de-duplicated, split and grouped once, out of core, into a folder of Arrow
shards that `hfsiamese train --train_file <folder>` trains from without doing any of it again.

    hfsiamese prepare --train_file pairs.tsv --output_dir prepared/pairs            # the default recipe's split
    hfsiamese prepare minilm_qqp --train_file pairs.tsv --output_dir prepared/pairs # a config's data settings
    hfsiamese train lstm_qqp --train_file prepared/pairs                            # then train from it
    hfsiamese prepare --train_file pairs.tsv --output_dir /shared/prepared --engine ray --ray_address auto

The data settings come as `hfsiamese train` reads them (a config first, then data flags: `--validation_fraction`,
`--test_fraction`, `--split_seed`, the column flags), so the folder holds that run's very split, duplicate groups and
rows; what that run would derive from its rows is derived too and kept there (the split report, the training
questions' fingerprint, and for a config whose encoder learns its word vocabulary from the data, LSTM or static, that
vocabulary), so that the first `train` starts as the second. A run killed while preparing is resumed by the same
command (finished shards are kept); an `--output_dir` that holds anything else needs `--overwrite_output_dir`. Prints
one JSON line: the folder and its counts.

`--engine ray` (the `ray` extra) hashes the questions and writes the shards as Ray tasks, on a local Ray (started for
the command, `--preprocessing_num_workers` CPUs) or on the cluster at `--ray_address`, whose nodes must all see
`--output_dir` at the same path; the folder is the same, byte for byte, as the local engine's.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hfsiamese.cli.command_line import UsageError, run_recipe
from hfsiamese.cli.config_and_flags import config_file_of, read_config_file
from hfsiamese.cli.configs import (
    DEFAULT_CONFIG,
    require_training_data,
    resolve_config_argument,
)
from hfsiamese.cli.data_command import data_command_arguments
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.preparation.prepare import ENGINES

if TYPE_CHECKING:
    from hfsiamese.base.model_arguments import ModelArguments

DESCRIPTION = "Prepare a pair file once (read, de-duplicate, split, group) into Arrow shards that train reads."


@dataclass
class PrepareArguments:
    """Where `hfsiamese prepare` writes, and how."""

    _argument_group_name = "prepare: where the prepared folder goes"  # a --help section (HfArgumentParser)

    output_dir: str = field(
        metadata={"help": "Folder to write (shards and manifest.json); resumed when it holds this same preparation."}
    )
    overwrite_output_dir: bool = field(
        default=False, metadata={"help": "Replace an output_dir that holds anything else than this preparation."}
    )
    shard_pairs: int = field(default=250_000, metadata={"help": "Pairs per Arrow shard (a kill loses one at most)."})
    engine: str = field(
        default="local",
        metadata={
            "help": "Where the questions are hashed and the shards written: local processes, or Ray tasks (the ray "
            "extra); the same folder either way.",
            "choices": ENGINES,
        },
    )
    ray_address: str | None = field(
        default=None,
        metadata={
            "help": "With --engine ray: the cluster to run on ('auto', 'ray://head:10001'); its nodes must all see "
            "--output_dir at the same path. Default: a local Ray started for the command."
        },
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """`hfsiamese prepare [CONFIG] [data flags] --output_dir FOLDER`: the manifest's counts (printed as one line)."""
    parsed = data_command_arguments(
        PrepareArguments, argv, command="hfsiamese prepare", description=DESCRIPTION, default_config=DEFAULT_CONFIG
    )
    if parsed is None:
        return {}
    data_args, args = parsed
    if data_args.dataset_name:
        raise UsageError("hfsiamese prepare reads a --train_file; a Hub data set (--dataset_name) is not prepared")
    for name in ("validation_file", "silver_pairs_file"):
        if getattr(data_args, name):
            raise UsageError(f"--{name}: hfsiamese prepare splits --train_file itself; train with it from the file")
    train_file = data_args.train_file or require_training_data(None, None)

    from hfsiamese.preparation import PreparationOptions, prepare_pairs

    manifest = prepare_pairs(
        str(train_file),
        args.output_dir,
        PreparationOptions.from_data_args(data_args),
        num_proc=preparation_processes(data_args.preprocessing_num_workers),
        shard_pairs=args.shard_pairs,
        overwrite_output_dir=args.overwrite_output_dir,
        engine=args.engine,
        ray_address=args.ray_address,
    )
    from hfsiamese.training.preparation import derive_first_run_values
    from hfsiamese.training.run_start import run_family

    # What the first `train` from the folder would derive from its rows, derived now: it starts as the second.
    train_pairs = derive_first_run_values(data_args, args.output_dir)
    model_args = config_model_arguments(argv)
    run_family(model_args.architecture).derive_from_pairs(model_args, train_pairs)
    summary = {"output_dir": args.output_dir, **manifest["counts"]}
    print(json.dumps(summary))
    return summary


def config_model_arguments(argv: list[str] | None) -> ModelArguments:
    """The model settings of the config the command line names (or the default recipe's): the run `train` starts
    with that config, whose word vocabulary (LSTM, static encoder) `prepare` builds too. Model flags are `train`'s,
    refused here, so the config is all there is."""
    from transformers import HfArgumentParser

    from hfsiamese.base.model_arguments import ModelArguments

    config = config_file_of(resolve_config_argument(sys.argv[1:] if argv is None else argv), DEFAULT_CONFIG)
    values = read_config_file(config) if config is not None else {}
    (model_args,) = HfArgumentParser(ModelArguments).parse_dict(values, allow_extra_keys=True)
    return model_args


def preparation_processes(asked: int | None) -> int:
    """The processes `prepare` hashes and writes with: `--preprocessing_num_workers`, else every core this process may
    use (the folder is the same byte for byte whatever the count; one process left a 2-core machine half idle)."""
    from hfsiamese.utils.cpu_threads import available_cores

    return available_cores() if asked is None else asked


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
