"""What hfsiamese writes is readable as the rest of its folder: the umask's mode, not safetensors' private 0600.

A model or index saved by one user must be servable by another (a shared server, a container built by
someone else); safetensors creates its files 0600 while every other file gets the umask's 0644.
"""

import os
import stat

import pytest

from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.data import tokenize_pairs
from hfsiamese.data.question_fingerprints import FINGERPRINT_FILE, pair_question_hashes, read_fingerprint
from hfsiamese.search import DuplicateIndex
from tests.conftest import TEXTS
from tests.fixtures import tiny_eval_pairs, tiny_pairs, tiny_training_args


@pytest.fixture(autouse=True)
def usual_umask():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_saved_model_s_weights(tiny_lstm, tmp_path):
    tiny_lstm.save_pretrained(tmp_path)
    assert mode(tmp_path / "model.safetensors") == mode(tmp_path / "config.json") == 0o644


def test_a_training_run_s_saves_carry_the_fingerprint_readable_as_the_rest(tiny_lstm, word_tokenizer, tmp_path):
    pairs = tiny_pairs()
    args = tiny_training_args(tmp_path, max_steps=2, save_strategy="steps", save_steps=2)
    trainer = SiameseTrainer(
        model=tiny_lstm,
        args=args,
        train_dataset=tokenize_pairs(pairs, word_tokenizer),
        eval_dataset=tokenize_pairs(tiny_eval_pairs(), word_tokenizer),
        processing_class=word_tokenizer,
        training_questions=pair_question_hashes(pairs),
    )
    trainer.train()
    trainer.save_model()
    for folder in (tmp_path / "out", tmp_path / "out" / "checkpoint-2"):
        assert list(read_fingerprint(folder)) == list(pair_question_hashes(pairs)), folder
        for name in ("model.safetensors", FINGERPRINT_FILE):
            assert mode(folder / name) == mode(folder / "config.json") == 0o644, folder / name


def test_a_saved_index(tiny_lstm, word_tokenizer, tmp_path):
    DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer).save(tmp_path / "index")
    assert mode(tmp_path / "index" / "embeddings.npy") == mode(tmp_path / "index" / "index_config.json") == 0o644
    DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, store="faiss", quantization="int8").save(tmp_path / "faiss")
    assert mode(tmp_path / "faiss" / "ann.faiss") == mode(tmp_path / "faiss" / "embeddings.npy") == 0o644


def test_a_sentence_transformers_export(tiny_bert_dir, word_tokenizer, tmp_path):
    from hfsiamese import SiameseModel
    from hfsiamese.bi_encoder.sentence_transformers_export import export_sentence_transformers

    export_sentence_transformers(
        SiameseModel.from_encoder_pretrained(str(tiny_bert_dir)), tmp_path / "st", word_tokenizer
    )
    weights = list((tmp_path / "st").rglob("*.safetensors"))
    assert weights and {mode(path) for path in weights} == {0o644}
