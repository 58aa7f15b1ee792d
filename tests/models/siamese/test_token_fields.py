"""`hfsiamese.models.siamese.token_fields`: the model inputs of a tokenised text, the default cut and the truncation count."""

import warnings

import pytest
import torch

from hfsiamese.models.siamese.token_fields import (
    DEFAULT_MAX_LENGTH,
    TOKEN_FIELDS,
    token_fields,
    tokenizer_max_length,
    truncated_flags,
    warn_truncated,
)

LONG = "how do i learn python ? " * 4  # 24 words: past the test tokenizer's 16 tokens


class _Limit:
    def __init__(self, model_max_length):
        self.model_max_length = model_max_length


@pytest.mark.parametrize("declared, expected", [(16, 16), (int(1e30), DEFAULT_MAX_LENGTH), (None, DEFAULT_MAX_LENGTH)])
def test_tokenizer_max_length_is_capped(declared, expected):
    assert tokenizer_max_length(_Limit(declared)) == expected


def test_token_fields_keeps_model_inputs_only(word_tokenizer):
    encoded = word_tokenizer(["why is the sky blue ?"], return_tensors="pt", return_special_tokens_mask=True)
    kept = token_fields(encoded, "cpu")
    assert "special_tokens_mask" in encoded and set(kept) == set(TOKEN_FIELDS) & set(encoded)
    assert torch.equal(kept["input_ids"], encoded["input_ids"])


def test_truncated_flags_agree_for_tensors_lists_and_python_tokenizers(word_tokenizer):
    texts = [LONG, "why is the sky blue ?"]
    padded = word_tokenizer(texts, padding=True, truncation=True, max_length=8, return_tensors="pt")
    plain = word_tokenizer(texts, truncation=True, max_length=8)
    assert truncated_flags(padded, 8) == truncated_flags(plain, 8) == [True, False]
    # Without `encodings` (a Python tokenizer): a text that reached the limit counts as cut.
    assert truncated_flags(dict(padded), 8) == [True, False]
    assert truncated_flags(dict(plain), 8) == [True, False]
    assert truncated_flags(dict(plain), None) == [False, False]


def test_warn_truncated_counts_and_stays_silent_at_zero():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_truncated(0, 5, 16)
        warn_truncated(2, 5, 16, stacklevel=1)  # as if this test had called warnings.warn itself
    assert [str(w.message) for w in caught] == ["2 of 5 texts were longer than max_length=16 tokens and were truncated"]
    assert caught[0].filename == __file__
