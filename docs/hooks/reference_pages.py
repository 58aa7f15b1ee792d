"""
MkDocs hook: the pages written from the code, so that nothing on them is written twice.

- `reference/commands.md`: every command's options, read from the argument dataclasses its parser is built
  from (`HfArgumentParser`, the same parser the command uses: names, types, choices, defaults, help);
- `reference/configs.md`: every shipped config file, as shipped.

`COMMAND_ARGUMENTS` and `CONFIG_FOLDERS` are the one table to edit when a command or its dataclasses move. Each
dataclass is named `module.path:ClassName`, or `path/to/file.py:ClassName` (relative to the repository root) for
one that lives in a script.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]

# command → (what a user types, the dataclasses its parser is built from, in the parser's order)
COMMAND_ARGUMENTS: dict[str, tuple[str, list[str]]] = {
    "prepare": (
        "hfsiamese prepare [CONFIG] --train_file FILE --output_dir DIR [--option value ...]",
        ["hfsiamese.training.arguments:DataArguments", "hfsiamese.cli.prepare:PrepareArguments"],
    ),
    "train": (
        "hfsiamese train [CONFIG] [--option value ...]",
        [
            "hfsiamese.training.arguments:ModelArguments",
            "hfsiamese.training.arguments:DataArguments",
            "hfsiamese.bi_encoder.training_args:SiameseTrainingArguments",
        ],
    ),
    "distill": (
        "hfsiamese distill [CONFIG] --teacher_model_name_or_path DIR [--option value ...]",
        [
            "hfsiamese.training.arguments:ModelArguments",
            "hfsiamese.training.arguments:DataArguments",
            "hfsiamese.distillation.arguments:DistillationArguments",
            "hfsiamese.bi_encoder.training_args:SiameseTrainingArguments",
        ],
    ),
    "evaluate": (
        "hfsiamese evaluate --model_name_or_path DIR --test_file FILE [--option value ...]",
        ["hfsiamese.evaluation:EvaluationArguments"],
    ),
    "calibrate": (
        "hfsiamese calibrate --model_name_or_path DIR --calibration_file FILE --output_dir DIR [--option value ...]",
        ["hfsiamese.bi_encoder.calibrated_folder:CalibrationArguments"],
    ),
    "export": (
        "hfsiamese export --model_name_or_path DIR --output_dir DIR [--option value ...]",
        ["hfsiamese.bi_encoder.onnx_export:ExportArguments"],
    ),
    "search": (
        "hfsiamese search --model_name_or_path DIR (--corpus FILE | --index_dir DIR) [--option value ...]",
        ["hfsiamese.cli.search:SearchArguments"],
    ),
    "app": (
        "hfsiamese app --model_name_or_path DIR --corpus FILE [--option value ...]",
        ["hfsiamese.cli.app_page:AppArguments"],
    ),
    "serve": (
        "hfsiamese serve --index_dir DIR --model_name_or_path DIR [--option value ...]",
        ["hfsiamese.cli.serve:ServeArguments"],
    ),
    "groups": (
        "hfsiamese groups --model_name_or_path DIR (--corpus FILE | --index_dir DIR) [--option value ...]",
        ["hfsiamese.cli.groups:GroupsArguments"],
    ),
    "silver-pairs": (
        "hfsiamese silver-pairs [CONFIG] --cross_encoder DIR --output_file FILE [--option value ...]",
        ["hfsiamese.training.arguments:DataArguments", "hfsiamese.cli.silver_pairs_arguments:SilverPairsArguments"],
    ),
    "split": (
        "hfsiamese split [CONFIG] --output_file FILE [--option value ...]",
        ["hfsiamese.training.arguments:DataArguments", "hfsiamese.cli.split:SplitArguments"],
    ),
    "mine": (
        "hfsiamese mine [CONFIG] --pairs FILE --model_name_or_path DIR --output_path PATH [--option value ...]",
        ["hfsiamese.cli.mine:MineArguments"],
    ),
    "teacher-scores": (
        "hfsiamese teacher-scores [CONFIG] --groups PATH --teacher DIR --output_path PATH [--option value ...]",
        ["hfsiamese.cli.teacher_scores:TeacherScoresArguments"],
    ),
}
# The shipped configs: (folder relative to the repository root, what its files configure)
CONFIG_FOLDERS: list[tuple[str, str]] = [
    (
        "hfsiamese/configs",
        "Training recipes: `hfsiamese train NAME` (or `hfsiamese distill NAME`) reads one; flags override it.",
    ),
    (
        "hfsiamese/configs/accelerate",
        "Launcher configs: `accelerate launch --config_file FILE -m hfsiamese.cli.train ...`.",
    ),
]
TRANSFORMERS_ARGS_URL = "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"


def import_object(spec: str) -> Any:
    """`module.path:Name` or `relative/file.py:Name` → the object."""
    where, _, name = spec.partition(":")
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))  # the package of this checkout, installed or not
    if where.endswith(".py"):
        path = REPO_ROOT / where
        module_name = "_docs_" + path.stem
        if module_name not in sys.modules:
            module_spec = importlib.util.spec_from_file_location(module_name, path)
            if module_spec is None or module_spec.loader is None:
                raise ImportError(f"{path}: not a Python file the docs can import")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module
            module_spec.loader.exec_module(module)
        return getattr(sys.modules[module_name], name)
    return getattr(importlib.import_module(where), name)


def _cell(value: Any) -> str:
    text = " ".join(str(value).split())
    return text.replace("|", "\\|")


def _default(action: Any) -> str:
    default = action.default
    if default is None or default == dataclasses.MISSING:
        return "required" if action.required else "–"
    if isinstance(default, str) and not default:
        return '`""`'
    return f"`{_cell(default)}`"


def _type(action: Any) -> str:
    if action.choices:
        return " / ".join(f"`{choice}`" for choice in action.choices)
    kind = getattr(action.type, "__name__", None) or ("bool" if action.const is not None else "str")
    if kind == "string_to_bool":
        kind = "bool"
    if action.nargs in ("+", "*"):
        kind = f"list of {kind}"
    return kind


def options_table(cls: type) -> str:
    """A markdown table of the options `HfArgumentParser(cls)` defines; inherited Trainer options listed by name."""
    from transformers import HfArgumentParser, TrainingArguments

    parser = HfArgumentParser(cls)
    own = {f.name for f in dataclasses.fields(cls)}
    if issubclass(cls, TrainingArguments):
        base = {f.name: f for f in dataclasses.fields(TrainingArguments)}
        own = {name for name in own if name not in base or cls.__dataclass_fields__[name].default != base[name].default}
    rows, inherited = [], []
    for action in parser._actions:
        if action.dest == "help" or action.help == "==SUPPRESS==":
            continue
        flag = action.option_strings[0]
        if flag.startswith("--no_") and not action.dest.startswith("no_"):
            continue  # the negative twin of a bool option (`--no_x` for `--x`): the same option
        if action.dest not in own:
            inherited.append(flag)
            continue
        rows.append(f"| `{flag}` | {_type(action)} | {_default(action)} | {_cell(action.help or '')} |")
    text = "| option | type | default | what it does |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"
    if inherited:
        text += (
            f"\nAnd every option of transformers' [`TrainingArguments`]({TRANSFORMERS_ARGS_URL}), with its default: "
            + ", ".join(f"`{flag}`" for flag in sorted(set(inherited)))
            + ".\n"
        )
    return text


def commands_page() -> str:
    lines = [
        "# Commands and options",
        "",
        "Generated from the argument dataclasses each command parses (`docs/hooks/reference_pages.py`): the same",
        "names, types, defaults and help texts as `hfsiamese COMMAND --help`. A command takes a YAML/JSON config",
        "first where it says `[CONFIG]` (a shipped one by name: [Shipped configs](configs.md)); flags override it.",
        "Several processes: `accelerate launch -m hfsiamese.cli.train ...` (see [Several GPUs](../guides/several-gpus.md)).",
        "",
    ]
    for command, (usage, specs) in COMMAND_ARGUMENTS.items():
        lines += [f"## `hfsiamese {command}`", "", f"```text\n{usage}\n```", ""]
        for spec in specs:
            cls = import_object(spec)
            doc = (cls.__doc__ or "").strip().split("\n\n")[0]
            doc = "" if doc.startswith(cls.__name__ + "(") else " ".join(doc.split())
            lines += [f"### {cls.__name__} ({command})", "", doc, "", options_table(cls), ""]
    return "\n".join(lines)


def configs_page() -> str:
    lines = [
        "# Shipped configs",
        "",
        "Each file as shipped, comments and all (generated from the files themselves).",
        "",
    ]
    for folder, what in CONFIG_FOLDERS:
        files = sorted((REPO_ROOT / folder).glob("*.yaml"))
        if not files:
            raise FileNotFoundError(f"{folder}: no shipped configs found for the docs")
        lines += [f"## `{folder}/`", "", what, ""]
        for path in files:
            lines += [f"### `{path.stem}`", "", f"```yaml\n{path.read_text(encoding='utf-8').rstrip()}\n```", ""]
    return "\n".join(lines)


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site (mkdocs ≥ 1.6: `File.generated`)."""
    from mkdocs.structure.files import File  # here, so that tests/test_docs.py imports this file without mkdocs

    for uri, content in (("reference/commands.md", commands_page()), ("reference/configs.md", configs_page())):
        files.append(File.generated(config, uri, content=content))
    return files
