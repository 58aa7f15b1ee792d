"""The web app's actions and pages without a browser (tests/recipes/test_app_browser.py drives the real page)."""

from __future__ import annotations

import os

import gradio  # noqa: F401  (the code under test imports it; the test extra has it, so a broken install is an error)
import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.cli.app_page import (
    AppArguments,
    DuplicateSearch,
    app_from_arguments,
    build_app,
    load_or_build_index,
)
from hfsiamese.search import DuplicateIndex
from tests.conftest import TEXTS


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, word_tokenizer):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm",
        vocab_size=len(word_tokenizer),
        embedding_dim=8,
        hidden_size=6,
        pad_token_id=0,
        threshold=0.95,
    )
    path = tmp_path_factory.mktemp("app_model")
    SiameseModel(config).save_pretrained(path)
    word_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def app(model_dir):
    model = SiameseModel.from_pretrained(model_dir)
    return DuplicateSearch(model, DuplicateIndex.build(TEXTS, model), k=3, max_chars=100)


def test_search_shows_the_verdict_and_the_top_matches(app):
    verdict, table = app.search(TEXTS[2])
    assert verdict.startswith("**Already asked**")
    header, _, first, *rest = table.splitlines()
    assert "P(duplicate)" not in header and len(rest) == 2  # k = 3; no calibration, no probability column
    assert TEXTS[2] in first and "| 1.000 |" in first and "| yes |" in first


def test_a_calibrated_index_adds_a_probability_column(app, monkeypatch):
    from hfsiamese.models.siamese.score_calibrator import ScoreCalibrator

    calibrator = ScoreCalibrator.from_dict({"method": "platt", "coef": 10.0, "intercept": -5.0})
    monkeypatch.setattr(app.index, "calibrator", calibrator, raising=False)
    _, table = app.search(TEXTS[2])
    header, _, first, *_ = table.splitlines()
    assert "P(duplicate)" in header
    assert f"| 1.000 | {float(calibrator.probability([1.0])[0]):.3f} | yes |" in first  # sigmoid(10 - 5) = 0.993


def test_pair_verdicts_follow_the_model(app):
    assert app.check_pair(TEXTS[0], TEXTS[0]).startswith("**Duplicates** — score 1.000")
    expected = app.model.predict([TEXTS[0]], [TEXTS[4]])
    verdict = app.check_pair(TEXTS[0], TEXTS[4])
    assert verdict.startswith("**Duplicates**" if bool(expected["is_duplicate"][0]) else "**Not duplicates**")
    assert f"score {float(expected['scores'][0]):.3f}" in verdict


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ("", "Type a question first."),
        ("   \n", "Type a question first."),
        ("x" * 10_000, "10,000 characters long; the limit is 100"),
    ],
)
def test_bad_questions_are_messages(app, question, message):
    verdict, table = app.search(question)
    assert message in verdict and table == ""
    assert message.replace("a question", "the second question") in app.check_pair(TEXTS[0], question)


def test_index_is_built_saved_and_loaded(model_dir, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS), encoding="utf-8")
    args = AppArguments(model_name_or_path=str(model_dir), corpus=str(corpus), index_dir=str(tmp_path / "index"))
    built = load_or_build_index(args)
    assert (tmp_path / "index" / "index_config.json").is_file() and len(built) == len(TEXTS)
    loaded = load_or_build_index(AppArguments(model_name_or_path=str(model_dir), index_dir=str(tmp_path / "index")))
    assert loaded.search(TEXTS[1], k=1)[0]["text"] == TEXTS[1]


def test_a_corpus_that_does_not_parse_becomes_the_page_message(model_dir, tmp_path):
    import gradio as gr

    broken = tmp_path / "broken.csv"
    broken.write_bytes(b"\xff\xfe\x00garbage,\x00\x01\n")
    blocks = app_from_arguments(AppArguments(model_name_or_path=str(model_dir), corpus=str(broken)))
    texts = [block.value for block in blocks.blocks.values() if isinstance(block, gr.Markdown)]
    assert any("Could not load the model or the corpus" in text and "broken.csv" in text for text in texts)


@pytest.mark.parametrize(("users_choice", "analytics"), [(None, False), ("True", True), ("False", False)])
def test_gradio_analytics_are_off_unless_the_user_turns_them_on(monkeypatch, users_choice, analytics):
    """No usage report or version check over the network by default; a user's GRADIO_ANALYTICS_ENABLED wins."""
    if users_choice is None:
        monkeypatch.delenv("GRADIO_ANALYTICS_ENABLED", raising=False)
    else:
        monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", users_choice)
    monkeypatch.delenv("HF_HUB_DISABLE_TELEMETRY", raising=False)  # gradio sets it when analytics are off
    assert build_app(None, error="no index").analytics_enabled is analytics
    assert os.environ.get("GRADIO_ANALYTICS_ENABLED") == users_choice  # the user's environment as it was


def test_index_is_the_old_name_of_index_dir(tmp_path):
    with pytest.warns(FutureWarning, match=r"--index is renamed --index_dir; --index goes in hfsiamese 0\.3"):
        args = AppArguments(model_name_or_path="m", index=str(tmp_path))
    assert args.index_dir == str(tmp_path)


def test_the_page_opens_an_onnx_model_and_cross_encoder_without_thread_spinning(
    model_dir, word_tokenizer, tiny_cross_encoder, tmp_path, monkeypatch
):
    """As `hfsiamese serve` does: each search is one short run between requests, and spinning threads would hold the
    cores the page's server needs; `--onnx_thread_spinning` keeps onnxruntime's default."""
    from transformers import HfArgumentParser

    from hfsiamese.bi_encoder.onnx_export import export_onnx
    from hfsiamese.cli import app_page
    from hfsiamese.cross_encoder.onnx_export import export_cross_encoder_onnx
    from tests.helpers import onnx_thread_spinning

    export_onnx(SiameseModel.from_pretrained(model_dir), word_tokenizer, tmp_path / "onnx")
    export_cross_encoder_onnx(tiny_cross_encoder, tmp_path / "cross_onnx")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS), encoding="utf-8")
    flags = ["--model_name_or_path", str(tmp_path / "onnx"), "--corpus", str(corpus)]
    flags += ["--cross_encoder", str(tmp_path / "cross_onnx")]
    monkeypatch.setattr(app_page, "build_app", lambda app, error=None: app if error is None else error)
    (args,) = HfArgumentParser(AppArguments).parse_args_into_dataclasses(flags)
    page = app_from_arguments(args)
    assert onnx_thread_spinning(page.model.session) == "0"
    assert onnx_thread_spinning(page.cross_encoder.model.session) == "0"
    assert page.index.search(TEXTS[1], k=1)[0]["text"] == TEXTS[1]
    (spinning,) = HfArgumentParser(AppArguments).parse_args_into_dataclasses([*flags, "--onnx_thread_spinning"])
    page = app_from_arguments(spinning)
    assert onnx_thread_spinning(page.model.session) == "default"
    assert onnx_thread_spinning(page.cross_encoder.model.session) == "default"
    alone = load_or_build_index(AppArguments(model_name_or_path=str(tmp_path / "onnx"), corpus=str(corpus)))
    assert onnx_thread_spinning(alone.model.session) == "0"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"port": 99999}, "port must be an integer from 1 to 65535, got 99999"),
        ({"k": 0}, "k must be an integer of at least 1, got 0"),
        ({"rerank_k": 20}, "rerank_k applies only with a cross_encoder"),
        ({"cross_encoder": "ce", "rerank_k": 0}, "rerank_k must be an integer of at least 1, got 0"),
        ({"cross_encoder": "ce", "k": 8, "rerank_k": 5}, r"rerank_k \(5\) must be at least k \(8\)"),
    ],
)
def test_the_pages_flag_mistakes_are_said_before_any_index_is_built(flags, message):
    with pytest.raises(ValueError, match=message):
        AppArguments(model_name_or_path="m", corpus="c", **flags)
