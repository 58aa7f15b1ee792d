import pytest

from hfsiamese.search import reranking
from hfsiamese.search.rerank_options import (
    RERANK_K_WITHOUT_CROSS_ENCODER,
    check_rerank_k,
    default_rerank_k,
    refuse_rerank_k_without_cross_encoder,
)


def test_rerank_k_defaults_to_twice_k_and_at_least_twenty():
    assert check_rerank_k(None, 5) == default_rerank_k(5) == 20
    assert check_rerank_k(None, 15) == 30
    assert check_rerank_k(7, 7) == 7
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="rerank_k must be an integer of at least 1"):
            check_rerank_k(bad, 1)


def test_rerank_k_without_a_cross_encoder_is_one_sentence_everywhere():
    with pytest.raises(ValueError) as refused:
        refuse_rerank_k_without_cross_encoder(20, None)
    assert str(refused.value) == RERANK_K_WITHOUT_CROSS_ENCODER
    refuse_rerank_k_without_cross_encoder(None, None)
    refuse_rerank_k_without_cross_encoder(20, object())
    # the reranking module's names are these ones (older imports keep working)
    assert reranking.check_rerank_k is check_rerank_k and reranking.default_rerank_k is default_rerank_k
