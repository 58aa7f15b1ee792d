"""Recipe arguments: a YAML/JSON config given first, flags after it overriding it (HF examples style)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from transformers import HfArgumentParser

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
        raise ValueError(f"cannot parse config file {path}: {err}") from err
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ValueError(f"config file {path} must hold a mapping of argument names to values")
    return values


def parse_config_and_flags(
    parser: HfArgumentParser, argv: Sequence[str] | None = None, *, default_config: str | Path | None = None
) -> tuple[Any, ...]:
    """
    Parse `[config.yaml] [--flag value ...]` into the parser's dataclasses.

    The config's values become the parser's defaults, so any flag given after it wins. Keys that no
    dataclass knows are an error naming them (a typo in a config must not be silently ignored).
    With no config given, `default_config` (if any) is used.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    config_path = None
    if argv and not argv[0].startswith("-"):
        config_path = argv.pop(0)
        if not config_path.endswith(CONFIG_SUFFIXES):
            raise ValueError(f"the first argument must be a config file ({'/'.join(CONFIG_SUFFIXES)}), got {config_path!r}")
    elif default_config is not None:
        config_path = str(default_config)
    if config_path is not None:
        values = read_config_file(config_path)
        known = {action.dest for action in parser._actions}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown keys in {config_path}: {unknown}")
        # argparse applies `type` to string defaults only; YAML gives typed values already.
        parser.set_defaults(**values)
        # Required arguments satisfied by the config must no longer be demanded on the command line.
        for action in parser._actions:
            if action.dest in values:
                action.required = False
    return parser.parse_args_into_dataclasses(args=argv, look_for_args_file=False)
