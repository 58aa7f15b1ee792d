import pytest
from transformers import AutoTokenizer

from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer


@pytest.mark.parametrize("model", ["wordlevel", "wordpiece"])
def test_trained_tokenizer_saves_and_reloads(model, tmp_path):
    texts = ["How do I learn Python ?", "what is Python", "how to learn java"] * 3
    tokenizer = train_word_tokenizer(texts, vocab_size=60, model=model, model_max_length=10)
    assert tokenizer.pad_token_id == 0 and tokenizer.convert_tokens_to_ids("[UNK]") == 1
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    batch = ["how do i learn PYTHON", "java"]
    assert reloaded(batch, padding=True)["input_ids"] == tokenizer(batch, padding=True)["input_ids"]
    assert reloaded.padding_side == "right" and reloaded.model_max_length == 10


def test_lowercasing_is_part_of_the_tokenizer():
    tokenizer = train_word_tokenizer(["python java"], vocab_size=10)
    assert tokenizer("PYTHON")["input_ids"] == tokenizer("python")["input_ids"]
    assert tokenizer("cobol")["input_ids"] == [1]


def test_bad_arguments():
    with pytest.raises(ValueError, match="tokenizer model"):
        train_word_tokenizer(["a"], model="bpe")
    with pytest.raises(ValueError, match="no words"):
        train_word_tokenizer(["", "  "], vocab_size=10)


@pytest.mark.parametrize("bad", [0, -5, 1.5, None, True])
def test_model_max_length_must_be_a_positive_int(bad):
    # Without a limit transformers assumes 1e30 tokens; encode would then pad to the longest text.
    with pytest.raises(ValueError, match="model_max_length must be a positive number of tokens"):
        train_word_tokenizer(["python java"], vocab_size=10, model_max_length=bad)
