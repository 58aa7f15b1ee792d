"""The bad-file table (`tests/bad_files.py`) fed to every command that reads a file, besides the recipes' `train`,
`evaluate` and `search` (`tests/recipes/test_recipe_errors.py`): each bad file gets one line `error: ...` naming the
file and the problem, and nothing is written: no output where there was none, and an existing output left as it was
even where the command was told to replace it."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import sys
from pathlib import Path

import pytest

from hfsiamese.cli import main as cli_main
from tests.bad_files import BAD_FILES, BAD_GROUP_FILES, BAD_LABEL_CELLS
from tests.conftest import QQP_FILE
from tests.fixtures import saved_tiny_lstm
from tests.helpers import TINY_LSTM_BASE, recipe_flags


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, word_tokenizer):
    return saved_tiny_lstm(tmp_path_factory.mktemp("bad_files_model"), word_tokenizer)


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory, tiny_cross_encoder_dir):
    """The tiny cross-encoder with a calibrated threshold (silver-pairs labels with it)."""
    folder = tmp_path_factory.mktemp("bad_files_cross_encoder") / "cross"
    shutil.copytree(tiny_cross_encoder_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "threshold": 0.5}))
    return folder


def pair_command(
    command: str, bad_file: Path, model_dir: Path, out: Path, cross_encoder_dir: Path | None = None
) -> list[str]:
    """The command line that hands `bad_file` to `command` as its pairs (its corpus, for `groups`)."""
    model = ["--model_name_or_path", str(model_dir)]
    return {
        "calibrate": ["calibrate", *model, "--calibration_file", str(bad_file), "--output_dir", str(out)],
        "split": ["split", "--train_file", str(bad_file), "--output_file", str(out / "held_out.jsonl")],
        "mine": ["mine", "--pairs", str(bad_file), *model, "--output_path", str(out / "mined.parquet")],
        "distill": [
            "distill", "--train_file", str(bad_file), "--teacher_model_name_or_path", str(model_dir),
            "--output_dir", str(out), "--max_steps", "1",
        ],
        "groups": ["groups", *model, "--corpus", str(bad_file), "--output_file", str(out / "groups.parquet")],
        "train": ["train", "--train_file", str(bad_file), "--output_dir", str(out), "--max_steps", "1"],
        "evaluate": ["evaluate", *model, "--test_file", str(bad_file), "--report_dir", str(out)],
        "prepare": ["prepare", "--train_file", str(bad_file), "--output_dir", str(out)],
        "silver-pairs": [
            "silver-pairs", "--train_file", str(bad_file), "--cross_encoder", str(cross_encoder_dir),
            "--bi_encoder", str(model_dir), "--output_file", str(out / "silver.jsonl"),
        ],
    }[command]  # fmt: skip


def files(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def assert_one_error_line(argv: list[str], bad_file: Path, message: str, tmp_path: Path, monkeypatch, capsys) -> None:
    """The command exits with status 1 and one line `error: ...` naming the file and `message`; nothing written."""
    before, out_existed = files(tmp_path), (tmp_path / "out").exists()
    monkeypatch.chdir(tmp_path)  # whatever a command wrote by default would land here
    monkeypatch.setattr(sys, "argv", ["hfsiamese", *argv])
    # A training command's log handler writes to the stderr it found: this test's captured one, not an earlier test's.
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    with pytest.raises(SystemExit) as exited:
        cli_main.main(argv)
    stderr = capsys.readouterr().err
    assert exited.value.code == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.strip() and not line[:2].isdigit()]  # log records aside
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert str(bad_file) in lines[0] and message in lines[0], lines[0]
    assert files(tmp_path) == before and (tmp_path / "out").exists() == out_existed


@pytest.mark.parametrize("command", ["calibrate", "split", "mine", "distill", "groups", "prepare", "silver-pairs"])
@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_bad_pair_file_is_one_line_and_writes_nothing(
    command, name, model_dir, cross_encoder_dir, tmp_path, monkeypatch, capsys
):
    content, message = BAD_FILES[name]
    bad_file = tmp_path / name
    bad_file.write_bytes(content)
    argv = pair_command(command, bad_file, model_dir, tmp_path / "out", cross_encoder_dir)
    assert_one_error_line(argv, bad_file, message, tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize(
    "command", ["train", "evaluate", "calibrate", "split", "mine", "distill", "prepare", "silver-pairs"]
)
@pytest.mark.parametrize("name", sorted(BAD_LABEL_CELLS))
def test_a_nan_null_or_empty_label_is_one_line_and_writes_nothing(
    command, name, model_dir, cross_encoder_dir, tmp_path, monkeypatch, capsys
):
    content, message = BAD_LABEL_CELLS[name]
    bad_file = tmp_path / name
    bad_file.write_bytes(content)
    argv = pair_command(command, bad_file, model_dir, tmp_path / "out", cross_encoder_dir)
    assert_one_error_line(argv, bad_file, message, tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize("name", sorted(BAD_GROUP_FILES))
def test_a_bad_groups_file_for_teacher_scores_is_one_line_and_writes_nothing(
    name, cross_encoder_dir, tmp_path, monkeypatch, capsys
):
    content, message = BAD_GROUP_FILES[name]
    bad_file = tmp_path / name
    bad_file.write_bytes(content)
    out = tmp_path / "out"
    argv = ["teacher-scores", "--groups", str(bad_file), "--teacher", str(cross_encoder_dir)]
    argv += ["--output_path", str(out / "scored.jsonl"), "--shards_dir", str(out / "shards")]
    assert_one_error_line(argv, bad_file, message, tmp_path, monkeypatch, capsys)


# Each command's output in "out" and the flag that lets it replace it: a refused run, asked to replace, still leaves
# what a user had there as it was.
OUTPUTS = {
    "split": ("held_out.jsonl", "--overwrite_output_file"),
    "mine": ("mined.parquet", "--overwrite_output"),
    "distill": (None, "--overwrite_output_dir"),
    "groups": ("groups.parquet", "--overwrite_output_file"),
    "train": (None, "--overwrite_output_dir"),
    "evaluate": (None, "--overwrite_report_dir"),
    "prepare": (None, "--overwrite_output_dir"),
    "silver-pairs": ("silver.jsonl", "--overwrite_output_file"),
}


@pytest.mark.parametrize("command", sorted(OUTPUTS))
def test_a_bad_pair_file_leaves_an_existing_output_as_it_was(
    command, model_dir, cross_encoder_dir, tmp_path, monkeypatch, capsys
):
    name, overwrite = OUTPUTS[command]
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("a user's file")
    if name is not None:
        (tmp_path / "out" / name).write_text("the previous run's output")
    content, message = {**BAD_FILES, **BAD_LABEL_CELLS}["nan_label.csv" if command != "groups" else "latin1.csv"]
    bad_file = tmp_path / "pairs.csv"
    bad_file.write_bytes(content)
    argv = pair_command(command, bad_file, model_dir, tmp_path / "out", cross_encoder_dir) + [overwrite]
    assert_one_error_line(argv, bad_file, message, tmp_path, monkeypatch, capsys)


# The same kinds of bad file as a teacher-score rows file (`--teacher_scores_file`, read by train and distill).
SCORE_ROW_FILES = ["binary.jsonl", "broken_line.jsonl", "empty.jsonl", "latin1.jsonl", "not_parquet.parquet"]


@pytest.mark.parametrize("name", SCORE_ROW_FILES)
def test_a_bad_teacher_scores_file_for_train_is_one_line_and_writes_nothing(name, tmp_path, monkeypatch, capsys):
    content, message = BAD_GROUP_FILES[name]
    bad_file = tmp_path / name
    bad_file.write_bytes(content)
    values = {**TINY_LSTM_BASE, "train_file": QQP_FILE, "max_train_pairs": 64, "max_eval_pairs": 16}
    argv = ["train", *recipe_flags({**values, "loss": "margin_mse", "teacher_scores_file": bad_file}, tmp_path / "out")]
    assert_one_error_line([*argv, "--max_steps", "1"], bad_file, message, tmp_path, monkeypatch, capsys)


HELD_OUT_FILES: dict[str, tuple[bytes, str]] = {
    "binary.txt": (bytes(range(256)) * 4, "is not a text file"),
    "latin1.txt": (b"how do i learn python ?\ncaf\xe9 ?\n", "is not UTF-8 text"),
}


@pytest.mark.parametrize("name", sorted(HELD_OUT_FILES))
def test_a_bad_held_out_file_for_mine_is_one_line_and_writes_nothing(name, model_dir, tmp_path, monkeypatch, capsys):
    content, message = HELD_OUT_FILES[name]
    bad_file = tmp_path / name
    bad_file.write_bytes(content)
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("question1,question2,is_duplicate\nhow do i learn python ?,best way to learn python ?,1\n")
    argv = pair_command("mine", pairs, model_dir, tmp_path / "out") + ["--held_out_file", str(bad_file)]
    assert_one_error_line(argv, bad_file, message, tmp_path, monkeypatch, capsys)
