"""
The command line of a command that reads a training config for its data settings only (`hfsiamese silver-pairs`,
`hfsiamese split`): the config is read as `hfsiamese train` reads it, so its data settings make the very same split;
its model and training settings are known (a recipe config parses) and left unused, and given as flags they are
refused by name. Both write JSON lines to an `--output_file` checked alike (`json_lines_output`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cli.configs import config_listing, listing_requested, resolve_config_argument


def parse_data_command(
    own: type,
    argv: Sequence[str] | None = None,
    *,
    command: str,
    description: str | None = None,
    default_config: str | Path | None = None,
) -> tuple[Any, Any]:
    """
    `command [CONFIG] [--flag value ...]` parsed into (`DataArguments`, `own`): a training recipe's config, then the
    data flags and `own`'s flags. A training setting given as a flag is a `UsageError` naming it and `command`.
    """
    from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
    from hfsiamese.cli.command_parser import command_parser
    from hfsiamese.distillation.arguments import DistillationArguments
    from hfsiamese.training.arguments import DataArguments, ModelArguments

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = command_parser((DataArguments, own), prog=command, description=description)
    known = {action.dest for action in parser._actions}
    training = sorted(
        {
            f.name
            for kind in (ModelArguments, SiameseTrainingArguments, DistillationArguments)
            for f in fields(kind)
            if f.init
        }
        - known
    )
    given = [
        f"--{name}" for name in training if any(arg == f"--{name}" or arg.startswith(f"--{name}=") for arg in argv)
    ]
    if given:
        raise UsageError(f"{', '.join(given)}: training settings; {command} takes only data settings and its own")
    for name in training:  # known, so that a recipe config holding them parses; never used
        parser.add_argument(f"--{name}", dest=name, default=None, nargs="*", help=argparse.SUPPRESS)
    data_args, own_args, *_ = parse_config_and_flags(parser, argv, default_config=default_config)
    return data_args, own_args


def data_command_arguments(
    own: type, argv: Sequence[str] | None, *, command: str, description: str, default_config: str | Path
) -> tuple[Any, Any] | None:
    """
    The opening of a data command's `main`: None where the shipped configs were asked for (`--list_configs`: printed),
    else the (`DataArguments`, `own`) of `parse_data_command`, the config named as `hfsiamese train` names it.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if listing_requested(argv):
        print(config_listing())
        return None
    return parse_data_command(
        own, resolve_config_argument(argv), command=command, description=description, default_config=default_config
    )


JSON_LINES_SUFFIXES = (".jsonl", ".json")


def json_lines_output(output_file: str, *, overwrite: bool, holding: str) -> Path:
    """
    The `--output_file` a data command writes `holding` to as JSON lines: a .jsonl (or .json) name that is no
    directory, and no existing file unless `overwrite` (`--overwrite_output_file`); anything else raises.
    """
    output = Path(output_file)
    if output.suffix not in JSON_LINES_SUFFIXES:
        raise UsageError(f"--output_file {output} must end in .jsonl: {holding} are written as JSON lines")
    if output.is_dir():
        raise ValueError(f"--output_file {output} is a directory")
    if output.exists() and not overwrite:
        raise FileExistsError(f"{output} exists: pass --overwrite_output_file to replace it")
    return output


__all__ = ["JSON_LINES_SUFFIXES", "data_command_arguments", "json_lines_output", "parse_data_command"]
