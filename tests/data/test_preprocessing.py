"""tokenize_pairs: truncation with a count warning (cached runs too), and clear errors for non-text."""

from __future__ import annotations

import warnings

import datasets
import pytest

from hfsiamese.data import tokenize_pairs


def _pairs(first: list, second: list) -> datasets.Dataset:
    return datasets.Dataset.from_dict({"question1": first, "question2": second, "label": [1] * len(first)})


def _warnings(call) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught if "truncated" in str(w.message)]


def test_truncation_is_counted_over_both_sides(word_tokenizer):
    long = "how do i learn python ? " * 5  # 30 words
    pairs = _pairs([long, "why is the sky blue ?", long], ["rice", long, "sky"])
    tokenized, messages = _warnings(lambda: tokenize_pairs(pairs, word_tokenizer, max_length=8))
    assert messages == ["3 of 6 texts were longer than max_length=8 tokens and were truncated"]
    assert max(len(ids) for side in "ab" for ids in tokenized[f"input_ids_{side}"]) == 8
    assert tokenized.column_names == ["labels", "input_ids_a", "attention_mask_a", "input_ids_b", "attention_mask_b"]


def test_no_warning_when_everything_fits(word_tokenizer):
    _, messages = _warnings(lambda: tokenize_pairs(_pairs(["why is the sky blue ?"], ["rice"]), word_tokenizer))
    assert messages == []


def test_default_max_length_is_the_tokenizers_and_the_count_survives_the_cache(word_tokenizer, tmp_path):
    long = "how do i learn python ? " * 5
    pairs = _pairs([long, "rice"], ["sky", "blue"])
    pairs.save_to_disk(tmp_path / "pairs")
    on_disk = datasets.load_from_disk(tmp_path / "pairs")  # cache files: the second map is a cache hit
    for _ in range(2):
        tokenized, messages = _warnings(lambda: tokenize_pairs(on_disk, word_tokenizer))
        assert messages == [
            f"1 of 4 texts were longer than max_length={word_tokenizer.model_max_length} tokens and were truncated"
        ]
        assert len(tokenized["input_ids_a"][0]) == word_tokenizer.model_max_length


@pytest.mark.parametrize(
    ("second", "message"),
    [(["x", None, "z"], r"holds a null in row 1"), ([5, 6, 7], r"holds a non-text value 5 \(int\) in row 0")],
)
def test_non_text_names_column_and_row(word_tokenizer, second, message):
    pairs = datasets.Dataset.from_dict({"question1": ["a", "b", "c"], "question2": second})
    with pytest.raises(ValueError, match=rf"column 'question2' {message}, not text"):
        tokenize_pairs(pairs, word_tokenizer)
