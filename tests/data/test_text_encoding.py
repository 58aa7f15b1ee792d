"""`TextEncoder` gives exactly what the tokenizer's own call gives, and leaves the tokenizer as it was."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.data.text_encoding import TextEncoder
from hfsiamese.models.siamese.token_fields import truncated_flags
from hfsiamese.utils.minilm import resolve_minilm_path
from tests.conftest import TEXTS

SAMPLES = [
    "How do I learn Python?",
    "what is   the best way to learn machine learning and deep learning in 2026 for a complete beginner who codes",
    "Ünïcödé — naïve café, 東京 ?",
    "[SEP] a text holding [CLS] special tokens [PAD]",
    "x",
    "  leading and trailing spaces  ",
]


def tokenizers():
    yield "wordlevel", train_word_tokenizer(TEXTS, vocab_size=100, model_max_length=16)
    yield "wordpiece", train_word_tokenizer(TEXTS, vocab_size=200, model="wordpiece", model_max_length=16)
    yield "minilm", AutoTokenizer.from_pretrained(resolve_minilm_path())
    left = AutoTokenizer.from_pretrained(resolve_minilm_path())
    left.truncation_side = "left"
    yield "minilm-left", left


@pytest.mark.parametrize("max_length", [4, 9, 128])
@pytest.mark.parametrize(
    "name,tokenizer", list(tokenizers()), ids=lambda value: value if isinstance(value, str) else ""
)
def test_the_same_token_lists_and_cuts_as_the_tokenizer_call(name, tokenizer, max_length):
    expected = tokenizer(SAMPLES, truncation=True, max_length=max_length)
    encoded, cut = TextEncoder(tokenizer, max_length)(SAMPLES)
    assert set(encoded) == {field for field in ("input_ids", "attention_mask", "token_type_ids") if field in expected}
    for field, lists in encoded.items():
        assert lists == expected[field], field
    assert cut == truncated_flags(expected, max_length)
    assert any(cut) == (max_length < 128)


def test_the_callers_tokenizer_is_left_as_it_was():
    tokenizer = AutoTokenizer.from_pretrained(resolve_minilm_path())
    before = tokenizer.backend_tokenizer.to_str()
    TextEncoder(tokenizer, 5)(SAMPLES)
    assert tokenizer.backend_tokenizer.to_str() == before
