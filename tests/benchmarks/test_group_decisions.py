"""benchmarks/quality/group_decisions.py on a tiny model: it runs, and plain connected components over every
neighbour put both questions of each pair the threshold accepts in one group (so its recall is at least the pair
threshold's), which is what the comparison rests on."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks.common import harness
from hfsiamese.data import load_pairs
from hfsiamese.evaluation import question_corpus
from tests.benchmarks import save_tiny_lstm
from tests.helpers import run_offline

SCRIPT = harness.REPO / "benchmarks" / "quality" / "group_decisions.py"


def script_on_tiny_models(tmp_path, cross_encoder_dir) -> tuple[list[str], list[str]]:
    """The script's command over 120 embedded pairs, a tiny LSTM fitted to their questions and a tiny cross-encoder
    (threshold 0.9, every question a neighbour); the questions."""
    pairs = load_pairs(str(harness.EMBEDDED_PAIRS)).select(range(120))
    pairs.to_json(tmp_path / "pairs.jsonl")
    questions, _ = question_corpus(pairs)
    save_tiny_lstm(questions, tmp_path / "model")
    args = [sys.executable, str(SCRIPT), "--model_name_or_path", str(tmp_path / "model")]
    args += ["--test_file", str(tmp_path / "pairs.jsonl"), "--threshold", "0.9", "--k", str(len(questions))]
    args += ["--cross_encoder", str(cross_encoder_dir), "--cross_encoder_threshold", "0.5"]
    return args, questions


@pytest.mark.slow
def test_components_over_every_neighbour_keep_each_accepted_pair_together(tmp_path, tiny_cross_encoder_dir):
    args, questions = script_on_tiny_models(tmp_path, tiny_cross_encoder_dir)
    args += ["--cross_encoder_budget", "20"]
    result = run_offline(args, cwd=tmp_path, OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    rows = [json.loads(line) for line in lines[:5]]
    assert [row["decision"].split(" (")[0] for row in rows] == ["pair threshold"] + ["same group"] * 4
    pair, none, guarded = rows[0], rows[1], rows[4]
    assert "guard none" in none["decision"] and none["recall"] >= pair["recall"]
    assert "guard cross_encoder" in guarded["decision"] and none["largest group"] >= guarded["largest group"]
    assert guarded["cross-encoder pairs"] <= -(-20 * len(questions) // 1000)  # the budget: per 1,000, rounded up
    assert json.loads(lines[-1]) == {"threshold": 0.9, "num_pairs": 120, "num_questions": len(questions)}
    assert any(line.startswith("| pair threshold (cosine >= 0.9000) |") for line in lines)


@pytest.mark.slow
def test_links_under_the_threshold_are_offered_to_the_guard_with_its_bar_kept(tmp_path, tiny_cross_encoder_dir):
    args, _ = script_on_tiny_models(tmp_path, tiny_cross_encoder_dir)
    refused = run_offline([*args, "--link_margin", "-0.1"], cwd=tmp_path, OMP_NUM_THREADS="1")
    assert refused.returncode == 2 and "--link_margin is a cosine difference in [0, 2), got -0.1" in refused.stderr
    args += ["--guard", "none", "--guard", "cross_encoder", "--link_margin", "0.2", "--cross_encoder_budget", "5000"]
    result = run_offline(args, cwd=tmp_path, OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr[-3000:]
    pair, none, guarded = (json.loads(line) for line in result.stdout.splitlines()[:3])
    assert "guard none, k" in none["decision"] and "links down to 0.7000" in none["decision"]
    assert none["recall"] >= pair["recall"]  # every pair over the threshold still linked
    assert "guard cross_encoder" in guarded["decision"] and "links down to 0.7000" in guarded["decision"]
    assert guarded["cross-encoder pairs"] > 0  # links under the bar go to the cross-encoder
