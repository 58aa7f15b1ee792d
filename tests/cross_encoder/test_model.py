"""CrossEncoder: scores, order symmetry, decisions, calibration, save/reload with and without hfsiamese, ONNX."""

import json

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

from hfsiamese.cross_encoder.model import CrossEncoder, is_cross_encoder_folder
from hfsiamese.loading import load_pair_model, load_siamese_model
from tests.conftest import TEXTS
from tests.helpers import folder_state, run_without_hfsiamese

A = [TEXTS[0], TEXTS[2], TEXTS[4], "a much longer question about rice and how to cook it in a pot with water ?"]
B = [TEXTS[1], TEXTS[3], TEXTS[7], TEXTS[6]]


@pytest.fixture
def spread_cross_encoder(tiny_cross_encoder_dir):
    """The tiny cross-encoder with large random weights, so that pairs get clearly different scores."""
    cross = CrossEncoder.from_pretrained(tiny_cross_encoder_dir)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for module in cross.model.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.copy_(torch.randn(module.weight.shape, generator=generator) * 0.5)
    return cross


def _plain_logits(cross, texts_a, texts_b):
    """The logits computed the plain transformers way, one pair at a time (no sorting, no batching)."""
    out = []
    for a, b in zip(texts_a, texts_b):
        with torch.no_grad():
            out.append(cross.model(**cross.tokenizer(a, b, return_tensors="pt")).logits[0, 0].item())
    return torch.tensor(out)


def test_logits_equal_one_pair_at_a_time_and_both_orders_are_averaged(spread_cross_encoder):
    cross = spread_cross_encoder
    forward, backward = _plain_logits(cross, A, B), _plain_logits(cross, B, A)
    assert cross.logits(A, B, batch_size=3) == pytest.approx(forward, abs=1e-5)
    assert (forward - backward).abs().max() > 1e-3  # the model itself is not symmetric...
    scores = cross.score_pairs(A, B, batch_size=2)
    assert scores == pytest.approx(torch.sigmoid((forward + backward) / 2), abs=1e-5)
    assert scores == pytest.approx(cross.score_pairs(B, A), abs=1e-6)  # ...its score is
    assert scores.max() - scores.min() > 0.05
    cross.config.pair_order = "given"
    assert cross.score_pairs(A, B) == pytest.approx(torch.sigmoid(forward), abs=1e-5)


def test_predict_uses_the_stored_threshold_and_rank_scores_candidates(spread_cross_encoder):
    cross = spread_cross_encoder
    scores = cross.score_pairs(A, B)
    with pytest.raises(ValueError, match="no threshold"):
        cross.predict(A, B)
    cross.config.threshold = float(scores.median())
    out = cross.predict(A, B)
    assert out["is_duplicate"].tolist() == (scores >= cross.config.threshold).tolist()
    assert cross.predict(A, B, threshold=0.0)["is_duplicate"].all()
    ranked = cross.rank(A[0], B)
    assert ranked == pytest.approx(cross.score_pairs([A[0]] * len(B), B), abs=1e-6)


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        pytest.param((A, B[:2]), ValueError, "same length", id="lengths"),
        pytest.param((A[:2], [B[0], None]), TypeError, r"texts_b\[1\] is None", id="None"),
        pytest.param((A[0], B[0]), TypeError, "not single strings", id="strings"),
        pytest.param((A, B, {"truncate_dim": 8}), ValueError, "truncate_dim applies to bi-encoder", id="truncate_dim"),
        pytest.param((A, B, {"batch_size": 0}), ValueError, "batch_size", id="batch_size"),
        pytest.param((A, B, {"max_length": 0}), ValueError, "max_length must be a positive integer", id="max_length"),
    ],
)
def test_bad_inputs_are_refused_in_one_line(tiny_cross_encoder, arguments, error, match):
    *texts, options = arguments if isinstance(arguments[-1], dict) else (*arguments, {})
    with pytest.raises(error, match=match) as info:
        tiny_cross_encoder.score_pairs(*texts, **options)
    message = str(info.value)
    assert message.strip() and "\n" not in message, f"not one line: {message!r}"


def test_pairs_longer_than_the_model_positions_are_cut_to_them(tiny_cross_encoder):
    # 64 position embeddings under all-MiniLM-L6-v2's tokenizer (512 tokens): the model's limit is the one kept.
    assert tiny_cross_encoder.default_max_length() == 64
    long = " ".join(["duplicate question"] * 60)
    with pytest.warns(UserWarning, match="64"):
        scores = tiny_cross_encoder.score_pairs([long], [long])
    assert scores.shape == (1,) and 0 < float(scores[0]) < 1


def test_save_reload_keeps_scores_threshold_and_order(spread_cross_encoder, tmp_path):
    cross = spread_cross_encoder
    cross.config.threshold = 0.42
    cross.save_pretrained(tmp_path / "saved")
    config = json.loads((tmp_path / "saved" / "config.json").read_text())
    assert config["threshold"] == 0.42 and config["pair_order"] == "both" and len(config["id2label"]) == 1
    assert config["architectures"] == ["BertForSequenceClassification"]
    # sentence-transformers' CrossEncoder applies the activation named here to the logit: the same score.
    assert config["sentence_transformers"]["activation_fn"] == "torch.nn.modules.activation.Sigmoid"
    loaded = CrossEncoder.from_pretrained(tmp_path / "saved")
    assert loaded.config.threshold == 0.42 and loaded.pair_order == "both"
    assert loaded.score_pairs(A, B) == pytest.approx(cross.score_pairs(A, B), abs=1e-6)
    assert is_cross_encoder_folder(tmp_path / "saved")
    assert isinstance(load_pair_model(tmp_path / "saved"), CrossEncoder)
    with pytest.raises(ValueError, match="is a cross-encoder: it scores pairs but cannot embed"):
        load_siamese_model(tmp_path / "saved")


@pytest.mark.slow
def test_loads_without_hfsiamese_as_a_plain_sequence_classifier(spread_cross_encoder, tmp_path):
    cross = spread_cross_encoder
    cross.config.threshold = 0.5
    cross.save_pretrained(tmp_path / "saved")
    code = r"""
import json, sys, torch
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
folder, a, b = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
model, tokenizer = AutoModelForSequenceClassification.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
with torch.no_grad():
    forward = model(**tokenizer(a, b, padding=True, return_tensors="pt")).logits[:, 0]
    backward = model(**tokenizer(b, a, padding=True, return_tensors="pt")).logits[:, 0]
print(json.dumps({"scores": torch.sigmoid((forward + backward) / 2).tolist(), "threshold": AutoConfig.from_pretrained(folder).threshold}))
"""
    out = run_without_hfsiamese(code, [tmp_path / "saved", json.dumps(A), json.dumps(B)], tmp_path)
    assert out["threshold"] == 0.5
    assert out["scores"] == pytest.approx(cross.score_pairs(A, B).tolist(), abs=1e-5)


def test_refuses_what_is_no_cross_encoder(tiny_bert_dir, tmp_path, tiny_cross_encoder_dir):
    with pytest.raises(ValueError, match="not a one-logit sequence-classification model"):
        CrossEncoder.from_pretrained(tiny_bert_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_cross_encoder_dir)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=8,
        num_labels=2,
    )
    with pytest.raises(ValueError, match="num_labels=2"):
        CrossEncoder(BertForSequenceClassification(config), tokenizer)
    assert not is_cross_encoder_folder(tiny_bert_dir) and not is_cross_encoder_folder(tmp_path / "missing")
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (pickled / name).write_bytes((tiny_cross_encoder_dir / name).read_bytes())
    torch.save({}, pickled / "pytorch_model.bin")
    with pytest.raises(ValueError, match="refusing to load pickled weights"):
        CrossEncoder.from_pretrained(pickled)


def test_calibrate_stores_a_probability_map_used_by_predict(spread_cross_encoder):
    cross = spread_cross_encoder
    pairs = [(a, b) for a in A for b in B]
    scores = cross.score_pairs([a for a, _ in pairs], [b for _, b in pairs])
    labels = (scores >= scores.median()).long().tolist()
    report = cross.calibrate(pairs, labels, method="platt", num_bootstrap=20)
    assert cross.config.calibration["method"] == "platt" and cross.config.threshold == pytest.approx(report.threshold)
    out = cross.predict(A, B)
    assert out["probability"].shape == (len(A),) and ((out["probability"] >= 0) & (out["probability"] <= 1)).all()


def test_onnx_export_scores_as_pytorch(spread_cross_encoder, tmp_path):
    from hfsiamese.cross_encoder.onnx_export import export_cross_encoder_onnx

    cross = spread_cross_encoder
    cross.config.threshold = 0.5
    source = tmp_path / "source"
    cross.save_pretrained(source)
    (source / "all_results.json").write_text("{}")
    entry = export_cross_encoder_onnx(CrossEncoder.from_pretrained(source), tmp_path / "onnx", source_dir=source)
    assert entry["fp32_max_abs_logit_diff"] <= 1e-4
    served = CrossEncoder.from_pretrained(tmp_path / "onnx")
    assert type(served.model).__name__ == "OnnxSequenceClassifier" and served.config.threshold == 0.5
    assert (tmp_path / "onnx" / "all_results.json").is_file() and not list((tmp_path / "onnx").glob("*.safetensors"))
    assert served.logits(A, B) == pytest.approx(cross.logits(A, B), abs=1e-4)
    assert served.predict(A, B)["is_duplicate"].tolist() == cross.predict(A, B)["is_duplicate"].tolist()
    with pytest.raises(ValueError, match="already an ONNX export"):
        export_cross_encoder_onnx(served, tmp_path / "again")
    with pytest.raises(FileExistsError, match="is not empty"):
        export_cross_encoder_onnx(cross, tmp_path / "onnx")
    int8 = export_cross_encoder_onnx(cross, tmp_path / "int8", quantize="int8")
    assert int8["quantization"] == "int8"
    assert CrossEncoder.from_pretrained(tmp_path / "int8").score_pairs(A, B).shape == (len(A),)


def test_exporting_into_the_model_folder_itself_is_refused_before_a_file_is_written(tiny_cross_encoder, tmp_path):
    from hfsiamese.cross_encoder.onnx_export import export_cross_encoder_onnx

    tiny_cross_encoder.save_pretrained(tmp_path / "model")
    before = folder_state(tmp_path)
    with pytest.raises(ValueError, match=r"^output_dir .*model is the model folder being exported: choose another"):
        export_cross_encoder_onnx(tiny_cross_encoder, tmp_path / "model", source_dir=tmp_path / "model", overwrite=True)
    assert folder_state(tmp_path) == before
    export_cross_encoder_onnx(tiny_cross_encoder, tmp_path / "onnx", source_dir=tmp_path / "model")  # the retry
    assert CrossEncoder.from_pretrained(tmp_path / "onnx").score_pairs(["a b"], ["b a"]).shape == (1,)
