"""The mining chain end to end, as the mining guide runs it: the training pairs, `hfsiamese mine` (groups with
scores), `hfsiamese teacher-scores` with a cross-encoder, then `hfsiamese train` on those scores with each loss
that reads them (margin_mse, listwise_kl).

Each step has its own tests; this one holds the joints: a file one command writes is one the next reads, and the
groups mined from the training pairs never hold a question the run keeps for validation (which it would refuse).
"""

from __future__ import annotations

import json

import pytest

from hfsiamese.cli import main as cli_main
from hfsiamese.cli.train import main as train_main
from hfsiamese.mining import load_dataset_file
from tests.conftest import QQP_FILE
from tests.helpers import TINY_LSTM_BASE, recipe_flags

SIZES = {"max_train_pairs": 120, "max_eval_pairs": 48}


def command(argv: list[str], capsys) -> dict:
    """Run one `hfsiamese` command in this process: its JSON summary (exit 0 asserted)."""
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main(argv)
    captured = capsys.readouterr()
    assert exit_info.value.code == 0, captured.err
    return json.loads(captured.out)


@pytest.fixture
def saved_lstm(tmp_path, tiny_lstm, word_tokenizer):
    folder = tmp_path / "models"
    tiny_lstm.save_pretrained(folder / "lstm")
    word_tokenizer.save_pretrained(folder / "lstm")
    return folder


def test_mined_groups_scored_by_a_teacher_train_each_score_loss(tmp_path, saved_lstm, tiny_cross_encoder_dir, capsys):
    folder = saved_lstm
    train_pairs = tmp_path / "train_pairs.jsonl"
    sizes = [f"--{k}={v}" for k, v in SIZES.items()]
    command(
        ["split", "--train_file", str(QQP_FILE), *sizes, "--split", "train", "--output_file", str(train_pairs)], capsys
    )
    mined = tmp_path / "mined.parquet"
    summary = command(
        ["mine", "--pairs", str(train_pairs), "--model_name_or_path", str(folder / "lstm"), "--output_path",
         str(mined), "--format", "groups-with-scores", "--num_negatives", "2"],
        capsys,
    )  # fmt: skip
    assert summary["rows"] > 0
    scored = tmp_path / "scored.parquet"
    command(["teacher-scores", "--groups", str(mined), "--teacher", str(tiny_cross_encoder_dir), "--output_path",
             str(scored), "--batch_size", "16"], capsys)  # fmt: skip
    rows = load_dataset_file(scored)
    assert len(rows) == summary["rows"] and all(len(s) == 3 for s in rows["teacher_scores"])
    for loss in ("margin_mse", "listwise_kl"):
        values = {**TINY_LSTM_BASE, "train_file": QQP_FILE, **SIZES, "loss": loss, "teacher_scores_file": scored,
                  "max_steps": 2, "report_to": "none", "save_strategy": "no"}  # fmt: skip
        metrics = train_main(recipe_flags(values, tmp_path / loss))
        assert metrics["train_samples"] == len(rows), loss  # every scored group trained on, none refused
        assert metrics["eval_num_pairs"] == SIZES["max_eval_pairs"]
        assert loss in (tmp_path / loss / "README.md").read_text(encoding="utf-8")
