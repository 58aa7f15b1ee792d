"""sentence-transformers export: `SentenceTransformer(folder)` embeds exactly like `SiameseModel.encode`."""

import hashlib
import json

import pytest
import torch
import yaml
from sentence_transformers import SentenceTransformer
from transformers import AutoModel

from hfsiamese import SiameseModel
from hfsiamese.bi_encoder.sentence_transformers_export import export_sentence_transformers, main
from tests.conftest import TEXTS
from tests.helpers import load_recipe

# One text longer than the tokenizer's 16 tokens: both sides must truncate alike.
SENTENCES = TEXTS + ["what is the best way to learn python and how do i cook rice when the sky is blue ?"]


def max_difference(st_folder, model, tokenizer):
    st = SentenceTransformer(str(st_folder), device="cpu")
    expected = model.eval().encode(SENTENCES, tokenizer)
    return (st.encode(SENTENCES, convert_to_tensor=True).cpu() - expected).abs().max().item()


def digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize("pooling, projection_dim", [("mean", None), ("cls", 8)])
def test_same_embeddings(tiny_bert_dir, word_tokenizer, tmp_path, pooling, projection_dim):
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), pooling=pooling, projection_dim=projection_dim)
    export_sentence_transformers(model, tmp_path / "st", word_tokenizer)
    modules = [m["type"].rsplit(".", 1)[1] for m in json.loads((tmp_path / "st" / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling", *(["Dense"] if projection_dim else []), "Normalize"]
    assert max_difference(tmp_path / "st", model, word_tokenizer) < 1e-5


def test_export_into_the_checkpoint_keeps_it_loadable(tiny_bert_dir, word_tokenizer, tmp_path):
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), threshold=0.4)
    folder = tmp_path / "ckpt"
    model.save_pretrained(folder)
    word_tokenizer.save_pretrained(folder)
    before = digests(folder)
    main([str(folder)])  # from the checkpoint's path, into the checkpoint folder itself
    assert {k: v for k, v in digests(folder).items() if k in before} == before  # no checkpoint file touched
    assert AutoModel.from_pretrained(folder).config.threshold == 0.4
    assert max_difference(folder, model, word_tokenizer) < 1e-5
    # The price of one folder for both: the encoder's weights are stored twice.
    encoder_copy = (folder / "0_Transformer" / "model.safetensors").stat().st_size
    assert encoder_copy > 0.9 * (folder / "model.safetensors").stat().st_size


def test_refusals_and_overwrite(tiny_lstm, tiny_bert_dir, word_tokenizer, tmp_path):
    with pytest.raises(ValueError, match="only transformer encoders export.*'lstm'"):
        export_sentence_transformers(tiny_lstm, tmp_path / "st", word_tokenizer)
    projected = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), projection_dim=8)
    export_sentence_transformers(projected, tmp_path / "st", word_tokenizer)
    plain = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))
    with pytest.raises(FileExistsError, match="already holds a sentence-transformers export"):
        export_sentence_transformers(plain, tmp_path / "st", word_tokenizer)
    (tmp_path / "st" / "notes.txt").write_text("mine")
    export_sentence_transformers(plain, tmp_path / "st", word_tokenizer, overwrite=True)
    assert sorted(p.name for p in (tmp_path / "st").iterdir()) == [
        "0_Transformer", "1_Pooling", "2_Normalize", "config_sentence_transformers.json", "modules.json", "notes.txt"
    ]  # fmt: skip
    assert max_difference(tmp_path / "st", plain, word_tokenizer) < 1e-5


def test_recipe_exports_beside_its_checkpoint(monkeypatch, tiny_bert_dir, tmp_path):
    recipe = load_recipe(monkeypatch)
    out = tmp_path / "run"
    config = dict(
        encoder_type="transformer", model_name_or_path=str(tiny_bert_dir), max_length=16, max_train_pairs=200,
        max_eval_pairs=100, per_device_train_batch_size=16, max_steps=2, eval_strategy="no", save_strategy="no",
        report_to="none", disable_tqdm=True, use_cpu=True,
    )  # fmt: skip
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(config))
    recipe.main([str(tmp_path / "tiny.yaml"), "--output_dir", str(out), "--export_sentence_transformers", str(out)])
    model = AutoModel.from_pretrained(out)
    assert max_difference(out, model, None) < 1e-5
    card = (out / "README.md").read_text()
    assert f'SentenceTransformer("{out}")' in card and "- sentence-transformers" in card


def test_truncate_dim_is_baked_into_the_export(tiny_bert_dir, word_tokenizer, tmp_path):
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir)).eval()
    export_sentence_transformers(model, tmp_path / "st", word_tokenizer, truncate_dim=6)
    texts = ["how do i learn python ?", "why is the sky blue ?"]
    got = SentenceTransformer(str(tmp_path / "st"), device="cpu").encode(texts, convert_to_tensor=True)
    assert got.shape == (2, 6)
    assert torch.allclose(got, model.encode(texts, word_tokenizer, truncate_dim=6), atol=1e-6)
