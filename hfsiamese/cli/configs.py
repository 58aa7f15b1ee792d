"""
The configs shipped in the package (`hfsiamese/configs/`: training recipes; `configs/accelerate/`: launcher files),
found by name, so that an installed `hfsiamese train minilm_qqp` needs no clone; and the embedded QQP pairs, which
keep their own licence and are not in the package: found in a clone, else the user is told what to pass.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.config_and_flags import CONFIG_SUFFIXES

CONFIGS_DIR = Path(__file__).resolve().parents[1] / "configs"
ACCELERATE_DIR = CONFIGS_DIR / "accelerate"
DEFAULT_CONFIG = CONFIGS_DIR / "lstm_qqp.yaml"  # `hfsiamese train` with no config: the LSTM recipe
PRETRAINED_CONFIG = CONFIGS_DIR / "pretrained_qqp.yaml"  # ... or, for `--model_name_or_path PRETRAINED`, this one
DISTILL_CONFIG = CONFIGS_DIR / "lstm_distilled_qqp.yaml"
# The embedded QQP pairs, where a clone of the repository has them (never in the wheel: Quora's terms, not Apache-2.0).
EMBEDDED_PAIRS = Path("recipes") / "data" / "qqp_dev.tsv"
LIST_FLAGS = ("--list-configs", "--list_configs")


def shipped_configs(folder: Path = CONFIGS_DIR) -> dict[str, Path]:
    """The shipped configs of `folder` by name (the file's stem), sorted."""
    return {path.stem: path for path in sorted(folder.glob("*.yaml"))}


def description(path: Path) -> str:
    """A config's one-line description: its first line, a comment (empty when it has none)."""
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    return first.lstrip("#").strip() if first.startswith("#") else ""


def config_listing() -> str:
    """What `--list-configs` prints: each training config with its description, then the launcher files' paths."""
    lines = ["Training configs (hfsiamese train NAME, or a path to your own .yaml):"]
    configs = shipped_configs()
    width = max(map(len, configs))
    lines += [f"  {name:<{width}}  {description(path)}" for name, path in configs.items()]
    lines.append(
        'Launcher configs (accelerate launch --config_file "$(hfsiamese configs --path NAME)" -m hfsiamese.cli.train ...):'
    )
    launchers = shipped_configs(ACCELERATE_DIR)
    width = max(map(len, launchers))
    lines += [f"  {name:<{width}}  {path}" for name, path in launchers.items()]
    return "\n".join(lines)


def resolve_config(name_or_path: str) -> str:
    """
    A config argument as a file: a path that exists (or ends in .yaml/.yml/.json) is the user's own and kept;
    a bare name (`minilm_qqp`, `minilm_qqp.yaml`) is a shipped config; anything else is a one-line error naming
    the shipped configs.
    """
    path = Path(name_or_path)
    if path.is_file():
        return name_or_path
    shipped = shipped_configs()
    stem = path.stem if path.suffix in CONFIG_SUFFIXES else path.name
    if path.parent == Path(".") and stem in shipped:
        return str(shipped[stem])
    if path.suffix in CONFIG_SUFFIXES:
        return name_or_path  # the user's own path: read (and refused if missing) as before
    raise UsageError(
        f"the first argument must be a config file ({'/'.join(CONFIG_SUFFIXES)}) or a shipped config: one of "
        f"{', '.join(shipped)} (hfsiamese train --list-configs describes them), got {name_or_path!r}"
    )


def resolve_config_argument(argv: Sequence[str]) -> list[str]:
    """`argv` with its first argument, when it is a config (not a flag), resolved by `resolve_config`."""
    argv = list(argv)
    if argv and not argv[0].startswith("-"):
        argv[0] = resolve_config(argv[0])
    return argv


def listing_requested(argv: Sequence[str]) -> bool:
    """Whether the command line asks for the shipped configs (`--list-configs`) instead of a run."""
    return any(arg in LIST_FLAGS for arg in argv)


def config_path(name: str) -> Path:
    """The file of a shipped config, training or launcher, by name (a one-line error naming them all otherwise)."""
    shipped = {**shipped_configs(ACCELERATE_DIR), **shipped_configs()}
    stem = name[: -len(Path(name).suffix)] if Path(name).suffix in CONFIG_SUFFIXES else name
    if stem not in shipped:
        raise UsageError(f"no shipped config {name!r}: one of {', '.join(sorted(shipped))}")
    return shipped[stem]


def main(argv: Sequence[str] | None = None) -> str:
    """`hfsiamese configs [--path NAME]`: the shipped configs described, or the file of one (for `--config_file`)."""
    parser = argparse.ArgumentParser(prog="hfsiamese configs", description="The configs shipped with hfsiamese.")
    parser.add_argument(
        "--path", metavar="NAME", help="Print only the file of this shipped config (training or launcher)."
    )
    args = parser.parse_args(argv)
    text = str(config_path(args.path)) if args.path else config_listing()
    print(text)
    return text


def embedded_pairs(start: Path | None = None) -> Path | None:
    """
    The embedded QQP pairs (`recipes/data/qqp_dev.tsv`) of the clone this package runs from, or of the current
    folder when it is a clone; None for an installed package run elsewhere.
    """
    for root in (Path(__file__).resolve().parents[2], Path.cwd() if start is None else start):
        if (root / EMBEDDED_PAIRS).is_file():
            return root / EMBEDDED_PAIRS
    return None


def require_training_data(train_file: str | None, dataset_name: str | None) -> Path | None:
    """
    The default training file for a run given neither `--train_file` nor `--dataset_name`: the embedded pairs, or
    a one-line error saying what to pass where they are not (an installed package outside a clone).
    """
    if train_file or dataset_name:
        return None
    found = embedded_pairs()
    if found is None:
        raise UsageError(
            "no training data: pass --train_file PAIRS (csv/tsv/json/jsonl/parquet) or --dataset_name nyu-mll/glue:qqp; "
            f"the embedded QQP pairs ({EMBEDDED_PAIRS}) come only with a clone of the repository"
        )
    return found


__all__ = [
    "ACCELERATE_DIR",
    "CONFIGS_DIR",
    "DEFAULT_CONFIG",
    "DISTILL_CONFIG",
    "PRETRAINED_CONFIG",
    "config_listing",
    "config_path",
    "description",
    "embedded_pairs",
    "listing_requested",
    "require_training_data",
    "resolve_config",
    "resolve_config_argument",
    "shipped_configs",
]


if __name__ == "__main__":
    from hfsiamese.cli.command_line import run_recipe
    from hfsiamese.cpu_policy import apply_command_defaults

    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
