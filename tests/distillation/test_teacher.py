"""The teacher and its targets: loading either kind of folder, one vector per distinct text."""

import pytest
import torch

from hfsiamese import SiameseModel
from hfsiamese.distillation import TeacherEmbeddings, encode_teacher_targets, load_teacher
from tests.conftest import TEXTS


def test_a_base_encoder_folder_becomes_a_mean_pooled_teacher(tiny_bert_dir):
    teacher, tokenizer = load_teacher(str(tiny_bert_dir))
    assert isinstance(teacher, SiameseModel) and not teacher.training
    assert teacher.config.encoder_type == "transformer" and teacher.config.pooling == "mean"
    assert len(tokenizer) == teacher.get_input_embeddings().num_embeddings


def test_a_siamese_checkpoint_is_loaded_as_it_is(tiny_bert_dir, word_tokenizer, tmp_path):
    saved = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir), projection_dim=5)
    saved.save_pretrained(tmp_path)
    word_tokenizer.save_pretrained(tmp_path)
    teacher, _ = load_teacher(str(tmp_path))
    assert teacher.config.projection_dim == 5
    assert torch.allclose(teacher.encode(TEXTS, word_tokenizer), saved.eval().encode(TEXTS, word_tokenizer), atol=1e-6)


def test_a_missing_teacher_is_named(tmp_path):
    with pytest.raises((OSError, ValueError), match="no_such_teacher"):
        load_teacher(str(tmp_path / "no_such_teacher"))


def test_each_distinct_text_is_embedded_once_as_the_teacher_embeds_it(tiny_bert_dir):
    teacher, tokenizer = load_teacher(str(tiny_bert_dir))
    texts = TEXTS + TEXTS[:3]
    targets = encode_teacher_targets(teacher, tokenizer, texts, batch_size=3)
    assert list(targets.texts) == TEXTS and targets.dim == teacher.config.sentence_embedding_dim
    assert torch.allclose(targets.vectors, teacher.encode(TEXTS, tokenizer), atol=1e-6)
    rows = targets.rows_of([TEXTS[2], TEXTS[0]])
    assert torch.equal(targets.vectors[rows], targets.vectors[[2, 0]])
    with pytest.raises(KeyError, match="never seen"):
        targets.rows_of(["never seen"])


def test_texts_and_vectors_must_agree():
    import pandas as pd

    with pytest.raises(ValueError, match="2 texts"):
        TeacherEmbeddings(pd.Index(["a", "b"]), torch.zeros(3, 4))
    with pytest.raises(ValueError, match="distinct"):
        TeacherEmbeddings(pd.Index(["a", "a"]), torch.zeros(2, 4))
