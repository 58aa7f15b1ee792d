"""A saved checkpoint loads with `trust_remote_code=True` where hfsiamese cannot be imported."""

import json

import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from tests.helpers import BLOCK_HFSIAMESE, run_without_hfsiamese

# Runs in a child interpreter that cannot import hfsiamese: the model must come from the code saved
# beside the weights.
CHILD = BLOCK_HFSIAMESE + r"""
import json
import torch
from transformers import AutoModel

folder, batch = sys.argv[1], json.loads(sys.argv[2])
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
assert "hfsiamese" not in type(model).__module__, type(model).__module__
with torch.no_grad():
    out = model(**{k: torch.tensor(v) for k, v in batch.items()})
print(json.dumps({"similarity": out.similarity.tolist(), "threshold": model.config.threshold, "module": type(model).__module__}))
"""


def _pair_batch(tokenizer):
    a = tokenizer(["how do i learn python ?", "why is the sky blue ?"], padding=True)
    b = tokenizer(["what is the best way to learn python ?", "how do i cook rice ?"], padding=True)
    return {
        "input_ids_a": a["input_ids"],
        "attention_mask_a": a["attention_mask"],
        "input_ids_b": b["input_ids"],
        "attention_mask_b": b["attention_mask"],
    }


def _tiny_static(tokenizer):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="static", vocab_size=len(tokenizer), embedding_dim=8, pooling="weighted_mean", projection_dim=6
    )
    return SiameseModel(config)


@pytest.mark.parametrize("encoder", ["lstm", "static", "transformer"])
def test_checkpoint_loads_without_hfsiamese(encoder, tiny_lstm, tiny_bert_dir, word_tokenizer, tmp_path):
    if encoder == "transformer":
        model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))
    else:
        model = tiny_lstm if encoder == "lstm" else _tiny_static(word_tokenizer)
    model.config.threshold = 0.42
    folder = tmp_path / "checkpoint"
    model.save_pretrained(folder)
    word_tokenizer.save_pretrained(folder)
    batch = _pair_batch(word_tokenizer)
    with torch.no_grad():
        expected = model.eval()(**{k: torch.tensor(v) for k, v in batch.items()}).similarity.tolist()
    child = run_without_hfsiamese(CHILD, [folder, json.dumps(batch)], tmp_path)
    assert child["module"].startswith("transformers_modules")
    assert child["threshold"] == 0.42
    assert child["similarity"] == pytest.approx(expected, abs=1e-6)
