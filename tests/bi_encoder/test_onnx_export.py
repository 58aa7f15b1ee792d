"""ONNX export of tiny models: both encoders, fp32 and int8, dynamic batch and length, the folder it writes."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime
import pytest
import torch
from transformers import BertConfig

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.onnx_export import export_onnx
from hfsiamese.models.siamese.configuration_siamese import ENCODER_TYPES
from tests.fixtures import saved_tiny_lstm
from tests.helpers import assert_int8_warning_only_without_vnni, folder_state

# (batch, length) pairs the issue asks for: shapes other than the one the graph was traced with (3, 9).
SHAPES = [(1, 3), (1, 40), (7, 3), (7, 40)]


def tiny_model(encoder: str, vocab_size: int, **config: object) -> SiameseModel:
    torch.manual_seed(0)
    if encoder == "lstm":
        return SiameseModel(
            SiameseConfig(
                encoder_type="lstm",
                vocab_size=vocab_size,
                embedding_dim=8,
                hidden_size=6,
                bidirectional=True,
                num_layers=2,
                pad_token_id=0,
                threshold=0.5,
                **config,
            )
        )
    if encoder == "static":
        return SiameseModel(
            SiameseConfig(
                encoder_type="static", vocab_size=vocab_size, embedding_dim=8, pooling="weighted_mean", **config
            )
        )
    bert = BertConfig(
        vocab_size=vocab_size,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        pad_token_id=0,
    )
    return SiameseModel(
        SiameseConfig(encoder_type="transformer", encoder_config=bert.to_dict(), threshold=0.7, **config)
    )


def ragged_batch(batch: int, length: int, vocab_size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, length + 1, (batch,), generator=generator)
    lengths[0] = length
    mask = (torch.arange(length)[None] < lengths[:, None]).long()
    ids = torch.randint(1, vocab_size, (batch, length), generator=generator) * mask
    return ids, mask


ENCODERS = ["lstm", "transformer"] + ["static"] * ("static" in ENCODER_TYPES)


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("quantize", [None, "int8"])
@pytest.mark.slow
def test_graph_matches_pytorch_on_dynamic_shapes(encoder, quantize, word_tokenizer, tmp_path):
    model = tiny_model(encoder, len(word_tokenizer)).eval()
    config = export_onnx(model, word_tokenizer, tmp_path / "onnx", quantize=quantize)
    session = onnxruntime.InferenceSession(str(tmp_path / "onnx" / "model.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask"]
    assert [o.name for o in session.get_outputs()] == ["sentence_embedding"]
    assert config.onnx["quantization"] == quantize and config.onnx["fp32_max_abs_diff"] < 1e-5
    for seed, (batch, length) in enumerate(SHAPES):
        ids, mask = ragged_batch(batch, length, len(word_tokenizer), seed)
        with torch.inference_mode():
            expected = model.embed(ids, mask).numpy()
        (got,) = session.run(["sentence_embedding"], {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})
        assert got.shape == (batch, model.config.sentence_embedding_dim)
        np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1.0, atol=1e-3)  # still L2-normalised
        if quantize is None:
            np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
        else:
            assert (got * expected).sum(-1).min() >= 0.99  # cosine of int8 to PyTorch's embedding


def test_folder_is_a_model_folder_noting_the_export(word_tokenizer, tmp_path):
    source = tmp_path / "trained"
    model = tiny_model("lstm", len(word_tokenizer))
    model.config.calibration = {"method": "threshold", "data": "dev.tsv", "num_pairs": 10, "target": "accuracy"}
    model.save_pretrained(source)
    word_tokenizer.save_pretrained(source)
    (source / "all_results.json").write_text('{"eval_average_precision": 0.8}')
    (source / "README.md").write_text(
        "---\nlicense: apache-2.0\ntags:\n- hfsiamese\n---\n# my model\n\nTrained on QQP.\n"
    )
    export_onnx(model, word_tokenizer, tmp_path / "onnx", quantize="int8", source_dir=source)
    out = tmp_path / "onnx"
    names = {path.name for path in out.iterdir()}
    assert {"model.onnx", "config.json", "tokenizer.json", "README.md", "all_results.json"} <= names
    assert not any(name.endswith((".py", ".safetensors")) for name in names)  # no weights, no remote code
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "siamese_onnx" and "auto_map" not in config
    assert config["threshold"] == 0.5 and config["calibration"]["method"] == "threshold"
    assert config["onnx"]["exporter"] == "torchscript" and config["onnx"]["quantization"] == "int8"
    card = (out / "README.md").read_text()
    assert "license: apache-2.0" in card and "- onnx" in card and "Trained on QQP." in card
    assert "## ONNX export" in card and "int8" in card


def test_classification_head_travels_beside_the_graph(word_tokenizer, tmp_path):
    from hfsiamese import load_siamese_model

    model = tiny_model("lstm", len(word_tokenizer), classifier_head=True, classifier_hidden_size=4)
    export_onnx(model, word_tokenizer, tmp_path / "onnx")
    assert (tmp_path / "onnx" / "classifier.safetensors").is_file()
    loaded = load_siamese_model(tmp_path / "onnx")
    a, b = ["how do i learn python ?"], ["why is the sky blue ?"]
    expected = model.predict(a, b, word_tokenizer, threshold=0.5)
    got = loaded.predict(a, b, threshold=0.5)
    torch.testing.assert_close(got["probabilities"], expected["probabilities"], atol=1e-5, rtol=0)


def test_refuses_a_graph_that_differs_from_pytorch(word_tokenizer, tmp_path, monkeypatch):
    from hfsiamese.bi_encoder import onnx_export as onnx_export

    model = tiny_model("lstm", len(word_tokenizer))
    other = tiny_model("lstm", len(word_tokenizer), pooling="max")  # same inputs, another function
    original = onnx_export.export_graph
    monkeypatch.setattr(onnx_export, "export_graph", lambda _model, path, **kw: original(other, path, **kw))
    with pytest.raises(ValueError, match="differs from PyTorch"):
        export_onnx(model, word_tokenizer, tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()  # nothing half-written


def test_a_graph_that_differs_is_made_again_by_the_other_exporter(word_tokenizer, tmp_path, monkeypatch):
    from hfsiamese.base import onnx_export_steps
    from hfsiamese.bi_encoder.onnx_export import EmbeddingGraph

    model = tiny_model("transformer", len(word_tokenizer))
    other = EmbeddingGraph(tiny_model("transformer", len(word_tokenizer), pooling="max")).eval()
    torchscript = onnx_export_steps._EXPORT["torchscript"]
    monkeypatch.setitem(  # the exporter tried first for a transformer writes another function's graph
        onnx_export_steps._EXPORT, "torchscript", lambda _graph, *args: torchscript(other, *args)
    )
    config = export_onnx(model, word_tokenizer, tmp_path / "onnx")
    assert config.onnx["exporter"] == "dynamo" and config.onnx["fp32_max_abs_diff"] < 1e-5


def test_refuses_a_non_empty_output_dir(word_tokenizer, tmp_path):
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="is not empty"):
        export_onnx(tiny_model("lstm", len(word_tokenizer)), word_tokenizer, tmp_path / "onnx")
    assert (tmp_path / "onnx" / "keep.txt").read_text() == "mine"


def test_refuses_an_unknown_quantization(word_tokenizer, tmp_path):
    with pytest.raises(ValueError, match="quantize must be one of"):
        export_onnx(tiny_model("lstm", len(word_tokenizer)), word_tokenizer, tmp_path / "onnx", quantize="int4")


def test_int8_records_its_weights_and_an_older_export_warns_without_vnni(word_tokenizer, tmp_path, monkeypatch):
    """Reduced-range weights are recorded; an export without that record (full range, saturating without VNNI)
    warns when loaded on such a CPU, and loads quietly where VNNI sums it exactly."""
    from hfsiamese.base.onnx_export_steps import INT8_WEIGHTS
    from hfsiamese.bi_encoder.onnx_model import OnnxSiameseModel

    export_onnx(tiny_model("lstm", len(word_tokenizer)), word_tokenizer, tmp_path / "onnx", quantize="int8")
    config = json.loads((tmp_path / "onnx" / "config.json").read_text())
    assert config["onnx"]["int8_weights"] == INT8_WEIGHTS == "s8 per-channel, reduced range (7 bits)"
    assert_int8_warning_only_without_vnni(
        tmp_path / "onnx", "onnx", OnnxSiameseModel.from_pretrained, "onnxruntime", monkeypatch
    )


def test_exporting_into_the_model_folder_itself_is_refused_before_a_file_is_written(word_tokenizer, tmp_path):
    """`hfsiamese export --output_dir` the model's own folder with --overwrite_output_dir wrote model.onnx into it and
    then failed copying its tokenizer onto itself (shutil.SameFileError)."""
    from hfsiamese.cli.export import main as export

    saved_tiny_lstm(tmp_path / "model", word_tokenizer)
    before = folder_state(tmp_path)
    folder = str(tmp_path / "model")
    with pytest.raises(ValueError, match=r"^output_dir .*model is the model folder being exported: choose another"):
        export(["--model_name_or_path", folder, "--output_dir", folder, "--overwrite_output_dir"])
    assert folder_state(tmp_path) == before
    export(["--model_name_or_path", folder, "--output_dir", str(tmp_path / "onnx")])  # the retry
    assert (tmp_path / "onnx" / "model.onnx").is_file()
