"""The `hfsiamese` command: `hfsiamese <command> [arguments]` runs that command's module (`hfsiamese.cli.<module>`).

Each command's arguments are its own (`hfsiamese <command> --help` lists them, grouped as its dataclasses); this
module only picks the command. One process runs it; several processes (GPUs, or CPU processes) are started by
`accelerate launch -m hfsiamese.cli.<module> ...` (e.g. `accelerate launch -m hfsiamese.cli.train minilm_qqp`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from hfsiamese.cli.command_line import DEBUG_FLAG, run_recipe
from hfsiamese.cpu_policy import apply_command_defaults

# command → (module under hfsiamese.cli, what it does)
COMMANDS: dict[str, tuple[str, str]] = {
    "prepare": ("prepare", "prepare a pair file once, out of core (split, groups), into shards train reads"),
    "train": ("train", "train a bi-encoder or a cross-encoder (a config by name or path, then flags)"),
    "distill": ("distill", "distil a fine-tuned teacher into a fast CPU student (LSTM or static)"),
    "evaluate": ("evaluate", "score a model on labelled pairs (one JSON object; --report_dir for plots)"),
    "calibrate": ("calibrate", "recalibrate a model's decision on a new domain into a new folder"),
    "export": ("export", "export a model to ONNX or OpenVINO for CPU serving (optionally int8)"),
    "search": ("search", "search a corpus for duplicates of new questions (builds or loads an index)"),
    "app": ("app", "serve a duplicate-search web app for a corpus (Gradio)"),
    "serve": ("serve", "serve duplicate detection over HTTP: search, check, add, groups (JSON API)"),
    "groups": ("groups", "group a corpus's duplicate questions, a canonical question per group"),
    "silver-pairs": ("silver_pairs", "label silver training pairs with a cross-encoder"),
    "mine": ("mine", "mine hard negatives for each duplicate pair with a bi-encoder (training data)"),
    "teacher-scores": ("teacher_scores", "score mined groups with a teacher, resumably (for score distillation)"),
    "split": ("split", "write the pairs a training config held out (to evaluate on)"),
    "env": ("env", "print versions, devices and installed extras for a bug report"),
    "configs": ("configs", "list the shipped training and launcher configs (--path NAME: one's file)"),
}


def parser() -> argparse.ArgumentParser:
    """The top-level parser: a command name, then that command's own arguments, untouched."""
    from hfsiamese import __version__

    width = max(map(len, COMMANDS))
    listing = "\n".join(f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items())
    top = argparse.ArgumentParser(
        prog="hfsiamese",
        description="Siamese bi-encoders and cross-encoders for duplicate questions, on the Hugging Face stack.",
        epilog=f"commands:\n{listing}\n\n`hfsiamese COMMAND --help` lists a command's options. Several processes: "
        "`accelerate launch -m hfsiamese.cli.train ...`. Errors are one line; --debug shows the traceback.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"hfsiamese {__version__}")
    top.add_argument("command", choices=COMMANDS, metavar="COMMAND", help="one of: " + ", ".join(COMMANDS))
    top.add_argument("arguments", nargs=argparse.REMAINDER, help="the command's own arguments")
    return top


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run `hfsiamese COMMAND ...` and exit with its status (an error: one line, status 1, or 2 for a usage mistake)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    module_name, _ = COMMANDS[args.command]
    arguments = [arg for arg in args.arguments if arg != DEBUG_FLAG]  # run_recipe reads --debug itself
    module = importlib.import_module(f"{__package__}.{module_name}")
    run_recipe(lambda: module.main(arguments))


if __name__ == "__main__":
    main()
