"""`--backend` is the model's runtime on the search-side commands (`search`, `groups`, `app`, `serve`), as on
`hfsiamese evaluate`: `auto` loads the export `load_model(..., backend="auto")` chooses; `--store` names the store, and
a store given as `--backend faiss` still works until 0.3, warned."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer, HfArgumentParser

from hfsiamese import load_model
from hfsiamese.backend_choice import choose_backend
from hfsiamese.bi_encoder.onnx_export import export_onnx
from hfsiamese.bi_encoder.onnx_model import OnnxSiameseModel
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.cli.app_page import AppArguments, load_or_build_index
from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.groups import main as groups_main
from hfsiamese.cli.search import main as search_main
from hfsiamese.cli.serve import ServeArguments, settings_of
from hfsiamese.search import DuplicateIndex
from hfsiamese.service.service import DuplicateService
from tests.bi_encoder.test_onnx_export import tiny_model
from tests.conftest import TEXTS


@pytest.fixture(scope="module")
def folder_with_int8(tmp_path_factory):
    """A tiny static bi-encoder saved as PyTorch, with its int8 ONNX export in a subfolder beside it."""
    tokenizer = train_word_tokenizer(TEXTS, vocab_size=100, model_max_length=16)
    model = tiny_model("static", len(tokenizer)).eval()
    folder = tmp_path_factory.mktemp("model")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    export_onnx(model, tokenizer, folder / "onnx_int8", quantize="int8", source_dir=folder)
    return folder


@pytest.fixture
def kept_int8(folder_with_int8, tmp_path, monkeypatch):
    """The folder with `onnx_int8` kept as this CPU's choice (timed by a fake clock), under this test's own cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    seconds = {".": 0.3, "onnx_int8": 0.1}
    assert choose_backend(folder_with_int8, load=load_model, timer=lambda c: seconds[c.name]).name == "onnx_int8"
    return folder_with_int8


@pytest.fixture
def loaded(monkeypatch):
    """Every model the commands load through `index_opening`, as loaded."""
    import hfsiamese.search.index_opening as index_opening

    models, real = [], index_opening.load_siamese_model

    def spy(name_or_path, *, backend=None, **kwargs):
        models.append(real(name_or_path, backend=backend, **kwargs))
        return models[-1]

    monkeypatch.setattr(index_opening, "load_siamese_model", spy)
    return models


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "questions.txt"
    path.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return str(path)


def is_int8_onnx(model) -> bool:
    return isinstance(model, OnnxSiameseModel) and model.config.onnx["quantization"] == "int8"


def test_search_and_groups_load_the_runtime_auto_chooses(kept_int8, loaded, corpus, capsys):
    model = ["--model_name_or_path", str(kept_int8), "--corpus", corpus]
    search_main([*model, "--query", TEXTS[0], "--backend", "auto", "--json"])
    groups_main([*model, "--backend", "auto", "--threshold", "0.9", "--json"])
    assert len(loaded) == 2 and all(is_int8_onnx(m) for m in loaded)
    search_main([*model, "--query", TEXTS[0], "--json"])  # no --backend: the folder as it is
    assert not isinstance(loaded[-1], OnnxSiameseModel)


def test_the_app_loads_the_runtime_auto_chooses(kept_int8, corpus):
    (args,) = HfArgumentParser(AppArguments).parse_args_into_dataclasses(
        ["--model_name_or_path", str(kept_int8), "--corpus", corpus, "--backend", "auto"]
    )
    assert is_int8_onnx(load_or_build_index(args).model)


def test_serve_loads_the_runtime_auto_chooses(kept_int8, loaded, tmp_path):
    int8 = load_model(kept_int8, backend="auto")
    DuplicateIndex.build(TEXTS, int8, AutoTokenizer.from_pretrained(kept_int8)).save(tmp_path / "index")
    (args,) = HfArgumentParser(ServeArguments).parse_args_into_dataclasses(
        ["--index_dir", str(tmp_path / "index"), "--model_name_or_path", str(kept_int8), "--backend", "auto"]
    )
    service = DuplicateService.open(settings_of(args))
    assert is_int8_onnx(service.index.model) and loaded == [service.index.model]
    assert service.info()["backend"] == "exact"  # the service's answer keeps its key: the store


def test_backend_faiss_still_means_the_store_with_a_warning(kept_int8, corpus, capsys):
    flags = ["--model_name_or_path", str(kept_int8), "--corpus", corpus, "--query", TEXTS[0], "--k", "3", "--json"]
    search_main([*flags, "--store", "faiss"])
    new = json.loads(capsys.readouterr().out)
    with pytest.warns(FutureWarning, match="--backend faiss is renamed --store faiss"):
        search_main([*flags, "--backend", "faiss"])
    assert json.loads(capsys.readouterr().out) == new
    with (
        pytest.warns(FutureWarning, match="--backend lancedb is renamed --store lancedb"),
        pytest.raises(UsageError, match="--store lancedb needs --database"),
    ):
        search_main([*flags, "--backend", "lancedb"])
    with pytest.raises(ValueError, match="--backend faiss .deprecated. and --store exact name different stores"):
        search_main([*flags, "--backend", "faiss", "--store", "exact"])


@pytest.mark.parametrize("k", ["0", "-3"])
def test_a_bad_k_is_refused_before_the_corpus_is_read(k, tmp_path):
    missing = tmp_path / "no-such-corpus.tsv"  # read first, it would be the error
    with pytest.raises(ValueError, match=f"k must be an integer of at least 1, got {k}"):
        search_main(["--model_name_or_path", str(tmp_path), "--corpus", str(missing), "--query", TEXTS[0], "--k", k])
