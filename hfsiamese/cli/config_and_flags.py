"""A recipe's command line: a YAML/JSON config given first, flags after it overriding it (as in the Hugging Face
examples), every mistake a `UsageError` that names it."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.command_parser import CommandParser

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Read a flat YAML or JSON mapping of argument names to values."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        values = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise UsageError(f"cannot parse config file {path}: {err}") from err
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise UsageError(f"config file {path} must hold a mapping of argument names to values")
    return values


def parse_config_and_flags(
    parser: CommandParser, argv: Sequence[str] | None = None, *, default_config: str | Path | None = None
) -> tuple[Any, ...]:
    """
    Parse `[config.yaml] [--flag value ...]` into the parser's dataclasses.

    The config's values become the parser's defaults, so any flag given after it wins. Keys that no
    dataclass knows are an error naming them (a typo in a config must not be silently ignored).
    With no config given, `default_config` (if any) is used. Flags must be spelled out: argparse's
    prefix matching would take `--max_step` for `--max_steps` (or a future flag's prefix for another).
    A mistake on the command line or in the config raises `UsageError` (exit status 2 in a recipe).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser.allow_abbrev = False
    parser.error = _raise_usage_error  # argparse would print its (200-flag) usage and exit
    config_path = config_file_of(argv, default_config)
    if argv and not argv[0].startswith("-"):
        argv.pop(0)
    if config_path is not None:
        values = read_config_file(config_path)
        known = {action.dest for action in parser._actions}
        unknown = sorted(set(values) - known)
        if unknown:
            raise UsageError(f"unknown keys in {config_path}: {unknown}")
        # argparse applies `type` to string defaults only; YAML gives typed values already.
        parser.set_config_defaults(values, Path(config_path).name)  # its help names the config that set them
    try:
        *parsed, remaining = parser.parse_args_into_dataclasses(
            args=argv, look_for_args_file=False, return_remaining_strings=True
        )
    except UsageError:
        raise
    except (TypeError, ValueError) as err:  # a dataclass refusing a value or a combination of values
        raise UsageError(str(err)) from err
    if remaining:
        raise UsageError(f"unrecognized arguments: {' '.join(remaining)}")
    return tuple(parsed)


def config_file_of(argv: Sequence[str], default_config: str | Path | None = None) -> str | None:
    """The config file a command line uses: its first argument when that is not a flag, else `default_config`."""
    if argv and not argv[0].startswith("-"):
        if not argv[0].endswith(CONFIG_SUFFIXES):
            raise UsageError(f"the first argument must be a config file ({'/'.join(CONFIG_SUFFIXES)}), got {argv[0]!r}")
        return argv[0]
    return str(default_config) if default_config is not None else None


def value_given(name: str, argv: Sequence[str], config_file: str | Path | None) -> bool:
    """Whether `--name` is on the command line or `name` in the config: set by the user, not a default."""
    flag = f"--{name}"
    on_command_line = any(arg == flag or arg.startswith(flag + "=") for arg in argv)
    return on_command_line or (config_file is not None and name in read_config_file(config_file))


def default_config_of(argv: list[str], default_config: str | Path, *, pretrained_config: str | Path) -> str | Path:
    """
    The config a training command line without a config file starts from: `pretrained_config` (the MiniLM
    recipe's training settings, the model's own pooling and length) when `--model_name_or_path` names a
    pretrained model to start from (and `--encoder_type` is left out or "transformer"), else `default_config`.
    """
    path = flag_value("model_name_or_path", argv)
    if (
        config_file_of(argv) is not None
        or path is None
        or flag_value("encoder_type", argv) not in (None, "transformer")
    ):
        return default_config
    from hfsiamese.bi_encoder.model_building import is_base_encoder  # reads the model's config: only when it matters

    return pretrained_config if is_base_encoder(path) else default_config


def flag_value(name: str, argv: Sequence[str]) -> str | None:
    """The value of `--name` on the command line (`--name value` or `--name=value`; the last one wins), or None."""
    flag, value = f"--{name}", None
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1 :]
    return value


def _raise_usage_error(message: str) -> None:
    raise UsageError(message)


__all__ = [
    "CONFIG_SUFFIXES",
    "config_file_of",
    "default_config_of",
    "flag_value",
    "parse_config_and_flags",
    "read_config_file",
    "value_given",
]
