"""`SiameseModel.from_sentence_transformers` embeds as `SentenceTransformer(folder).encode` does, on six folders a
sentence-transformers user has: CLS, mean, max and last-token pooling, Dense layers, Normalize or not, prompts and a
max_seq_length; `from_encoder_pretrained` given such a folder says what it leaves out."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import BertModel

from hfsiamese import SiameseModel
from tests.conftest import TEXTS, tiny_bert_config

try:  # sentence-transformers >= 6
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer
except ImportError:
    from sentence_transformers.models import Dense, Normalize, Pooling, Transformer

PROBE = TEXTS + ["a much longer question about how the sky can look blue on some days and grey on others ?"]
HIDDEN = 32
# name: (pooling, Dense output sizes, Normalize, prompts, default prompt, max_seq_length)
FOLDERS = {
    "cls_dense16_prompt": ("cls", [16], True, {"query": "query : "}, "query", None),
    "mean_no_normalize": ("mean", [], False, None, None, None),
    "max_short": ("max", [], True, None, None, 8),
    "lasttoken": ("lasttoken", [], False, None, None, None),
    "weightedmean_two_dense": ("weightedmean", [24, 12], True, None, None, None),
    "cls_and_mean_prompts": (("cls", "mean"), [], False, {"query": "query : ", "doc": "doc : "}, None, None),
}


@pytest.fixture(scope="module")
def st_folders(tmp_path_factory, word_tokenizer):
    """A tiny BERT (32 dims) saved, then each sentence-transformers configuration of it, saved by sentence-transformers."""
    torch.manual_seed(0)
    config = tiny_bert_config(len(word_tokenizer), layers=2, positions=32, hidden=HIDDEN)
    base = tmp_path_factory.mktemp("bert32")
    BertModel(config).save_pretrained(base)
    word_tokenizer.save_pretrained(base)
    folders = {}
    for name, (pooling, dense, normalize, prompts, default, length) in FOLDERS.items():
        torch.manual_seed(1)
        transformer = Transformer(str(base), max_seq_length=length) if length else Transformer(str(base))
        modules = [transformer, Pooling(HIDDEN, pooling_mode=pooling)]
        width = HIDDEN * (2 if isinstance(pooling, tuple) else 1)
        for size in dense:
            modules.append(Dense(width, size, activation_function=torch.nn.Tanh()))
            width = size
        if normalize:
            modules.append(Normalize())
        model = SentenceTransformer(modules=modules, device="cpu", prompts=prompts, default_prompt_name=default)
        folders[name] = tmp_path_factory.mktemp(name)
        model.save(str(folders[name]))
    return folders


@pytest.mark.parametrize("name", list(FOLDERS))
def test_embeds_as_sentence_transformers_does(st_folders, name):
    folder = st_folders[name]
    theirs = SentenceTransformer(str(folder), device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # read faithfully, nothing to warn about
        ours = SiameseModel.from_sentence_transformers(folder)
    expected = theirs.encode(PROBE, convert_to_tensor=True, normalize_embeddings=True)
    got = ours.encode(PROBE)
    assert got.shape == expected.shape
    assert (got - expected).abs().max().item() <= 1e-5
    prompts = FOLDERS[name][3]
    for prompt_name in prompts or ():
        expected = theirs.encode(PROBE, prompt_name=prompt_name, convert_to_tensor=True, normalize_embeddings=True)
        assert (ours.encode(PROBE, prompt_name=prompt_name) - expected).abs().max().item() <= 1e-5


def test_the_cls_dense_prompt_folder_gives_16_dims_not_a_mean_pooled_32(st_folders):
    model = SiameseModel.from_sentence_transformers(st_folders["cls_dense16_prompt"])
    assert model.config.sentence_embedding_dim == 16 and model.config.pooling == "cls"
    assert model.config.default_prompt_name == "query"


def test_an_override_is_taken(st_folders):
    model = SiameseModel.from_sentence_transformers(st_folders["max_short"], max_length=6, pooling="mean")
    assert model.config.max_seq_length == 6 and model.config.pooling == "mean"


def test_from_encoder_pretrained_on_such_a_folder_names_what_it_leaves_out(st_folders):
    with pytest.warns(UserWarning, match=r"pooling 'cls', not 'mean'.*Dense 32→16 \(Tanh\).*default prompt 'query'.*"
                      r"from_sentence_transformers"):  # fmt: skip
        SiameseModel.from_encoder_pretrained(str(st_folders["cls_dense16_prompt"]), pooling="mean")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its own pooling, no Dense, no prompt: the same embeddings
        SiameseModel.from_encoder_pretrained(str(st_folders["mean_no_normalize"]), pooling="mean")


def test_a_folder_without_modules_json_is_refused_in_one_line(tiny_bert_dir):
    with pytest.raises(
        ValueError,
        match=r"has no modules.json.*from_encoder_pretrained\(path, pooling=\.\.\.\) and choose its pooling$",
    ):
        SiameseModel.from_sentence_transformers(tiny_bert_dir)


def test_a_module_it_cannot_reproduce_is_refused_and_from_encoder_pretrained_says_so(st_folders, tmp_path):
    folder = tmp_path / "lowercased"
    shutil.copytree(st_folders["mean_no_normalize"], folder)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 16, "do_lower_case": True}))
    with pytest.raises(ValueError, match="do_lower_case true"):
        SiameseModel.from_sentence_transformers(folder)
    with pytest.warns(UserWarning, match="hfsiamese cannot reproduce .*do_lower_case true"):
        SiameseModel.from_encoder_pretrained(str(folder), pooling="mean")
