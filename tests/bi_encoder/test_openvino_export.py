"""OpenVINO export of tiny bi-encoders (LSTM, static, BERT): fp32 equal to PyTorch, static int8 and its accuracy bar."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from hfsiamese import load_model
from hfsiamese.base.calibration_sample import split_calibration_sample
from hfsiamese.base.int8_accuracy import Int8AccuracyCheck, Int8AccuracyError
from hfsiamese.bi_encoder.onnx_export import export_onnx
from hfsiamese.bi_encoder.openvino_export import export_openvino
from hfsiamese.bi_encoder.openvino_model import OpenVinoSiameseModel
from tests.bi_encoder.test_onnx_export import tiny_model
from tests.conftest import TEXTS
from tests.helpers import assert_int8_warning_only_without_vnni

pytest.importorskip(
    "openvino", reason="the openvino extra; tests/bi_encoder/test_onnx_export.py covers ONNX without it"
)

# Texts of other lengths than the probes, some longer than the tokenizer's 16 tokens (truncated as served).
QUESTIONS = [*TEXTS, "how do i learn python and cook rice and lose weight fast in the capital of france ?", "sky"]
PAIRS = [(QUESTIONS[i], QUESTIONS[(i + 3) % len(QUESTIONS)]) for i in range(len(QUESTIONS))]


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a.float(), b.float(), dim=-1)


@pytest.mark.parametrize("encoder", ["lstm", "static", "transformer"])
@pytest.mark.slow
def test_fp32_export_loads_and_equals_pytorch(encoder, word_tokenizer, tmp_path):
    model = tiny_model(encoder, len(word_tokenizer)).eval()
    config = export_openvino(model, word_tokenizer, tmp_path / "ov")
    assert config.openvino["quantization"] is None and config.openvino["fp32_max_abs_diff"] < 1e-5
    # The LSTM is served with static shapes (OpenVINO's dynamic LSTM is wrong on ragged rows), the others dynamic.
    assert config.openvino["static_shapes"] is (encoder == "lstm")
    saved = json.loads((tmp_path / "ov" / "config.json").read_text())
    assert saved["model_type"] == "siamese_openvino" and saved["openvino"]["file"] == "openvino_model.xml"
    assert (tmp_path / "ov" / "openvino_model.bin").is_file() and not list((tmp_path / "ov").glob("*.onnx"))
    loaded = load_model(tmp_path / "ov")
    assert isinstance(loaded, OpenVinoSiameseModel) and loaded.config.threshold == model.config.threshold
    with torch.inference_mode():
        expected = model.encode(QUESTIONS, word_tokenizer, batch_size=3)
    got = loaded.encode(QUESTIONS, batch_size=3)
    assert cosine(got, expected).min() >= 0.9999
    a, b = zip(*PAIRS, strict=True)
    torch.testing.assert_close(loaded.score_pairs(a, b), model.score_pairs(a, b, word_tokenizer), atol=1e-4, rtol=0)
    with pytest.raises(ValueError, match="OpenVINO model's precision was fixed"):
        loaded.encode(QUESTIONS, dtype=torch.bfloat16)


@pytest.mark.slow
def test_static_int8_is_checked_on_held_out_texts_and_refused_past_the_bar(word_tokenizer, tmp_path):
    model = tiny_model("transformer", len(word_tokenizer)).eval()
    sample = split_calibration_sample(PAIRS, calibration_size=6, check_size=4)
    config = export_openvino(model, word_tokenizer, tmp_path / "int8", quantize="int8", calibration=sample)
    entry = config.openvino
    assert entry["quantization"] == "int8" and entry["int8_mode"] == "static" and entry["calibration_pairs"] == 6
    assert entry["int8_check_texts"] == len(sample.check_texts()) and entry["int8_check_mean_cosine"] >= 0.99
    int8 = load_model(tmp_path / "int8")
    with torch.inference_mode():
        expected = model.encode(QUESTIONS, word_tokenizer)
    assert cosine(int8.encode(QUESTIONS), expected).mean() >= 0.99
    # A bar no int8 graph meets: refused, the folder not written.
    strict = Int8AccuracyCheck(min_cosine=1.0)
    with pytest.raises(
        Int8AccuracyError, match=r"mean cosine of 0\.9\d+ .* below int8_min_cosine=1\.0; not writing it"
    ):
        export_openvino(
            model, word_tokenizer, tmp_path / "refused", quantize="int8", calibration=sample, int8_check=strict
        )
    assert not (tmp_path / "refused").exists()


def test_static_int8_records_its_7_bit_weights_and_an_older_export_warns_without_vnni(
    word_tokenizer, tmp_path, monkeypatch
):
    """NNCF's 7-bit weights are recorded; an export without that record (8-bit weights, which OpenVINO saturates
    without VNNI) warns when loaded on such a CPU, and loads quietly where VNNI sums it exactly."""
    from hfsiamese.base.openvino_export_steps import OPENVINO_INT8_WEIGHTS

    model = tiny_model("transformer", len(word_tokenizer)).eval()
    sample = split_calibration_sample(PAIRS, calibration_size=6, check_size=4)
    export_openvino(model, word_tokenizer, tmp_path / "int8", quantize="int8", calibration=sample)
    config = json.loads((tmp_path / "int8" / "config.json").read_text())
    assert config["openvino"]["int8_weights"] == OPENVINO_INT8_WEIGHTS == "s8 per-channel, 7 bits (NNCF overflow fix)"
    assert_int8_warning_only_without_vnni(tmp_path / "int8", "openvino", load_model, "OpenVINO", monkeypatch)


def test_static_int8_of_a_max_pooled_lstm_with_a_projection_keeps_its_embeddings(word_tokenizer, tmp_path):
    """
    NNCF put the projection's input quantizer on the LSTM outputs before max pooling, whose padded steps are -inf: an
    infinite range, and every embedding lost (the distilled LSTM recipe's: mean cosine 0.005 to fp32, refused). The
    projection of an LSTM or static encoder is left in fp32.
    """
    from hfsiamese import SiameseConfig, SiameseModel

    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, bidirectional=True,
        pooling="max", projection_dim=12, pad_token_id=0,
    )  # fmt: skip
    model = SiameseModel(config).eval()
    sample = split_calibration_sample(PAIRS, calibration_size=6, check_size=4)
    exported = export_openvino(model, word_tokenizer, tmp_path / "int8", quantize="int8", calibration=sample)
    assert exported.openvino["int8_check_mean_cosine"] >= 0.99
    with torch.inference_mode():
        expected = model.encode(QUESTIONS, word_tokenizer)
    assert cosine(load_model(tmp_path / "int8").encode(QUESTIONS), expected).min() >= 0.99


def test_onnx_static_int8_has_the_same_check(word_tokenizer, tmp_path):
    model = tiny_model("transformer", len(word_tokenizer)).eval()  # matrix products to quantise (a static one has none)
    sample = split_calibration_sample(PAIRS, calibration_size=6, check_size=4)
    config = export_onnx(model, word_tokenizer, tmp_path / "int8", quantize="int8", calibration=sample)
    assert config.onnx["int8_mode"] == "static" and config.onnx["int8_check_mean_cosine"] >= 0.99
    assert (
        cosine(load_model(tmp_path / "int8").encode(QUESTIONS), model.encode(QUESTIONS, word_tokenizer)).mean() >= 0.99
    )
    with pytest.raises(Int8AccuracyError, match="below int8_min_cosine=1.0"):
        export_onnx(
            model,
            word_tokenizer,
            tmp_path / "refused",
            quantize="int8",
            calibration=sample,
            int8_check=Int8AccuracyCheck(min_cosine=1.0),
        )
    assert not (tmp_path / "refused").exists()


def test_bad_requests_are_refused_before_any_work(word_tokenizer, tmp_path):
    model = tiny_model("static", len(word_tokenizer))
    sample = split_calibration_sample(PAIRS)
    with pytest.raises(ValueError, match="OpenVINO int8 is static: give a calibration sample"):
        export_openvino(model, word_tokenizer, tmp_path / "a", quantize="int8")
    with pytest.raises(ValueError, match="is for static int8: pass --quantize int8 with it"):
        export_openvino(model, word_tokenizer, tmp_path / "b", calibration=sample)
    with pytest.raises(ValueError, match="int8_on_failure must be one of"):
        Int8AccuracyCheck(on_failure="ignore")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_without_the_extra_loading_names_it(word_tokenizer, tmp_path, monkeypatch):
    model = tiny_model("static", len(word_tokenizer))
    export_openvino(model, word_tokenizer, tmp_path / "ov")
    monkeypatch.setitem(sys.modules, "openvino", None)  # as if not installed: `import openvino` raises ImportError
    with pytest.raises(ImportError, match=r"need the openvino package: pip install .*\[openvino\]"):
        load_model(tmp_path / "ov")
    with pytest.raises(ImportError, match=r"need the openvino package"):
        export_openvino(model, word_tokenizer, tmp_path / "again")
    assert not (tmp_path / "again").exists()


def test_command_line_refuses_contradictory_flags_before_any_work(tmp_path):
    from hfsiamese.bi_encoder.onnx_export import ExportArguments

    common = {"model_name_or_path": str(tmp_path), "output_dir": str(tmp_path / "out")}
    with pytest.raises(ValueError, match="OpenVINO int8 is static: give --calibration_file"):
        ExportArguments(**common, format="openvino", quantize="int8")
    with pytest.raises(ValueError, match="--calibration_file is for static int8"):
        ExportArguments(**common, calibration_file="dev.tsv")
    with pytest.raises(ValueError, match="int8_on_failure must be one of"):
        ExportArguments(**common, quantize="int8", calibration_file="dev.tsv", int8_on_failure="ignore")
    # an opset below 13 printed PyTorch's whole traced graph; a check size of 0 was taken with no calibration file
    with pytest.raises(ValueError, match=r"^opset must be an integer of at least 13 \(default 18\), got 3$"):
        ExportArguments(**common, opset=3)
    with pytest.raises(ValueError, match="calibration_size and check_size must be at least 1, got 300 and 0"):
        ExportArguments(**common, quantize="int8", check_size=0)
    assert ExportArguments(**common, opset=13).opset == 13
