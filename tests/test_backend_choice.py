"""`backend="auto"`: a folder with exports side by side, the fastest chosen once per CPU and folder, and kept."""

from __future__ import annotations

import json
import logging

import pytest

from hfsiamese import backend_choice, load_model
from hfsiamese.backend_choice import candidates, choose_backend, time_candidate
from hfsiamese.bi_encoder.onnx_export import export_onnx
from hfsiamese.bi_encoder.onnx_model import OnnxSiameseModel
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from tests.bi_encoder.test_onnx_export import tiny_model
from tests.conftest import TEXTS


@pytest.fixture(scope="module")
def folder_with_exports(tmp_path_factory):
    """A tiny static bi-encoder saved as PyTorch, with its fp32 and int8 ONNX exports in subfolders beside it."""
    tokenizer = train_word_tokenizer(TEXTS, vocab_size=100, model_max_length=16)
    model = tiny_model("static", len(tokenizer)).eval()
    folder = tmp_path_factory.mktemp("model")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    export_onnx(model, tokenizer, folder / "onnx_fp32", source_dir=folder)
    export_onnx(model, tokenizer, folder / "onnx_int8", quantize="int8", source_dir=folder)
    (folder / "notes").mkdir()  # a subfolder that is no export: not a candidate
    return folder


@pytest.fixture
def choices(tmp_path, monkeypatch):
    """Decisions kept under this test's own cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "hfsiamese" / backend_choice.CHOICES_FILE


class CountingTimer:
    """Seconds per candidate name, counting the calls."""

    def __init__(self, seconds: dict[str, float]) -> None:
        self.seconds, self.calls = seconds, 0

    def __call__(self, candidate):
        self.calls += 1
        return self.seconds[candidate.name]


def test_a_folder_carries_itself_and_its_exports(folder_with_exports):
    found = {candidate.name: candidate.description for candidate in candidates(folder_with_exports)}
    assert found == {".": "PyTorch fp32", "onnx_fp32": "ONNX fp32", "onnx_int8": "ONNX int8"}


def test_the_fastest_is_chosen_said_and_kept(folder_with_exports, choices, caplog):
    timer = CountingTimer({".": 0.3, "onnx_fp32": 0.2, "onnx_int8": 0.1})
    with caplog.at_level(logging.INFO, logger="hfsiamese.backend_choice"):
        chosen = choose_backend(folder_with_exports, load=load_model, timer=timer)
    assert chosen.name == "onnx_int8" and timer.calls == 3
    assert "backend auto: onnx_int8 (ONNX int8), the fastest of PyTorch fp32 [.] 186.7" in caplog.text
    kept = json.loads(choices.read_text())
    (entry,) = kept.values()
    assert entry["chosen"] == "onnx_int8" and entry["pairs_per_second"]["onnx_int8"] == 560.0
    # A second decision (another process alike: it reads the file) does not time again, and agrees.
    again = CountingTimer({".": 0.01, "onnx_fp32": 0.2, "onnx_int8": 0.1})
    assert choose_backend(folder_with_exports, load=load_model, timer=again).name == "onnx_int8" and again.calls == 0
    # load_model(backend="auto") loads the kept choice without timing anything.
    loaded = load_model(folder_with_exports, backend="auto")
    assert isinstance(loaded, OnnxSiameseModel) and loaded.config.onnx["quantization"] == "int8"


def test_the_decision_is_per_cpu(folder_with_exports, choices, monkeypatch):
    monkeypatch.setattr(backend_choice, "machine_key", lambda: "CPU A | 2 threads")
    first = CountingTimer({".": 0.3, "onnx_fp32": 0.2, "onnx_int8": 0.1})
    assert choose_backend(folder_with_exports, load=load_model, timer=first).name == "onnx_int8"
    monkeypatch.setattr(backend_choice, "machine_key", lambda: "CPU B | 2 threads")
    other = CountingTimer({".": 0.05, "onnx_fp32": 0.2, "onnx_int8": 0.1})
    assert choose_backend(folder_with_exports, load=load_model, timer=other).name == "." and other.calls == 3
    assert sorted(key.split(" | ")[0] for key in json.loads(choices.read_text())) == ["CPU A", "CPU B"]


def test_timing_a_candidate_scores_pairs(folder_with_exports):
    (onnx,) = [candidate for candidate in candidates(folder_with_exports) if candidate.name == "onnx_fp32"]
    assert 0 < time_candidate(onnx, load_model) < 60


def test_bad_requests_are_one_line(folder_with_exports, tmp_path):
    with pytest.raises(ValueError, match=r"backend must be one of \('auto', 'pytorch', 'onnx', 'openvino'\) or None"):
        load_model(folder_with_exports, backend="fastest")
    with pytest.raises(ValueError, match="backend='auto' chooses among a local folder's exports: .* is no folder"):
        load_model(tmp_path / "missing", backend="auto")


def test_a_runtime_chooses_among_its_own_candidates_and_keeps_that_apart(folder_with_exports, choices):
    # "pytorch": the folder itself, the only one, untimed.
    untimed = CountingTimer({})
    assert choose_backend(folder_with_exports, load=load_model, timer=untimed, backend="pytorch").name == "."
    assert untimed.calls == 0
    # "onnx": the faster of its two exports, even where PyTorch would be faster still.
    timer = CountingTimer({".": 0.001, "onnx_fp32": 0.5, "onnx_int8": 0.2})
    assert choose_backend(folder_with_exports, load=load_model, timer=timer, backend="onnx").name == "onnx_int8"
    assert timer.calls == 2
    # The choice among all is another decision, timed on its own and kept apart.
    assert choose_backend(folder_with_exports, load=load_model, timer=timer).name == "."
    assert isinstance(load_model(folder_with_exports, backend="onnx"), OnnxSiameseModel)


def test_a_runtime_the_folder_does_not_carry_is_one_line(folder_with_exports, choices):
    with pytest.raises(
        ValueError, match=r"backend='openvino': .* carries no OpenVINO model \(it carries: \. \(PyTorch fp32\), "
    ):
        load_model(folder_with_exports, backend="openvino")
