"""Loading a saved model: safetensors only, and every broken file an error that names it."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import struct

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModel, AutoTokenizer, BertConfig

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from tests.conftest import REPO_ROOT, TEXTS


@pytest.fixture
def saved_lstm(tiny_lstm, word_tokenizer, tmp_path):
    folder = tmp_path / "lstm"
    tiny_lstm.save_pretrained(folder)
    word_tokenizer.save_pretrained(folder)
    return folder


def _header_size(path) -> int:
    return 8 + struct.unpack("<Q", path.read_bytes()[:8])[0]


def test_saving_writes_safetensors_and_no_pickle(saved_lstm):
    names = sorted(os.listdir(saved_lstm))
    assert "model.safetensors" in names
    assert not [name for name in names if name.endswith((".bin", ".pt", ".pth", ".pkl"))]


def test_intact_checkpoint_loads(saved_lstm, tiny_lstm):
    loaded, info = SiameseModel.from_pretrained(saved_lstm, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    for name, tensor in tiny_lstm.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name


@pytest.mark.parametrize("loader", [SiameseModel.from_pretrained, AutoModel.from_pretrained])
@pytest.mark.parametrize("damage", ["truncated", "empty", "header bytes flipped"])
def test_unreadable_weights_name_the_file(saved_lstm, loader, damage):
    weights = saved_lstm / "model.safetensors"
    data = bytearray(weights.read_bytes())
    if damage == "truncated":
        data = data[: len(data) - 64]
    elif damage == "empty":
        data = bytearray()
    else:
        data[12:20] = b"\xff" * 8  # inside the JSON header
    weights.write_bytes(bytes(data))
    with pytest.raises(
        ValueError, match=rf"{re.escape(str(weights))}: not a readable safetensors file .*truncated or corrupted"
    ):
        loader(saved_lstm)


def test_flipped_weight_bytes_giving_nan_name_file_and_tensor(saved_lstm):
    # safetensors has no checksum: bytes flipped in the data load silently unless they make NaN/inf.
    weights = saved_lstm / "model.safetensors"
    data = bytearray(weights.read_bytes())
    start = _header_size(weights)
    data[start : start + 8] = b"\xff" * 8  # 0xffffffff is a float32 NaN
    weights.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"{re.escape(str(weights))}: tensor '.+' holds NaN or infinite values"):
        SiameseModel.from_pretrained(saved_lstm)


def test_weights_missing_a_tensor_are_refused(saved_lstm):
    weights = saved_lstm / "model.safetensors"
    tensors = load_file(weights)
    dropped = min(tensors)
    del tensors[dropped]
    save_file(tensors, weights, metadata={"format": "pt"})
    with pytest.raises(
        ValueError, match=rf"model\.safetensors lacks 1 tensor\(s\) of this model \({re.escape(dropped)}\)"
    ):
        SiameseModel.from_pretrained(saved_lstm)


def test_config_of_another_model_type_names_file_and_type(saved_lstm):
    BertConfig(
        vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8
    ).save_pretrained(saved_lstm)
    config_file = re.escape(str(saved_lstm / "config.json"))
    with pytest.raises(ValueError, match=rf"{config_file} has model_type 'bert', not 'siamese'"):
        SiameseModel.from_pretrained(saved_lstm)
    with pytest.raises(ValueError, match=rf"{config_file} has model_type 'bert'"):
        SiameseConfig.from_pretrained(saved_lstm)
    without_type = json.loads((saved_lstm / "config.json").read_text())
    del without_type["model_type"]
    (saved_lstm / "config.json").write_text(json.dumps(without_type))
    with pytest.raises(ValueError, match=rf"{config_file} has no model_type"):
        SiameseConfig.from_pretrained(saved_lstm)


class _Tripwire:
    """A pickle that creates a folder when unpickled: proof that nothing unpickled it."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _pickle_only(folder, marker) -> None:
    for name in os.listdir(folder):
        if name.endswith(".safetensors"):
            os.remove(folder / name)
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Tripwire(str(marker))))


def test_pickle_only_folder_is_refused_unread(saved_lstm, tmp_path, monkeypatch):
    marker = tmp_path / "unpickled"
    _pickle_only(saved_lstm, marker)

    def no_torch_load(*args, **kwargs):
        raise AssertionError("torch.load was called")

    monkeypatch.setattr(torch, "load", no_torch_load)
    expected = rf"{re.escape(str(saved_lstm / 'pytorch_model.bin'))}: refusing to load pickled weights"
    for load in (SiameseModel.from_pretrained, AutoModel.from_pretrained):
        with pytest.raises(ValueError, match=expected):
            load(saved_lstm)
    with pytest.raises(ValueError, match="safetensors weights only"):
        SiameseModel.from_pretrained(saved_lstm, use_safetensors=False)
    assert not marker.exists()


def test_pickle_only_encoder_folder_is_refused(tiny_bert_dir, tmp_path):
    folder = tmp_path / "bert_bin"
    shutil.copytree(tiny_bert_dir, folder)
    marker = tmp_path / "unpickled"
    _pickle_only(folder, marker)
    with pytest.raises(ValueError, match=r"pytorch_model\.bin: refusing to load pickled weights"):
        SiameseModel.from_encoder_pretrained(str(folder))
    with pytest.raises(ValueError, match="safetensors weights only"):
        SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), encoder_kwargs={"use_safetensors": False})
    assert not marker.exists()


def test_missing_folder_and_folder_without_weights(tmp_path):
    with pytest.raises(FileNotFoundError, match="model folder not found: .*nowhere"):
        SiameseModel.from_pretrained(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"empty holds no model\.safetensors"):
        SiameseModel.from_pretrained(tmp_path / "empty")


def test_no_pickle_loading_in_the_package():
    """A guard on the sources: hfsiamese itself never unpickles (Trainer resume is transformers')."""
    pattern = re.compile(
        r"torch\.load\(|import pickle|pickle\.loads?\(|allow_pickle=True|training_args\.bin|use_safetensors=False"
    )
    offenders = []
    for path in (REPO_ROOT / "hfsiamese").rglob("*.py"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            # Lines that name training_args.bin to leave it behind when a folder is copied do not load it.
            allowed = ("refus", "would unpickle", "save_file(", "NOT_COPIED")
            if pattern.search(line) and not any(word in line for word in allowed):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not offenders, offenders


# --------------------------------------------------------------------------------------------
# Tokenizer and model must match
# --------------------------------------------------------------------------------------------
def _other_tokenizer(size_texts):
    return train_word_tokenizer(size_texts, vocab_size=200, model_max_length=16)


def test_lstm_with_a_tokenizer_of_another_size_names_the_tokenizer_file(tiny_lstm, tmp_path):
    other = _other_tokenizer(TEXTS + ["completely different words in another vocabulary"])
    assert len(other) != tiny_lstm.config.vocab_size
    other.save_pretrained(tmp_path / "other_tok")
    reloaded = AutoTokenizer.from_pretrained(tmp_path / "other_tok")
    expected = rf"{re.escape(str(tmp_path / 'other_tok' / 'tokenizer.json'))}: the tokenizer has {len(other)} tokens"
    with pytest.raises(ValueError, match=expected + r".*embedding table has \d+ rows \(config\.vocab_size\)"):
        tiny_lstm.encode(["how do i learn python ?"], reloaded)
    with pytest.raises(ValueError, match="built in memory"):
        tiny_lstm.predict(["a"], ["b"], other, threshold=0.5)


def test_checkpoint_whose_tokenizer_was_replaced(saved_lstm):
    _other_tokenizer(TEXTS + ["yet more words"]).save_pretrained(saved_lstm)
    model = SiameseModel.from_pretrained(saved_lstm)
    with pytest.raises(ValueError, match=rf"{re.escape(str(saved_lstm / 'tokenizer.json'))}: the tokenizer has"):
        model.encode(["how do i learn python ?"])


def test_lstm_tokenizer_with_another_pad_id(word_tokenizer):
    torch.manual_seed(0)
    model = SiameseModel(SiameseConfig(vocab_size=len(word_tokenizer), embedding_dim=4, hidden_size=3, pad_token_id=1))
    with pytest.raises(ValueError, match="pads with id 0 but the model's pad_token_id is 1"):
        model.encode(["a"], word_tokenizer)


def test_transformer_accepts_a_smaller_tokenizer_and_refuses_a_larger_one(tiny_bert_dir, word_tokenizer):
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))
    rows = model.get_input_embeddings().num_embeddings
    small = train_word_tokenizer(TEXTS[:2], vocab_size=100, model_max_length=16)
    assert len(small) < rows
    assert model.encode(["how do i learn python ?"], small).shape == (1, model.config.sentence_embedding_dim)
    large = _other_tokenizer(TEXTS + [f"word{i}" for i in range(60)])
    assert len(large) > rows
    with pytest.raises(
        ValueError,
        match=rf"has {len(large)} tokens but the model's embedding table has {rows} rows.*resize_token_embeddings",
    ):
        model.encode(["how do i learn python ?"], large)
