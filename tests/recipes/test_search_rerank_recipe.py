"""recipes/search.py --cross_encoder: the bi-encoder retrieves, the cross-encoder reranks and decides (one subprocess, then in process)."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.cli.command_line import UsageError
from hfsiamese.cross_encoder.model import CrossEncoder
from tests.conftest import REPO_ROOT, TEXTS

SEARCH = REPO_ROOT / "recipes" / "search.py"


@pytest.fixture(scope="module")
def search_recipe():
    spec = importlib.util.spec_from_file_location("search_rerank_recipe", SEARCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, word_tokenizer):
    """A tiny LSTM bi-encoder saved with its tokenizer and a calibrated cosine threshold."""
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm",
        vocab_size=len(word_tokenizer),
        embedding_dim=8,
        hidden_size=6,
        pad_token_id=0,
        threshold=0.9,
    )
    path = tmp_path_factory.mktemp("rerank_model")
    SiameseModel(config).save_pretrained(path)
    word_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def cross_dir(tmp_path_factory, tiny_cross_encoder_dir):
    """The tiny cross-encoder with its scores spread (the random model scores every pair about alike) and a threshold between them."""
    cross = CrossEncoder.from_pretrained(tiny_cross_encoder_dir)
    with torch.no_grad():
        cross.model.classifier.weight.mul_(200.0)
    values = cross.score_pairs([TEXTS[0]] * len(TEXTS), TEXTS).sort().values
    cut = int((values[1:] - values[:-1]).argmax())  # in the widest gap: no pair sits near it
    cross.config.threshold = float(values[cut] + values[cut + 1]) / 2
    path = tmp_path_factory.mktemp("rerank_cross")
    cross.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("rerank_corpus") / "questions.txt"
    path.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_reranks_with_the_cross_encoder_and_prints_json(tmp_path, model_dir, cross_dir, corpus_file):
    args = [sys.executable, str(SEARCH), "--model_name_or_path", str(model_dir), "--corpus", str(corpus_file)]
    args += [
        "--query",
        TEXTS[0],
        "--k",
        "3",
        "--cross_encoder",
        str(cross_dir),
        "--rerank_k",
        str(len(TEXTS)),
        "--json",
    ]
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    result = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    output = json.loads(result.stdout)
    cross = CrossEncoder.from_pretrained(cross_dir)
    assert output["cross_encoder"] == str(cross_dir) and output["rerank_k"] == len(TEXTS)
    assert output["threshold"] == pytest.approx(cross.config.threshold) and output["retrieval_threshold"] == 0.9
    # Reranking the whole corpus: the cross-encoder's own top 3, with its scores and decisions.
    expected = cross.score_pairs([TEXTS[0]] * len(TEXTS), TEXTS)
    top = expected.topk(3)
    matches = output["results"][0]["matches"]
    assert [m["id"] for m in matches] == top.indices.tolist()
    assert [m["score"] for m in matches] == pytest.approx(top.values.tolist(), abs=1e-5)
    assert [m["is_duplicate"] for m in matches] == (top.values >= cross.config.threshold).tolist()
    bi_encoder = SiameseModel.from_pretrained(model_dir)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    cosines = (bi_encoder.encode([TEXTS[0]], tokenizer) @ bi_encoder.encode(TEXTS, tokenizer).T)[0]
    assert [m["retrieval_score"] for m in matches] == pytest.approx(cosines[top.indices].tolist(), abs=1e-5)


def test_readable_output_and_a_cross_encoder_threshold(search_recipe, model_dir, cross_dir, corpus_file, capsys):
    base = ["--model_name_or_path", str(model_dir), "--corpus", str(corpus_file), "--query", TEXTS[2], "--k", "2"]
    output = search_recipe.main([*base, "--cross_encoder", str(cross_dir), "--threshold", "0.0"])
    assert output["rerank_k"] == 20 and output["threshold"] == 0.0  # default max(2k, 20); the threshold is a score
    assert all(m["is_duplicate"] for m in output["results"][0]["matches"])
    printed = capsys.readouterr().out
    first = output["results"][0]["matches"][0]
    assert f"1. {first['score']:.4f} (cosine {first['retrieval_score']:.4f}) duplicate" in printed
    with pytest.raises(ValueError, match=r"cross-encoder score in \[0, 1\]"):
        search_recipe.main([*base, "--cross_encoder", str(cross_dir), "--threshold", "-0.5"])


def test_flags_and_folders_are_checked(search_recipe, model_dir, cross_dir, corpus_file):
    base = ["--corpus", str(corpus_file), "--query", TEXTS[2], "--k", "3"]
    with pytest.raises(UsageError, match=r"--rerank_k \(2\) must be at least --k \(3\)"):
        search_recipe.main(
            ["--model_name_or_path", str(model_dir), *base, "--cross_encoder", str(cross_dir), "--rerank_k", "2"]
        )
    with pytest.raises(UsageError, match=r"rerank_k applies only with a cross_encoder \(--cross_encoder\)"):
        search_recipe.main(["--model_name_or_path", str(model_dir), *base, "--rerank_k", "5"])
    with pytest.raises(ValueError, match="is a cross-encoder: it scores pairs but cannot embed texts"):
        search_recipe.main(["--model_name_or_path", str(cross_dir), *base])
    with pytest.raises(ValueError, match="it is no cross-encoder"):
        search_recipe.main(["--model_name_or_path", str(model_dir), *base, "--cross_encoder", str(model_dir)])
