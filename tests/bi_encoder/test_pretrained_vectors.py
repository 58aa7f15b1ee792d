import numpy as np
import pytest
import torch

from hfsiamese.bi_encoder.pretrained_vectors import glove_matrix_for_vocab, init_embeddings_from_glove


def _fake_glove(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"index": ["the", "python", "sky"]}), tmp_path / "glove_6B_index.parquet")
    np.save(tmp_path / "glove_6B_50d_emb.npy", np.arange(150, dtype=np.float32).reshape(3, 50))
    return tmp_path


def test_matrix_rows_follow_vocab_ids(tmp_path):
    vocab = {"[PAD]": 0, "[UNK]": 1, "sky": 2, "Python": 3, "cobol": 4}
    matrix, found = glove_matrix_for_vocab(vocab, vectors_dir=_fake_glove(tmp_path))
    assert found.tolist() == [False, False, True, True, False]
    assert matrix[2, 0] == 100 and matrix[3, 0] == 50 and not matrix[4].any()


def test_real_glove_initialises_known_words():
    vocab = {"[PAD]": 0, "[UNK]": 1, "king": 2, "queen": 3, "zzzzqx": 4}
    embedding = torch.nn.Embedding(5, 50, padding_idx=0)
    coverage = init_embeddings_from_glove(embedding, vocab)
    assert coverage == pytest.approx(2 / 5)
    king, queen = embedding.weight[2], embedding.weight[3]
    assert torch.cosine_similarity(king, queen, dim=0) > 0.6
    assert not embedding.weight[0].any()


def test_dimension_mismatch_is_named():
    with pytest.raises(ValueError, match="embedding_dim=50"):
        init_embeddings_from_glove(torch.nn.Embedding(5, 8), {"a": 0})
