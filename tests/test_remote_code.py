"""A saved checkpoint loads with `trust_remote_code=True` where hfsiamese cannot be imported."""

import json
import os
import subprocess
import sys

import pytest
import torch

from hfsiamese import SiameseModel

# Runs in a child interpreter: any attempt to import hfsiamese fails, as in an environment where
# it is not installed; the model must come from the code saved beside the weights.
CHILD = r"""
import importlib.abc, json, sys

class NoHfsiamese(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "hfsiamese" or name.startswith("hfsiamese."):
            raise ImportError("hfsiamese is not installed here")
        return None

sys.meta_path.insert(0, NoHfsiamese())
import torch
from transformers import AutoModel

folder, batch = sys.argv[1], json.loads(sys.argv[2])
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
assert "hfsiamese" not in type(model).__module__, type(model).__module__
with torch.no_grad():
    out = model(**{k: torch.tensor(v) for k, v in batch.items()})
print(json.dumps({"similarity": out.similarity.tolist(), "threshold": model.config.threshold, "module": type(model).__module__}))
"""


def _run_without_hfsiamese(folder, batch, tmp_path):
    env = dict(os.environ, HF_MODULES_CACHE=str(tmp_path / "modules"), HF_HUB_OFFLINE="1", PYTHONPATH="")
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), json.dumps(batch)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _pair_batch(tokenizer):
    a = tokenizer(["how do i learn python ?", "why is the sky blue ?"], padding=True)
    b = tokenizer(["what is the best way to learn python ?", "how do i cook rice ?"], padding=True)
    return {
        "input_ids_a": a["input_ids"],
        "attention_mask_a": a["attention_mask"],
        "input_ids_b": b["input_ids"],
        "attention_mask_b": b["attention_mask"],
    }


@pytest.mark.parametrize("encoder", ["lstm", "transformer"])
def test_checkpoint_loads_without_hfsiamese(encoder, tiny_lstm, tiny_bert_dir, word_tokenizer, tmp_path):
    model = tiny_lstm if encoder == "lstm" else SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))
    model.config.threshold = 0.42
    folder = tmp_path / "checkpoint"
    model.save_pretrained(folder)
    word_tokenizer.save_pretrained(folder)
    batch = _pair_batch(word_tokenizer)
    with torch.no_grad():
        expected = model.eval()(**{k: torch.tensor(v) for k, v in batch.items()}).similarity.tolist()
    child = _run_without_hfsiamese(folder, batch, tmp_path)
    assert child["module"].startswith("transformers_modules")
    assert child["threshold"] == 0.42
    assert child["similarity"] == pytest.approx(expected, abs=1e-6)
