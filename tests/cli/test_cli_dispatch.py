"""`hfsiamese COMMAND ...`: each command reaches its module with its own arguments, and `--help` lists its options."""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys

import pytest

from hfsiamese.cli import main as cli_main
from tests.conftest import REPO_ROOT
from tests.helpers import load_recipe, run_offline

# command → the dataclasses whose fields its --help must list (as today's recipes group them)
HELP_FIELDS = {
    "train": (
        "hfsiamese.training:ModelArguments",
        "hfsiamese.training:DataArguments",
        "hfsiamese.bi_encoder:SiameseTrainingArguments",
    ),
    "distill": ("hfsiamese.distillation:DistillationArguments", "hfsiamese.training:DataArguments"),
    "evaluate": ("hfsiamese.evaluation:EvaluationArguments",),
    "calibrate": ("hfsiamese.bi_encoder.calibrated_folder:CalibrationArguments",),
    "export": ("hfsiamese.bi_encoder:ExportArguments",),
    "search": ("hfsiamese.cli.search:SearchArguments",),
    "app": ("hfsiamese.cli.app_page:AppArguments",),
    "serve": ("hfsiamese.cli.serve:ServeArguments",),
    "groups": ("hfsiamese.cli.groups:GroupsArguments",),
    "silver-pairs": (
        "hfsiamese.cli.silver_pairs_arguments:SilverPairsArguments",
        "hfsiamese.training:DataArguments",
    ),
    "split": ("hfsiamese.cli.split:SplitArguments", "hfsiamese.training:DataArguments"),
    "mine": ("hfsiamese.cli.mine:MineArguments",),
    "teacher-scores": ("hfsiamese.cli.teacher_scores:TeacherScoresArguments",),
}


def dataclass_of(spec: str) -> type:
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def help_text(command: str, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main([command, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(HELP_FIELDS))
def test_help_lists_every_option_with_its_doc(command, capsys):
    text = help_text(command, capsys)
    assert text.startswith(f"usage: hfsiamese {command} ")
    for spec in HELP_FIELDS[command]:
        kind = dataclass_of(spec)
        # A command of several dataclasses shows each as its own section: its title, then its options.
        section = text.index(f"\n{kind._argument_group_name}:\n") if len(HELP_FIELDS[command]) > 1 else 0
        for field in dataclasses.fields(kind):
            if field.init and not field.name.startswith("_"):
                assert f"--{field.name}" in text[section:], f"hfsiamese {command} --help lacks --{field.name}"
    # The help of a field shows (first words of the first field with one).
    documented = next(f for f in dataclasses.fields(dataclass_of(HELP_FIELDS[command][0])) if f.metadata.get("help"))
    assert " ".join(documented.metadata["help"].split()[:3]) in " ".join(text.split())


@pytest.mark.parametrize("command", sorted(cli_main.COMMANDS))
def test_each_command_runs_its_module_with_the_rest_of_the_line(command, monkeypatch):
    module = importlib.import_module(f"hfsiamese.cli.{cli_main.COMMANDS[command][0]}")
    seen = []
    monkeypatch.setattr(module, "main", lambda argv: seen.append(argv))
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main([command, "minilm_qqp", "--max_steps", "3", "--debug"])
    assert exit_info.value.code == 0
    assert seen == [["minilm_qqp", "--max_steps", "3"]]  # --debug is read by run_recipe, not the command


def test_the_listing_names_every_format_export_writes():
    """`hfsiamese --help` summarises export; the summary said ONNX alone after OpenVINO became a format."""
    from hfsiamese.bi_encoder.onnx_export import EXPORT_FORMATS

    names = {"onnx": "ONNX", "openvino": "OpenVINO"}
    assert set(EXPORT_FORMATS) == set(names)
    assert all(names[kind] in cli_main.COMMANDS["export"][1] for kind in EXPORT_FORMATS)


def test_an_error_is_one_line_and_an_unknown_command_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main(["evaluate", "--model_name_or_path", "x", "--test_file", "y", "--no_such_flag", "1"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == ["error: unrecognized arguments: --no_such_flag 1"]
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main(["trian"])
    assert exit_info.value.code == 2 and "invalid choice: 'trian'" in capsys.readouterr().err


def test_recipes_are_shims_over_the_commands(monkeypatch):
    from hfsiamese.cli import evaluate, train

    assert load_recipe(monkeypatch, "train").main is train.main
    assert load_recipe(monkeypatch, "evaluate_pairs").main is evaluate.main


@pytest.mark.slow
def test_the_command_and_each_module_run_with_python_m(tmp_path):
    """As an installed package runs them: `python -m hfsiamese.cli.main` (the console script) and a module alone."""
    top = run_offline([sys.executable, "-m", "hfsiamese.cli.main", "--help"], cwd=tmp_path)
    assert top.returncode == 0 and all(name in top.stdout for name in cli_main.COMMANDS)
    module = run_offline([sys.executable, "-m", "hfsiamese.cli.export", "--help"], cwd=tmp_path)
    assert module.returncode == 0 and "--quantize" in module.stdout
    assert (REPO_ROOT / "pyproject.toml").read_text().count('hfsiamese = "hfsiamese.cli.main:main"') == 1


@pytest.mark.slow
def test_every_command_applies_the_command_defaults_before_torch_loads(tmp_path):
    """`python -m hfsiamese.cli.<name>` (as `accelerate launch -m` runs it) gets OpenMP's wait policy before torch loads
    (`import hfsiamese` recognises the command), and its `__main__` block applies the other defaults; importing the
    package from any other program sets nothing (tests/test_cpu_policy.py)."""
    import os

    from hfsiamese.utils.openmp_defaults import SPIN_COUNT

    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    result = subprocess.run(
        [sys.executable, "-m", "hfsiamese.cli.env"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"GOMP_SPINCOUNT={SPIN_COUNT}" in result.stdout
    library = subprocess.run(
        [sys.executable, "-c", "import hfsiamese.cli.main, os; print(os.environ.get('GOMP_SPINCOUNT'))"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert library.returncode == 0 and library.stdout.strip().splitlines()[-1] == "None", library.stderr[-2000:]
    for module in sorted((REPO_ROOT / "hfsiamese" / "cli").glob("*.py")):
        if module.name != "main.py" and 'if __name__ == "__main__":' in module.read_text():
            assert "apply_command_defaults()" in module.read_text().split('if __name__ == "__main__":')[-1], module.name
    assert (
        "apply_command_defaults()" in (REPO_ROOT / "hfsiamese" / "cli" / "main.py").read_text().split("def main(")[-1]
    )
