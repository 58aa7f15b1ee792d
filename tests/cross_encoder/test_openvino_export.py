"""OpenVINO export of a tiny cross-encoder: fp32 equal to PyTorch, static int8 refused past its score bar."""

from __future__ import annotations

import pytest
import torch

from hfsiamese import load_model
from hfsiamese.base.calibration_sample import split_calibration_sample
from hfsiamese.base.int8_accuracy import Int8AccuracyCheck, Int8AccuracyError
from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.cross_encoder.openvino_export import export_cross_encoder_openvino
from tests.conftest import TEXTS

pytest.importorskip("openvino", reason="the openvino extra; tests/cross_encoder/test_model.py covers ONNX without it")

A = [TEXTS[0], TEXTS[2], TEXTS[4], "a much longer question about rice and how to cook it in a pot with water ?"]
B = [TEXTS[1], TEXTS[3], TEXTS[7], TEXTS[6]]
PAIRS = [(TEXTS[i], TEXTS[(i + 3) % len(TEXTS)]) for i in range(len(TEXTS))]


@pytest.mark.slow
def test_fp32_export_equals_pytorch_and_static_int8_is_refused_past_the_bar(tiny_cross_encoder, tmp_path):
    entry = export_cross_encoder_openvino(tiny_cross_encoder, tmp_path / "ov")
    assert entry["quantization"] is None and entry["fp32_max_abs_logit_diff"] <= 1e-4
    served = load_model(tmp_path / "ov")
    assert isinstance(served, CrossEncoder) and type(served.model).__name__ == "OpenVinoSequenceClassifier"
    expected = tiny_cross_encoder.logits(A, B)
    got = served.logits(A, B)
    assert torch.nn.functional.cosine_similarity(got.flatten(), expected.flatten(), dim=0) >= 0.9999
    assert got == pytest.approx(expected, abs=1e-4)
    with pytest.raises(ValueError, match="already an OpenVINO export"):
        export_cross_encoder_openvino(served, tmp_path / "again")
    sample = split_calibration_sample(PAIRS, calibration_size=5, check_size=3)
    with pytest.raises(
        Int8AccuracyError, match=r"3 held-out pairs differ .* above int8_max_score_diff=0\.0; not writing"
    ):
        export_cross_encoder_openvino(
            tiny_cross_encoder,
            tmp_path / "refused",
            quantize="int8",
            calibration=sample,
            int8_check=Int8AccuracyCheck(max_score_diff=0.0),
        )
    assert not (tmp_path / "refused").exists()
