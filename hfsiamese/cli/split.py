"""`hfsiamese split`: write the pairs a training recipe held out (its validation or test split), to evaluate on them.

    hfsiamese split --output_file outputs/qqp_validation.jsonl               # the default recipe's validation pairs
    hfsiamese split minilm_qqp --output_file outputs/qqp_test.jsonl --split test
    hfsiamese split --train_file pairs.csv --validation_fraction 0.05 --output_file outputs/my_validation.jsonl

The split is recomputed with the package's `load_splits`, as `hfsiamese train` makes it, from the data settings of
the config (a shipped name or a file; default: the LSTM recipe's, whose split the QQP recipes share) and the data
flags after it, so the rows are exactly the ones that run validated (and calibrated its threshold) on, none of whose
questions it trained on. Pass the run's own config and data flags. Written as JSON lines (`question1`, `question2`,
`label`, plus `qid1`/`qid2` when the source has them), which `hfsiamese evaluate --test_file` reads. Prints one JSON
line: the file, the split, its pairs and duplicates.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hfsiamese.cli.command_line import UsageError, run_recipe
from hfsiamese.cli.configs import (
    DEFAULT_CONFIG,
    require_training_data,
)
from hfsiamese.cli.data_command import data_command_arguments, json_lines_output
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.utils.console import configure_quiet_console

DESCRIPTION = "Write the pairs a training recipe held out (validation or test), as JSON lines; a config may come first."
SPLITS = ("train", "validation", "test")
KEPT_COLUMNS = ("question1", "question2", "label", "qid1", "qid2")


@dataclass
class SplitArguments:
    """Which split `hfsiamese split` writes, and where."""

    _argument_group_name = "split: which split to write, and where"  # a --help section (HfArgumentParser)

    output_file: str = field(
        metadata={"help": "JSON-lines file to write (.jsonl); refused if it exists, unless --overwrite_output_file."}
    )
    split: str = field(
        default="validation",
        metadata={
            "help": "The split to write: validation (the held-out pairs), test (with test_fraction) or train.",
            "choices": SPLITS,
        },
    )
    overwrite_output_file: bool = field(default=False, metadata={"help": "Replace an existing output_file."})


def held_out_command(argv: Sequence[str], default_config: str | Path, output_file: str = "HELD_OUT_PAIRS.jsonl") -> str:
    """
    The `hfsiamese split` command that writes the pairs a training command line (`argv`, as typed) held out: its
    config (or `default_config`, the training command's default, when that is not split's own) and its data flags.
    """
    from hfsiamese.training.arguments import DataArguments

    data_flags = {f"--{f.name}" for f in fields(DataArguments)}
    words = ["hfsiamese", "split"]
    if argv and not argv[0].startswith("-"):
        words.append(argv[0])
    elif Path(default_config).resolve() != DEFAULT_CONFIG.resolve():
        words.append(Path(default_config).stem)
    for index, arg in enumerate(argv):
        flag = arg.split("=", 1)[0]
        if flag in data_flags:
            # a boolean flag (`--prepare_data`) may come without a value: the next flag is not its value
            no_value = "=" in arg or index + 1 >= len(argv) or argv[index + 1].startswith("--")
            value = [] if no_value else [argv[index + 1]]
            words += [arg, *value]
    return shlex.join([*words, "--output_file", output_file])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """`hfsiamese split [CONFIG] [data flags] --output_file PAIRS.jsonl [--split test]`: a summary (printed)."""
    parsed = data_command_arguments(
        SplitArguments, argv, command="hfsiamese split", description=DESCRIPTION, default_config=DEFAULT_CONFIG
    )
    if parsed is None:
        return {}
    data_args, args = parsed
    configure_quiet_console()
    output = json_lines_output(args.output_file, overwrite=args.overwrite_output_file, holding="the pairs")
    default_train_file = require_training_data(data_args.train_file, data_args.dataset_name)

    import datasets

    from hfsiamese.training.preparation import load_splits

    datasets.utils.logging.disable_progress_bar()
    splits = load_splits(data_args, default_train_file=default_train_file)
    if args.split not in splits:
        raise UsageError(
            f"the config makes no {args.split!r} split (it makes {', '.join(sorted(splits))}; a test split needs test_fraction)"
        )
    pairs = splits[args.split]
    pairs = pairs.remove_columns([name for name in pairs.column_names if name not in KEPT_COLUMNS])
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")  # a run stopped while writing leaves no half file behind
    pairs.to_json(str(partial), lines=True, force_ascii=False)
    os.replace(partial, output)
    summary = {"file": str(output), "split": args.split, "pairs": len(pairs), "duplicates": int(sum(pairs["label"]))}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
