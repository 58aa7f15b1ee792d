import pytest
import torch
import torch.nn.functional as F

from hfsiamese.search import topk_cosine


def _brute_force(queries, corpus, k, exclude=None):
    scores = queries @ corpus.T
    if exclude is not None:
        for row, col in enumerate(exclude.tolist()):
            if col >= 0:
                scores[row, col] = float("-inf")
    return scores.topk(k, dim=1)


@pytest.mark.parametrize("query_chunk, corpus_chunk", [(1, 1), (3, 7), (1024, 65536)])
def test_matches_brute_force_for_any_chunking(query_chunk, corpus_chunk):
    generator = torch.Generator().manual_seed(0)
    queries = F.normalize(torch.randn(11, 8, generator=generator), dim=1)
    corpus = F.normalize(torch.randn(40, 8, generator=generator), dim=1)
    scores, indices = topk_cosine(queries, corpus, 5, query_chunk_size=query_chunk, corpus_chunk_size=corpus_chunk)
    expected_scores, expected_indices = _brute_force(queries, corpus, 5)
    torch.testing.assert_close(scores, expected_scores)
    assert torch.equal(indices, expected_indices)


def test_excludes_each_query_own_row():
    generator = torch.Generator().manual_seed(1)
    corpus = F.normalize(torch.randn(20, 4, generator=generator), dim=1)
    own = torch.arange(20)
    scores, indices = topk_cosine(corpus, corpus, 3, corpus_chunk_size=6, exclude_indices=own)
    assert not (indices == own[:, None]).any()
    expected_scores, expected_indices = _brute_force(corpus.clone(), corpus, 3, exclude=own)
    assert torch.equal(indices, expected_indices)
    torch.testing.assert_close(scores, expected_scores)


def test_k_is_capped_at_what_the_corpus_can_return():
    corpus = torch.eye(3)
    scores, indices = topk_cosine(corpus, corpus, 10, exclude_indices=torch.arange(3))
    assert scores.shape == (3, 2) and indices.shape == (3, 2)


def test_rejects_mismatched_dimensions():
    with pytest.raises(ValueError, match="dimension 4 but the corpus has 5"):
        topk_cosine(torch.zeros(2, 4), torch.zeros(3, 5), 1)
    with pytest.raises(ValueError, match="k must be at least 1"):
        topk_cosine(torch.zeros(2, 4), torch.zeros(3, 4), 0)
