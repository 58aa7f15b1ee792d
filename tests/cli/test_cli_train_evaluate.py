"""A short `hfsiamese train` on a shipped config and a small file, then the commands its summary prints, as printed."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from tests.conftest import QQP_FILE
from tests.helpers import TINY_LSTM_BASE, recipe_flags, run_offline

HFSIAMESE = [sys.executable, "-m", "hfsiamese.cli.main"]  # the console script `hfsiamese`, without a reinstall
TINY = dict(TINY_LSTM_BASE, max_steps=4, max_eval_pairs=200, eval_strategy="no", save_strategy="no")


def printed_command(summary: str, label: str) -> list[str]:
    """The `hfsiamese ...` command a summary line labelled `label` prints, as argv after `hfsiamese`."""
    line = next(line for line in summary.splitlines() if line.startswith(label))
    words = shlex.split(line[len(label) :])
    assert words[0] == "hfsiamese", line
    return words[1:]


@pytest.mark.slow
def test_train_a_shipped_config_then_split_evaluate_and_search_as_the_summary_says(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(QQP_FILE.read_text(encoding="utf-8").splitlines(keepends=True)[:800]), encoding="utf-8")
    trained = run_offline(
        [*HFSIAMESE, "train", "lstm_qqp", "--train_file", "pairs.tsv", *recipe_flags(TINY)], cwd=tmp_path
    )
    assert trained.returncode == 0, trained.stderr[-4000:]
    out = tmp_path / "outputs" / "pairs-contrastive_ranking"  # named after the data and the config's loss
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 4
    summary = trained.stdout[trained.stdout.index("Model saved to") :]

    # The split the summary names writes the pairs the run held out, to the file its Evaluate line reads.
    split_command = summary.split("`")[1]
    assert (
        split_command
        == "hfsiamese split lstm_qqp --train_file pairs.tsv --max_eval_pairs=200 --output_file HELD_OUT_PAIRS.jsonl"
    )
    split = run_offline([*HFSIAMESE, *shlex.split(split_command)[1:]], cwd=tmp_path)
    assert split.returncode == 0, split.stderr[-4000:]

    evaluate = printed_command(summary, "Evaluate:")
    assert evaluate[0] == "evaluate"
    evaluated = run_offline([*HFSIAMESE, *evaluate], cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr[-4000:]
    metrics = json.loads(evaluated.stdout.strip().splitlines()[-1])
    assert (
        metrics["num_pairs"]
        == json.loads(split.stdout)["pairs"]
        == json.loads((out / "all_results.json").read_text())["eval_num_pairs"]
    )
    # No validation question was trained on: the split is the one the run held out.
    assert metrics.get("training_overlap_pairs", 0) == 0
    assert metrics["threshold"] == json.loads((out / "all_results.json").read_text())["eval_threshold"]

    search = printed_command(summary, "Search:")
    assert search[:1] == ["search"] and "pairs.tsv" in search
    searched = run_offline([*HFSIAMESE, *search, "--k", "2"], cwd=tmp_path)
    assert searched.returncode == 0, searched.stderr[-4000:]
    assert searched.stdout.startswith("Query: How do I learn Python?") and searched.stdout.count("\n   ") >= 1
