"""OnnxSiameseModel: the inference API of SiameseModel on onnxruntime, loaded from an exported folder."""

from __future__ import annotations

import sys

import onnxruntime  # noqa: F401  (the code under test imports it; the test extra has it, so a broken install is an error)
import pytest
import torch
from transformers import AutoModel, pipeline

from hfsiamese import OnnxSiameseModel, SiameseConfig, SiameseModel, load_siamese_model
from hfsiamese.bi_encoder.onnx_export import export_onnx
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.search import DuplicateIndex
from tests.conftest import TEXTS


@pytest.fixture(scope="module")
def exported(tmp_path_factory, word_tokenizer):
    """A tiny LSTM saved as recipes/train.py leaves it, and its fp32 ONNX export."""
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm",
        vocab_size=len(word_tokenizer),
        embedding_dim=8,
        hidden_size=6,
        pad_token_id=0,
        threshold=0.6,
    )
    model = SiameseModel(config).eval()
    source = tmp_path_factory.mktemp("trained")
    model.save_pretrained(source)
    word_tokenizer.save_pretrained(source)
    out = tmp_path_factory.mktemp("exported") / "onnx"
    export_onnx(model, word_tokenizer, out, source_dir=source)
    return model, out


def test_every_loader_gives_the_onnx_model(exported):
    _, out = exported
    assert isinstance(load_siamese_model(out), OnnxSiameseModel)
    assert isinstance(AutoModel.from_pretrained(out), OnnxSiameseModel)


def test_inference_api_matches_pytorch(exported, word_tokenizer):
    model, out = exported
    onnx_model = load_siamese_model(out)
    a, b = TEXTS[:4], TEXTS[4:]
    torch.testing.assert_close(
        onnx_model.encode(TEXTS, batch_size=3), model.encode(TEXTS, word_tokenizer), atol=1e-5, rtol=0
    )
    torch.testing.assert_close(onnx_model.similarity(a, b), model.similarity(a, b, word_tokenizer), atol=1e-5, rtol=0)
    torch.testing.assert_close(onnx_model.score_pairs(a, b), model.score_pairs(a, b, word_tokenizer), atol=1e-5, rtol=0)
    got, expected = onnx_model.predict(a, b), model.predict(a, b, word_tokenizer)
    assert torch.equal(got["is_duplicate"], expected["is_duplicate"])
    support, labels = TEXTS[1::2], ["python", "weight", "sky", "other"]
    kwargs = {"threshold": -1.0, "strategy": "centroid"}
    assert (
        onnx_model.classify(TEXTS, support, labels, **kwargs)["labels"]
        == model.classify(TEXTS, support, labels, word_tokenizer, **kwargs)["labels"]
    )


def test_pipeline_and_duplicate_index_take_the_folder(exported, word_tokenizer):
    model, out = exported
    pipe = pipeline("question-duplicates", model=str(out))
    result = pipe((TEXTS[0], TEXTS[1]))
    assert result["score"] == pytest.approx(
        float(model.similarity([TEXTS[0]], [TEXTS[1]], word_tokenizer)[0]), abs=1e-5
    )
    index = DuplicateIndex.build(TEXTS, str(out))  # the folder, as a user passes it
    reference = DuplicateIndex.build(TEXTS, model, word_tokenizer)
    got, expected = index.search(TEXTS[2], k=3), reference.search(TEXTS[2], k=3)
    assert [m["id"] for m in got] == [m["id"] for m in expected] and index.threshold == 0.6
    assert [m["score"] for m in got] == pytest.approx([m["score"] for m in expected], abs=1e-5)


def test_clear_errors(exported, monkeypatch):
    _, out = exported
    onnx_model = load_siamese_model(out)
    with pytest.raises(ValueError, match="precision was fixed when it was exported"):
        onnx_model.encode(TEXTS, dtype=torch.bfloat16)
    other = train_word_tokenizer([*TEXTS, "completely new words here"], vocab_size=200, model_max_length=16)
    with pytest.raises(ValueError, match="not the tokenizer this model was trained with"):
        onnx_model.encode(TEXTS, other)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r'needs onnxruntime: .*pip install -e "\.\[onnx\]"'):
        load_siamese_model(out)


def test_missing_graph_is_named(exported, tmp_path):
    import shutil

    _, out = exported
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "model.onnx").unlink()
    with pytest.raises(FileNotFoundError, match=r"model\.onnx"):
        load_siamese_model(copy)


def test_both_models_fulfil_the_inference_contract(exported):
    from hfsiamese.models.siamese.inference import InferenceHost

    model, out = exported
    onnx_model = load_siamese_model(out)
    assert isinstance(model, InferenceHost) and isinstance(onnx_model, InferenceHost)
    assert onnx_model.padding_id() == model.padding_id()


def _as_earlier_releases_wrote_it(model, exported_folder, target):
    """
    The export folder as hfsiamese 0.1.0 (commit 88c05d6) wrote it, config.json written by hand as its `_onnx_config`
    did: the model's config without its own `model_type`, `auto_map`, `architectures`, `custom_pipelines` and
    `transformers_version`, with `model_type` "siamese_onnx" (its only marker besides the `onnx` entry),
    `architectures` ["OnnxSiameseModel"] and the `onnx` entry of that exporter.
    """
    import json
    import shutil

    shutil.copytree(exported_folder, target)
    values = model.config.to_dict()
    for key in ("model_type", "auto_map", "architectures", "custom_pipelines", "transformers_version"):
        values.pop(key, None)
    values |= {
        "model_type": "siamese_onnx",
        "architectures": ["OnnxSiameseModel"],
        "transformers_version": "4.57.0",
        "onnx": {
            "file": "model.onnx",
            "quantization": None,
            "opset": 18,
            "exporter": "torchscript",
            "embedding_rows": model.get_input_embeddings().num_embeddings,
            "fp32_max_abs_diff": 1e-7,
        },
    }
    (target / "config.json").write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")
    return target


def test_an_export_of_an_earlier_release_loads_and_scores_identically(exported, word_tokenizer, tmp_path):
    from hfsiamese import load_model

    model, out = exported
    old = _as_earlier_releases_wrote_it(model, out, tmp_path / "old_export")
    new_model = load_model(out)
    a, b = TEXTS[:4], TEXTS[4:]
    for loaded in (load_model(old), load_siamese_model(old), AutoModel.from_pretrained(old)):
        assert isinstance(loaded, OnnxSiameseModel) and loaded.config.threshold == 0.6
        assert torch.equal(loaded.encode(TEXTS), new_model.encode(TEXTS))
        assert torch.equal(loaded.score_pairs(a, b), new_model.score_pairs(a, b))
        torch.testing.assert_close(loaded.score_pairs(a, b), model.score_pairs(a, b, word_tokenizer), atol=1e-5, rtol=0)
    pipe = pipeline("question-duplicates", model=str(old))
    assert pipe((TEXTS[0], TEXTS[1]))["score"] == pytest.approx(float(new_model.similarity([TEXTS[0]], [TEXTS[1]])[0]))
