"""How exports trace a graph: the exporter tried first and its fallback, the attention written out inside the export."""

from __future__ import annotations

import logging

import onnx
import pytest
import torch

from hfsiamese.base import onnx_export_steps
from hfsiamese.base.onnx_export_steps import (
    FP32_TOLERANCE,
    TRACED_ATTENTION,
    check_export_request,
    refuse_if_unlike_pytorch,
    trace_onnx_graph,
    traced_attention,
)
from hfsiamese.bi_encoder.onnx_export import EmbeddingGraph, _right_padded_batch, export_graph
from hfsiamese.cross_encoder.onnx_export import export_cross_encoder_graph, export_cross_encoder_onnx
from tests.bi_encoder.test_onnx_export import tiny_model

# PyTorch's fused attention decomposes with a guard against NaN rows; the written-out attention has none.
SDPA_MARKER = "IsNaN"


def op_types(path) -> set[str]:
    return {node.op_type for node in onnx.load(str(path)).graph.node}


def test_a_transformer_is_traced_with_its_attention_written_out_and_runs_as_before(tmp_path):
    model = tiny_model("transformer", 50).eval()
    assert model.encoder.config._attn_implementation == "sdpa"
    assert export_graph(model, tmp_path / "model.onnx") == "torchscript"  # the graph onnxruntime fuses
    assert SDPA_MARKER not in op_types(tmp_path / "model.onnx")
    assert model.config._attn_implementation == model.encoder.config._attn_implementation == "sdpa"


def test_the_cross_encoder_is_traced_so_too(tiny_cross_encoder, tmp_path):
    before = tiny_cross_encoder.model.config._attn_implementation
    exporter, names = export_cross_encoder_graph(tiny_cross_encoder, tmp_path / "model.onnx")
    assert exporter == "torchscript" and names[:2] == ("input_ids", "attention_mask")
    assert SDPA_MARKER not in op_types(tmp_path / "model.onnx")
    assert tiny_cross_encoder.model.config._attn_implementation == before
    entry = export_cross_encoder_onnx(tiny_cross_encoder, tmp_path / "folder")
    assert entry["exporter"] == "torchscript"  # the one that made the graph, not a fixed name


def test_the_attention_comes_back_after_an_error_and_a_model_without_it_is_left_alone():
    model = tiny_model("transformer", 50)
    with pytest.raises(RuntimeError, match="traced"), traced_attention(model):
        assert model.encoder.config._attn_implementation == TRACED_ATTENTION
        raise RuntimeError("traced")
    assert model.encoder.config._attn_implementation == "sdpa"
    lstm = tiny_model("lstm", 50)
    with traced_attention(lstm):
        pass
    with traced_attention(object()):  # not a transformers model at all
        pass


def test_the_next_exporter_takes_over_when_one_cannot_capture_the_model(monkeypatch, tmp_path):
    model = tiny_model("static", 50).eval()
    graph, example = EmbeddingGraph(model).eval(), _right_padded_batch(model, 3, 9, seed=0)
    names = dict(input_names=("input_ids", "attention_mask"), output_name="sentence_embedding", opset=18)

    def cannot(*args, **kwargs):
        raise RuntimeError("cannot capture this")

    monkeypatch.setitem(onnx_export_steps._EXPORT, "torchscript", cannot)
    assert (
        trace_onnx_graph(graph, example, tmp_path / "a.onnx", exporters=("torchscript", "dynamo"), **names) == "dynamo"
    )
    assert (tmp_path / "a.onnx").is_file()
    with pytest.raises(RuntimeError, match="cannot capture this"):  # the last one's error is the caller's
        trace_onnx_graph(graph, example, tmp_path / "b.onnx", exporters=("torchscript",), **names)
    with pytest.raises(ValueError, match="exporters must be some of"):
        trace_onnx_graph(graph, example, tmp_path / "c.onnx", exporters=("jit",), **names)


def test_a_model_that_keeps_its_own_attention_is_traced_without_a_warning(tmp_path):
    import logging

    from transformers import MPNetConfig

    from hfsiamese import SiameseConfig, SiameseModel

    encoder = MPNetConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, pad_token_id=1
    )
    model = SiameseModel(SiameseConfig(encoder_type="transformer", encoder_config=encoder.to_dict())).eval()
    heard: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: heard.append(record.getMessage())  # type: ignore[method-assign]
    source = logging.getLogger("transformers.modeling_utils")
    source.addHandler(handler)
    try:
        assert export_graph(model, tmp_path / "model.onnx") == "torchscript"
    finally:
        source.removeHandler(handler)
    assert not [message for message in heard if "attention implementation" in message]
    assert not source.filters  # the quiet filter is gone again


def test_a_graph_unlike_pytorch_is_refused_in_one_sentence_and_one_within_tolerance_passes():
    refuse_if_unlike_pytorch(FP32_TOLERANCE, graph="the dynamo export of this model", measure="max abs")
    with pytest.raises(ValueError) as refused:
        refuse_if_unlike_pytorch(2e-3, graph="the OpenVINO conversion of this cross-encoder", measure="max abs logit")
    assert str(refused.value) == (
        "the OpenVINO conversion of this cross-encoder differs from PyTorch by 2.00e-03 (max abs logit, tolerance "
        f"{FP32_TOLERANCE}) on batches of other shapes than the traced one; not writing it"
    )


def test_the_dynamo_exporters_torchvision_notice_is_held_back_during_an_export_only(monkeypatch, caplog, tmp_path):
    registration = logging.getLogger(onnx_export_steps.REGISTRATION_LOGGER)

    def export_that_registers(*args, **kwargs):
        registration.warning("torchvision is not installed. Skipping %s", "torchvision::nms")
        registration.warning("another notice")

    monkeypatch.setattr(torch.onnx, "export", export_that_registers)
    model = tiny_model("lstm", 50).eval()
    with caplog.at_level(logging.WARNING, logger=onnx_export_steps.REGISTRATION_LOGGER):
        onnx_export_steps._export_dynamo(
            model, (torch.ones(1, 3, dtype=torch.long),), tmp_path / "m.onnx", {"input_names": ["input_ids"]}
        )
        registration.warning("torchvision is not installed. Skipping %s", "torchvision::roi_pool")  # after: as it was
    assert [record.getMessage() for record in caplog.records] == [
        "another notice",
        "torchvision is not installed. Skipping torchvision::roi_pool",
    ]
    assert registration.filters == []


@pytest.mark.parametrize("opset", [12, 3.5, True])
def test_an_opset_below_what_int8_needs_is_refused_before_the_folder_is_made(tmp_path, opset):
    with pytest.raises(ValueError, match="opset must be an integer of at least 13"):
        check_export_request(tmp_path / "out", quantize=None, overwrite=False, opset=opset)
    assert not (tmp_path / "out").exists()
    assert check_export_request(tmp_path / "out", quantize=None, overwrite=False, opset=13) == tmp_path / "out"
