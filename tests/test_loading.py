"""`hfsiamese.load_model`: the one loader, for each family PyTorch or ONNX, and the loaders that are it with fewer families."""

from __future__ import annotations

import json

import onnxruntime  # noqa: F401  (the ONNX exports need it; the test extra has it, so a broken install is an error)
import pytest
import torch

from hfsiamese import OnnxSiameseModel, SiameseModel, load_model, load_siamese_model
from hfsiamese.bi_encoder.onnx_export import export_onnx
from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.cross_encoder.onnx_export import export_cross_encoder_onnx
from hfsiamese.cross_encoder.onnx_model import OnnxSequenceClassifier
from hfsiamese.loading import is_onnx_folder, load_pair_model
from tests.conftest import TEXTS
from tests.helpers import onnx_thread_spinning


@pytest.fixture(scope="module")
def folders(tmp_path_factory, word_tokenizer, tiny_cross_encoder_dir):
    """A bi-encoder checkpoint and its ONNX export, a cross-encoder checkpoint and its ONNX export."""
    from hfsiamese import SiameseConfig

    root = tmp_path_factory.mktemp("families")
    torch.manual_seed(0)
    config = SiameseConfig(encoder_type="lstm", vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6)
    bi_encoder = SiameseModel(config).eval()
    bi_encoder.save_pretrained(root / "bi")
    word_tokenizer.save_pretrained(root / "bi")
    export_onnx(bi_encoder, word_tokenizer, root / "bi_onnx")
    export_cross_encoder_onnx(CrossEncoder.from_pretrained(tiny_cross_encoder_dir), root / "cross_onnx")
    return {
        "bi": root / "bi",
        "bi_onnx": root / "bi_onnx",
        "cross": tiny_cross_encoder_dir,
        "cross_onnx": root / "cross_onnx",
    }


def test_each_folder_gives_its_model(folders):
    assert type(load_model(folders["bi"])) is SiameseModel
    assert type(load_model(folders["bi_onnx"])) is OnnxSiameseModel
    cross, cross_onnx = load_model(folders["cross"]), load_model(folders["cross_onnx"])
    assert isinstance(cross, CrossEncoder) and not isinstance(cross.model, OnnxSequenceClassifier)
    assert isinstance(cross_onnx, CrossEncoder) and isinstance(cross_onnx.model, OnnxSequenceClassifier)
    a, b = TEXTS[:3], TEXTS[3:6]
    torch.testing.assert_close(cross_onnx.score_pairs(a, b), cross.score_pairs(a, b), atol=1e-5, rtol=0)
    for name in ("bi", "bi_onnx", "cross", "cross_onnx"):  # the pair tools' loader is the one loader
        assert type(load_pair_model(folders[name])) is type(load_model(folders[name]))


def test_one_marker_tells_an_export_of_either_family(folders):
    for name in ("bi_onnx", "cross_onnx"):
        assert json.loads((folders[name] / "config.json").read_text())["onnx"]["file"] == "model.onnx"
        assert is_onnx_folder(folders[name])
    assert not is_onnx_folder(folders["bi"]) and not is_onnx_folder(folders["cross"])


def test_load_siamese_model_refuses_either_cross_encoder(folders):
    assert type(load_siamese_model(folders["bi_onnx"])) is OnnxSiameseModel
    for name in ("cross", "cross_onnx"):
        with pytest.raises(ValueError, match="is a cross-encoder: it scores pairs but cannot embed texts"):
            load_siamese_model(folders[name])


def test_a_folder_of_neither_family_is_one_line(tiny_bert_dir, tmp_path):
    with pytest.raises(
        ValueError, match=r"is neither a hfsiamese bi-encoder nor a cross-encoder .*'bert' model"
    ) as err:
        load_model(tiny_bert_dir)
    assert "\n" not in str(err.value)
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(FileNotFoundError, match="holds no config.json"):
        load_model(tmp_path)
    with pytest.raises(ValueError, match="is neither"):
        load_siamese_model(tiny_bert_dir)


def test_runtime_options_reach_the_runtime_that_loads_and_no_other(folders):
    from hfsiamese.loading import runtime_kwargs
    from hfsiamese.utils.onnx_runtime import session_options

    options = {"onnx": {"session_options": session_options(thread_spinning=False)}, "openvino": {"ov_config": {}}}
    bi_onnx = load_model(folders["bi_onnx"], runtime_options=options)
    assert onnx_thread_spinning(bi_onnx.session) == "0"
    assert onnx_thread_spinning(load_siamese_model(folders["bi_onnx"], runtime_options=options).session) == "0"
    # Without options, either family's export opens with threads that sleep between runs (the tokeniser and the
    # padding need the cores between them); spinning, onnxruntime's default, where asked for.
    assert onnx_thread_spinning(load_model(folders["bi_onnx"]).session) == "0"
    assert onnx_thread_spinning(load_pair_model(folders["cross_onnx"]).model.session) == "0"
    spinning = load_model(folders["bi_onnx"], session_options=session_options(thread_spinning=True))
    assert onnx_thread_spinning(spinning.session) == "default"
    spinning_cross = load_pair_model(
        folders["cross_onnx"], runtime_options={"onnx": {"session_options": session_options(thread_spinning=True)}}
    )
    assert onnx_thread_spinning(spinning_cross.model.session) == "default"
    cross_onnx = load_pair_model(folders["cross_onnx"], runtime_options=options)
    assert onnx_thread_spinning(cross_onnx.model.session) == "0"
    # A PyTorch folder gets only the "pytorch" entry: the ONNX session options would be refused by transformers.
    assert type(load_model(folders["bi"], runtime_options=options)) is SiameseModel
    assert isinstance(load_model(folders["cross"], runtime_options=options), CrossEncoder)
    torch_options = {"pytorch": {"torch_dtype": torch.bfloat16}}
    assert load_model(folders["bi"], runtime_options=torch_options).dtype == torch.bfloat16
    assert type(load_model(folders["bi_onnx"], runtime_options=torch_options)) is OnnxSiameseModel
    assert runtime_kwargs(folders["cross_onnx"], options) == options["onnx"]
    assert runtime_kwargs(folders["cross"], options) == {}


def test_runtime_options_for_no_runtime_are_one_line_before_loading(folders, tmp_path):
    for loader in (load_model, load_siamese_model, load_pair_model):
        with pytest.raises(ValueError, match=r"keyed by runtime, one of \('pytorch', 'onnx', 'openvino'\): \['ort'\]"):
            loader(tmp_path / "no_such_folder", runtime_options={"ort": {}})  # refused before the folder is read
