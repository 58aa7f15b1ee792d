"""`encode`'s batches: chunks tokenised ahead on a thread, padded by array operations, or a pre-tokenised Dataset."""

import datasets
import numpy as np
import pytest
import torch

from hfsiamese import SiameseModel
from hfsiamese.models.siamese import encoding_batches
from hfsiamese.models.siamese.encoding_batches import dataset_chunk, padded_batches, tokenize_chunk

TEXTS = [
    "how do i learn python ?", "why is the sky blue ?", "how", "what is the capital of france ?",
    "how can i lose weight fast ?", "what", "what makes the sky look blue ?", "how do i cook rice ?",
    "what is the best way to learn python ?", "rice", "python", "why",
]  # fmt: skip


def _one_by_one(model, tokenizer, texts):
    """Each text alone through `embed`: no padding, no batching, the reference."""
    with torch.no_grad():
        rows = []
        for text in texts:
            features = tokenizer(
                [text], return_tensors="pt", truncation=True, max_length=model.default_max_length(tokenizer)
            )
            rows.append(model.embed(features["input_ids"], features["attention_mask"]))
    return torch.cat(rows)


@pytest.fixture
def tiny_bert(tiny_bert_dir):
    model = SiameseModel.from_encoder_pretrained(str(tiny_bert_dir))
    return model.eval()


@pytest.mark.parametrize("encoder", ["lstm", "bert"])
@pytest.mark.parametrize("chunk_texts", [5, 8192])
@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_encode_gives_each_texts_own_embedding_in_input_order(
    encoder, chunk_texts, batch_size, tiny_lstm, tiny_bert, word_tokenizer, monkeypatch
):
    model = tiny_lstm if encoder == "lstm" else tiny_bert
    monkeypatch.setattr(encoding_batches, "CHUNK_TEXTS", chunk_texts)
    monkeypatch.setattr(encoding_batches.text_chunks, "__defaults__", (chunk_texts,))
    got = model.encode(TEXTS, word_tokenizer, batch_size=batch_size)
    torch.testing.assert_close(got, _one_by_one(model, word_tokenizer, TEXTS), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("side", ["right", "left"])
def test_batches_are_padded_as_the_tokenizer_pads(word_tokenizer, side):
    """Same ids, mask and token types as the tokenizer's own padding of the same texts, on either side."""
    chunk = tokenize_chunk(word_tokenizer, TEXTS, np.arange(len(TEXTS)), max_length=16)
    word_tokenizer.padding_side = side
    try:
        for batch in padded_batches(chunk, 5, word_tokenizer.pad_token_id, side):
            texts = [TEXTS[i] for i in batch.positions]
            expected = word_tokenizer(texts, padding=True, truncation=True, max_length=16, return_tensors="pt")
            assert batch.features.keys() == expected.keys()
            for name in expected:
                assert torch.equal(batch.features[name], expected[name]), name
    finally:
        word_tokenizer.padding_side = "right"


def test_pretokenised_dataset_is_encoded_without_the_tokenizer(tiny_bert, word_tokenizer):
    dataset = datasets.Dataset.from_dict({"text": TEXTS}).map(lambda b: word_tokenizer(b["text"]), batched=True)
    expected = tiny_bert.encode(TEXTS, word_tokenizer, batch_size=4)
    torch.testing.assert_close(tiny_bert.encode(dataset, batch_size=4), expected)
    # A selection (an indices mapping over the Arrow table) keeps its own order.
    picked = [7, 0, 11, 3]
    torch.testing.assert_close(tiny_bert.encode(dataset.select(picked), batch_size=2), expected[picked])


def test_pretokenised_dataset_is_cut_at_max_length(tiny_bert, word_tokenizer):
    dataset = datasets.Dataset.from_dict({"text": TEXTS}).map(lambda b: word_tokenizer(b["text"]), batched=True)
    with pytest.warns(UserWarning, match=r"texts were longer than max_length=3 tokens"):
        cut = tiny_bert.encode(dataset, max_length=3)
    torch.testing.assert_close(cut, tiny_bert.encode(TEXTS, word_tokenizer, max_length=3), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("max_length", [0, -4])
def test_a_max_length_below_one_is_refused_not_embedded_as_empty_texts(tiny_lstm, word_tokenizer, max_length):
    with pytest.raises(ValueError, match=f"max_length must be a positive integer or None, got {max_length}"):
        tiny_lstm.encode(TEXTS, word_tokenizer, max_length=max_length)
    with pytest.raises(ValueError, match="max_length must be a positive integer"):
        tiny_lstm.score_pairs(TEXTS[:2], TEXTS[2:4], word_tokenizer, max_length=max_length)


def test_dataset_without_token_ids_is_refused(tiny_bert):
    with pytest.raises(ValueError, match="needs an `input_ids` column"):
        tiny_bert.encode(datasets.Dataset.from_dict({"text": TEXTS}))


def test_an_error_while_tokenising_reaches_the_caller(tiny_lstm, word_tokenizer, monkeypatch):
    real = encoding_batches._encode_with_backend
    calls = []

    def failing(*args, **kwargs):
        """The real encoder for the first chunk, then a failure on the producer thread."""
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("tokenizer broke on chunk 2")
        return real(*args, **kwargs)

    monkeypatch.setattr(encoding_batches, "_encode_with_backend", failing)
    monkeypatch.setattr(encoding_batches.text_chunks, "__defaults__", (4,))
    with pytest.raises(RuntimeError, match="tokenizer broke on chunk 2"):
        tiny_lstm.encode(TEXTS, word_tokenizer, batch_size=2)


@pytest.mark.parametrize("side", ["right", "left"])
def test_backend_encoding_equals_the_tokenizers_own_call(word_tokenizer, tiny_bert_dir, side, tmp_path):
    """The Rust fast path gives the ids, type ids and truncation count of `tokenizer(texts, truncation=True)`."""
    from transformers import BertTokenizerFast

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "how", "do", "i", "learn", "python", "?", "why"]))
    for tokenizer in (word_tokenizer, BertTokenizerFast(vocab_file=str(vocab))):
        tokenizer.truncation_side = side
        try:
            chunk = tokenize_chunk(tokenizer, TEXTS, np.arange(len(TEXTS)), max_length=5)
            expected = tokenizer(TEXTS, truncation=True, max_length=5)
            assert chunk.values.tolist() == [t for ids in expected["input_ids"] for t in ids]
            assert chunk.lengths.tolist() == [len(ids) for ids in expected["input_ids"]]
            if "token_type_ids" in expected:
                assert chunk.type_values.tolist() == [t for ids in expected["token_type_ids"] for t in ids]
            else:
                assert chunk.type_values is None
            assert chunk.truncated == sum(1 for text in TEXTS if len(tokenizer(text)["input_ids"]) > 5)
            # The tokenizer's own settings are left as they were.
            assert tokenizer.backend_tokenizer.padding is None
        finally:
            tokenizer.truncation_side = "right"


def test_a_consumer_that_stops_early_stops_the_producer():
    produced = []

    def items():
        for i in range(100):
            produced.append(i)
            yield i

    stream = encoding_batches._ahead(items())
    assert next(stream) == 0
    stream.close()  # the consumer gives up: the thread must end, not fill the queue forever
    assert len(produced) <= 3


def test_padded_batches_are_length_sorted_and_padded_to_their_own_longest(word_tokenizer):
    chunk = tokenize_chunk(word_tokenizer, TEXTS, np.arange(len(TEXTS)), max_length=16)
    batches = list(padded_batches(chunk, 5, word_tokenizer.pad_token_id, "right"))
    assert sorted(np.concatenate([b.positions for b in batches]).tolist()) == list(range(len(TEXTS)))
    widths = [b.features["input_ids"].shape[1] for b in batches]
    assert widths == sorted(widths, reverse=True)
    for batch in batches:
        mask = batch.features["attention_mask"]
        assert bool(mask[:, -1].any())  # no all-padding column
        for row, position in enumerate(batch.positions):
            ids = word_tokenizer(TEXTS[position])["input_ids"]
            assert batch.features["input_ids"][row, : len(ids)].tolist() == ids
            assert int(mask[row].sum()) == len(ids)


def test_dataset_chunk_reads_the_arrow_columns(word_tokenizer):
    dataset = datasets.Dataset.from_dict({"text": TEXTS}).map(lambda b: word_tokenizer(b["text"]), batched=True)
    chunk = dataset_chunk(dataset, max_length=None)
    assert chunk.lengths.tolist() == [len(ids) for ids in dataset["input_ids"]]
    assert chunk.values.tolist() == [token for ids in dataset["input_ids"] for token in ids]
    assert chunk.type_values is None  # this tokenizer makes none; a BERT one's are read as its ids are


def test_token_type_ids_are_padded_with_zeros(tmp_path):
    from transformers import BertTokenizerFast

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "how", "do", "i", "learn", "python", "?"]))
    tokenizer = BertTokenizerFast(vocab_file=str(vocab))
    texts = ["how do i learn python ?", "python", "how ?"]
    chunk = tokenize_chunk(tokenizer, texts, np.arange(3), max_length=16)
    (batch,) = padded_batches(chunk, 8, tokenizer.pad_token_id, "right")
    expected = tokenizer([texts[i] for i in batch.positions], padding=True, return_tensors="pt")
    assert batch.features.keys() == expected.keys() == {"input_ids", "attention_mask", "token_type_ids"}
    for name in expected:
        assert torch.equal(batch.features[name], expected[name]), name


def test_bf16_autocast_stays_close_to_fp32(tiny_bert, word_tokenizer):
    fp32 = tiny_bert.encode(TEXTS, word_tokenizer)
    bf16 = tiny_bert.encode(TEXTS, word_tokenizer, dtype=torch.bfloat16)
    assert bf16.dtype == torch.float32
    assert float(torch.nn.functional.cosine_similarity(fp32, bf16).min()) > 0.99
