"""Every recipe, as a user runs it, with each kind of bad file: one line `error: ...`, no traceback.

The files are the bad-file table's (tests/bad_files.py; the other commands get them in tests/cli/test_bad_files.py)
as a user would hand them to a command; the messages themselves are tested there and in tests/data/test_pair_loading.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hfsiamese.cli.command_line import run_recipe
from tests.bad_files import BAD_FILES
from tests.fixtures import saved_tiny_lstm
from tests.helpers import EVALUATE, TRAIN, accelerate_launch, load_recipe, run_offline

SEARCH = TRAIN.parent / "search.py"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, word_tokenizer):
    return saved_tiny_lstm(tmp_path_factory.mktemp("errors_model"), word_tokenizer)


def recipe_command(recipe: str, bad_file: Path, model_dir: Path, tmp_path: Path) -> list[str]:
    if recipe == "train":
        return [str(TRAIN), "--train_file", str(bad_file), "--output_dir", str(tmp_path / "out"), "--max_steps", "1"]
    if recipe == "evaluate_pairs":
        return [str(EVALUATE), "--model_name_or_path", str(model_dir), "--test_file", str(bad_file)]
    return [str(SEARCH), "--model_name_or_path", str(model_dir), "--corpus", str(bad_file), "--query", "hello ?"]


def assert_one_error_line(result, message: str, status: int = 1) -> str:
    """The command failed with `status`, and stderr's only unlogged line is `error: ...` holding `message`."""
    assert result.returncode == status, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    # Log records (timestamped INFO lines, e.g. the thread count) are not errors; everything else is.
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line[:2].isdigit()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ") and message in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("recipe", ["train", "evaluate_pairs", "search"])
@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_is_one_line(recipe, name, model_dir, tmp_path, monkeypatch, capsys):
    """In process (an interpreter start per case would take minutes): `run_recipe(main)` as the script's last line runs it."""
    content, message = BAD_FILES[name]
    bad_file = tmp_path / name
    bad_file.write_bytes(content)
    module = load_recipe(monkeypatch, recipe)
    monkeypatch.setattr(sys, "argv", [f"{recipe}.py", *recipe_command(recipe, bad_file, model_dir, tmp_path)[1:]])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        run_recipe(module.main)
    stderr = capsys.readouterr().err
    assert exited.value.code == 1, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert lines == [f"error: {lines[0][7:]}"] and str(bad_file) in lines[0] and message in lines[0], stderr
    assert not (tmp_path / "out").exists()  # a run that stopped before training leaves no folder it made


@pytest.mark.parametrize("recipe", ["train", "evaluate_pairs", "search"])
@pytest.mark.slow
def test_bad_file_through_the_command_line(recipe, model_dir, tmp_path):
    """The same as a user types it: a subprocess per recipe, nothing on stderr but the line (and log records)."""
    bad_file = tmp_path / "unquoted_comma.csv"
    bad_file.write_bytes(BAD_FILES[bad_file.name][0])
    result = run_offline(
        [sys.executable, *recipe_command(recipe, bad_file, model_dir, tmp_path)], cwd=tmp_path, timeout=300
    )
    assert_one_error_line(result, f"{bad_file}: line 4 has 4 fields, expected 3")


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--max_step", "5"], "unrecognized arguments: --max_step 5"),  # no prefix matching of --max_steps
        (["--learning_rate", "fast"], "invalid float value: 'fast'"),
        (["not_a_config.txt"], "the first argument must be a config file"),
    ],
)
@pytest.mark.slow
def test_usage_error_is_one_line_with_status_2(flags, message, tmp_path):
    result = run_offline([sys.executable, str(TRAIN), *flags], cwd=tmp_path, timeout=300)
    assert_one_error_line(result, message, status=2)


@pytest.mark.slow
def test_debug_shows_the_traceback(tmp_path):
    bad_file = tmp_path / "empty.tsv"
    bad_file.write_bytes(b"")
    command = [sys.executable, str(TRAIN), "--train_file", str(bad_file), "--output_dir", str(tmp_path / "o")]
    for extra, env in (((("--debug",), {})), ((), {"HFSIAMESE_DEBUG": "1"})):
        result = run_offline([*command, *extra], cwd=tmp_path, timeout=300, **env)
        assert result.returncode == 1 and "Traceback" in result.stderr and "is empty" in result.stderr


@pytest.mark.slow
def test_error_under_accelerate_launch_quiet(tmp_path):
    """`accelerate launch -q`: the recipe's line and the launcher's exit status 1, no launcher traceback."""
    bad_file = tmp_path / "empty.tsv"
    bad_file.write_bytes(b"")
    command = [
        *accelerate_launch(1),
        "-q",
        str(TRAIN),
        "--train_file",
        str(bad_file),
        "--output_dir",
        str(tmp_path / "o"),
    ]
    result = run_offline(command, cwd=tmp_path, timeout=300)
    assert_one_error_line(result, "is empty")


def test_cheap_checks_come_before_expensive_work(model_dir, tmp_path, monkeypatch, capsys):
    """Each recipe refuses a bad input before it reads, embeds or trains anything, and leaves no folder."""
    missing = tmp_path / "no_such_corpus.tsv"  # never opened: the query is refused first
    search = [
        str(SEARCH),
        "--model_name_or_path",
        str(model_dir),
        "--corpus",
        str(missing),
        "--query",
        "why ?",
        "--query",
        " ",
    ]
    distill = [
        str(TRAIN.parent / "distill.py"), "--teacher_model_name_or_path", str(tmp_path / "no_teacher"),
        "--train_file", str(missing), "--output_dir", str(tmp_path / "out"),
    ]  # fmt: skip
    for command, status, message in (
        (search, 2, "error: --query number 2 (of 2) is empty: give the text of a question"),
        (distill, 1, f"error: teacher model not found: no such folder: {tmp_path / 'no_teacher'}"),
    ):
        module = load_recipe(monkeypatch, Path(command[0]).stem)
        monkeypatch.setattr(sys, "argv", command)
        with pytest.raises(SystemExit) as exited:
            run_recipe(module.main)
        assert exited.value.code == status and capsys.readouterr().err.strip().splitlines()[-1] == message
    assert not (tmp_path / "out").exists()
