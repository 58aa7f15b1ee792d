"""The encoder and Dense layers built from a config or a pretrained checkpoint; saved, they load without hfsiamese."""

import json
import re

import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.models.siamese.encoder_building import build_dense_layers, build_encoder, load_dense_weights
from tests.helpers import BLOCK_HFSIAMESE, run_without_hfsiamese

DENSE = [{"in_features": 16, "out_features": 8, "bias": True, "activation": "Tanh"}]

# Encodes with the code saved beside the weights, in an interpreter that cannot import hfsiamese.
ENCODE_CHILD = (
    BLOCK_HFSIAMESE
    + r"""
import json
from transformers import AutoModel

folder, texts = sys.argv[1], json.loads(sys.argv[2])
model = AutoModel.from_pretrained(folder, trust_remote_code=True)
print(json.dumps({"embeddings": model.encode(texts).tolist(), "module": type(model).__module__}))
"""
)


def test_a_pretrained_encoder_with_dense_layers_travels_and_embeds_alike(tiny_bert_dir, word_tokenizer, tmp_path):
    torch.manual_seed(0)
    dense_state = {"linear.weight": torch.randn(8, 16), "linear.bias": torch.randn(8)}
    model = SiameseModel.from_encoder_pretrained(
        str(tiny_bert_dir), dense_layers=DENSE, dense_weights=[dense_state], projection_dim=6, classifier_head=True
    )
    assert torch.equal(model.dense[0].linear.weight, dense_state["linear.weight"])
    folder = tmp_path / "checkpoint"
    model.save_pretrained(folder)
    word_tokenizer.save_pretrained(folder)
    assert {"encoder_building.py", "model_output.py"} <= {path.name for path in folder.glob("*.py")}
    texts = ["how do i learn python ?", "why is the sky blue ?"]
    expected = SiameseModel.from_pretrained(folder).encode(texts, dtype=torch.float32)
    child = run_without_hfsiamese(ENCODE_CHILD, [folder, json.dumps(texts)], tmp_path)
    assert child["module"].startswith("transformers_modules")
    torch.testing.assert_close(torch.tensor(child["embeddings"]), expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    ("config", "width"),
    [
        (dict(encoder_type="lstm", vocab_size=20, embedding_dim=4, hidden_size=5, bidirectional=True), 10),
        (dict(encoder_type="static", vocab_size=20, embedding_dim=7), 7),
    ],
)
def test_build_encoder_gives_the_width_it_pools_to(config, width):
    encoder, pooled_dim = build_encoder(SiameseConfig(**config))
    assert type(encoder).__name__.lower() == f"{config['encoder_type']}encoder" and pooled_dim == width
    dense, out = build_dense_layers(SiameseConfig(**config), pooled_dim)
    assert dense is None and out == width


def test_dense_layers_must_take_the_pooled_width():
    config = SiameseConfig(
        encoder_type="transformer", encoder_config={"model_type": "bert", "hidden_size": 16}, dense_layers=DENSE
    )
    dense, out = build_dense_layers(config, 16)
    assert len(dense) == 1 and out == 8
    with pytest.raises(
        ValueError, match=re.escape("dense_layers[0] takes 16 features but the pooling 'mean' gives 12")
    ):
        build_dense_layers(config, 12)


def test_dense_weights_must_match_the_layers():
    config = SiameseConfig(
        encoder_type="transformer", encoder_config={"model_type": "bert", "hidden_size": 16}, dense_layers=DENSE
    )
    dense, _ = build_dense_layers(config, 16)
    with pytest.raises(ValueError, match="dense_weights holds 0 state dicts for 1 dense_layers"):
        load_dense_weights(dense, [], config.dense_layers)
    with pytest.raises(ValueError, match="dense_weights holds 1 state dicts for 0 dense_layers"):
        load_dense_weights(None, [{}], None)
