"""benchmarks/quality/group_decisions.py on a tiny model: it runs, and plain connected components over every
neighbour put both questions of each pair the threshold accepts in one group (so its recall is at least the pair
threshold's), which is what the comparison rests on."""

from __future__ import annotations

import json
import sys

import torch

from benchmarks.common import harness
from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.data import load_pairs
from hfsiamese.evaluation import question_corpus
from tests.helpers import run_offline

SCRIPT = harness.REPO / "benchmarks" / "quality" / "group_decisions.py"


def test_components_over_every_neighbour_keep_each_accepted_pair_together(tmp_path):
    pairs = load_pairs(str(harness.EMBEDDED_PAIRS)).select(range(120))
    pairs.to_json(tmp_path / "pairs.jsonl")
    questions, _ = question_corpus(pairs)
    tokenizer = train_word_tokenizer(questions, vocab_size=5000, model_max_length=64)
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(tokenizer), embedding_dim=16, hidden_size=16, pad_token_id=0
    )
    SiameseModel(config).save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    args = [sys.executable, str(SCRIPT), "--model_name_or_path", str(tmp_path / "model")]
    args += ["--test_file", str(tmp_path / "pairs.jsonl"), "--threshold", "0.9", "--k", str(len(questions))]
    result = run_offline(args, cwd=tmp_path, OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    rows = [json.loads(line) for line in lines[:4]]
    assert [row["decision"].split(" (")[0] for row in rows] == ["pair threshold"] + ["same group"] * 3
    pair, none = rows[0], rows[1]
    assert "guard none" in none["decision"] and none["recall"] >= pair["recall"]
    assert json.loads(lines[-1]) == {"threshold": 0.9, "num_pairs": 120, "num_questions": len(questions)}
    assert any(line.startswith("| pair threshold (cosine >= 0.9000) |") for line in lines)
