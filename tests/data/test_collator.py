import datasets
import pyarrow as pa
import pytest
import torch
from transformers import BertTokenizerFast

from hfsiamese.data.arrow_batches import arrow_batch_dataset
from hfsiamese.data.collator import SiamesePairCollator
from hfsiamese.data.preprocessing import tokenize_pairs
from tests.conftest import TEXTS

WORDS = sorted({word for text in TEXTS for word in text.split()})


@pytest.fixture
def bert_tokenizer():
    """A WordPiece tokenizer that makes token_type_ids, built in memory (offline); a fresh one per test.
    Its pad id is not 0, so that padding with the pad id differs from padding a mask or token types."""
    vocab = ["[UNK]", "[CLS]", "[SEP]", "[MASK]", "[PAD]", *WORDS]
    tokenizer = BertTokenizerFast(vocab={word: i for i, word in enumerate(vocab)})
    assert tokenizer.pad_token_id == 4
    return tokenizer


def reference_batch(tokenizer, features, pad_to_multiple_of=None):
    """The collation before vectorising it (`tokenizer.pad` per side): every batch must equal it."""
    batch = {}
    for side in ("a", "b", "n"):
        if f"input_ids_{side}" not in features[0]:
            continue
        side_features = [
            {
                field: f[f"{field}_{side}"]
                for field in ("input_ids", "attention_mask", "token_type_ids")
                if f"{field}_{side}" in f
            }
            for f in features
        ]
        padded = tokenizer.pad(side_features, pad_to_multiple_of=pad_to_multiple_of, return_tensors="pt")
        batch.update({f"{field}_{side}": tensor for field, tensor in padded.items()})
    key = "labels" if "labels" in features[0] else "label" if "label" in features[0] else None
    if key is not None:
        batch["labels"] = torch.tensor([f[key] for f in features], dtype=torch.long)
    if "group_id" in features[0]:
        batch["group_ids"] = torch.tensor([f["group_id"] for f in features], dtype=torch.long)
    return batch


def assert_same_batch(batch, expected):
    assert list(batch) == list(expected)
    for key, tensor in expected.items():
        assert batch[key].dtype == torch.long, key
        assert torch.equal(batch[key], tensor), key


def mixed_pairs(with_negatives=True):
    """Pairs of mixed lengths (one text much longer than the rest), labels, groups and a negatives column."""
    n = len(TEXTS)
    columns = {
        "question1": [TEXTS[i] + (" python" * 6 if i == 2 else "") for i in range(n)],
        "question2": [TEXTS[(i + 1) % n].split(" ?")[0][: 4 + 3 * i] for i in range(n)],
        "label": [i % 2 for i in range(n)],
        "group_id": [10 + i // 2 for i in range(n)],
    }
    if with_negatives:
        columns["negative"] = [TEXTS[(i + 3) % n] * (1 + i % 3) for i in range(n)]
    return datasets.Dataset.from_dict(columns)


def test_tokenize_and_collate_pads_each_side_separately(word_tokenizer):
    pairs = datasets.Dataset.from_dict(
        {
            "question1": ["how do i learn python ?", "why is the sky blue ?"],
            "question2": ["python", "sky"],
            "label": [1, 0],
            "group_id": [3, 7],
        }
    )
    tokenized = tokenize_pairs(pairs, word_tokenizer, max_length=4)
    assert "labels" in tokenized.column_names and "question1" not in tokenized.column_names
    assert max(len(ids) for ids in tokenized["input_ids_a"]) == 4  # truncated
    batch = SiamesePairCollator(word_tokenizer)([tokenized[i] for i in range(2)])
    assert batch["input_ids_a"].shape == (2, 4) and batch["input_ids_b"].shape == (2, 1)
    assert batch["labels"].tolist() == [1, 0] and batch["group_ids"].tolist() == [3, 7]
    assert batch["attention_mask_a"].dtype == torch.long


@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("pad_to_multiple_of", [None, 8])
def test_rows_and_arrow_batches_equal_tokenizer_pad(bert_tokenizer, padding_side, pad_to_multiple_of):
    bert_tokenizer.padding_side = padding_side
    tokenized = tokenize_pairs(mixed_pairs(), bert_tokenizer, max_length=12)
    assert {"token_type_ids_a", "input_ids_n", "labels", "group_id"} <= set(tokenized.column_names)
    order = [5, 0, 7, 2, 3]  # the long text (row 2) and short ones, in sampler order
    rows = [tokenized[i] for i in order]
    expected = reference_batch(bert_tokenizer, rows, pad_to_multiple_of)
    collator = SiamesePairCollator(bert_tokenizer, pad_to_multiple_of=pad_to_multiple_of)
    assert_same_batch(collator(rows), expected)
    assert_same_batch(collator(arrow_batch_dataset(tokenized).__getitems__(order)), expected)
    # the padding is really there, on the asked side, and as wide as asked
    mask = expected["attention_mask_b"]
    assert (mask == 0).any()
    assert (mask[:, 0 if padding_side == "left" else -1] == 0).any()
    if pad_to_multiple_of:
        assert all(expected[f"input_ids_{side}"].shape[1] % 8 == 0 for side in "abn")


def test_token_type_ids_and_a_missing_attention_mask_are_padded_as_the_tokenizer_pads_them(bert_tokenizer):
    # token types of a text pair (0s then 1s), and no attention mask: the tokenizer makes one
    encoded = [bert_tokenizer(TEXTS[i], TEXTS[i + 1]) for i in range(4)]
    rows = [
        {
            "input_ids_a": e["input_ids"][: 4 + 3 * i],
            "token_type_ids_a": e["token_type_ids"][: 4 + 3 * i],
            "input_ids_b": e["input_ids"][-2 - i :],
            "attention_mask_b": e["attention_mask"][-2 - i :],
            "token_type_ids_b": e["token_type_ids"][-2 - i :],
            "label": i % 2,
        }
        for i, e in enumerate(encoded)
    ]
    bert_tokenizer._pad_token_type_id = 2  # no public setter; tokenizer.pad pads token types with it
    expected = reference_batch(bert_tokenizer, rows)
    assert (expected["token_type_ids_a"] == 2).any()
    assert list(expected)[:3] == ["input_ids_a", "token_type_ids_a", "attention_mask_a"]
    assert expected["token_type_ids_b"][-1].tolist() == [1] * 5  # the second text of the pair
    collator = SiamesePairCollator(bert_tokenizer)
    assert_same_batch(collator(rows), expected)
    table = datasets.Dataset.from_list(rows).with_format("arrow")[:]
    assert_same_batch(collator(table), expected)
    assert_same_batch(collator(table.to_batches()[0]), expected)  # a record batch is a batch too


def test_arrow_columns_in_several_chunks_and_slices_collate_only_their_rows(word_tokenizer):
    ids = pa.chunked_array([pa.array([[9, 9], [4, 5]]), pa.array([[6, 7, 8], [], [9]])]).combine_chunks().slice(1)
    table = pa.table(
        {"input_ids_a": pa.chunked_array([ids.slice(0, 2), ids.slice(2)]), "input_ids_b": [[1], [2], [3], [4]]}
    )
    rows = table.to_pylist()
    assert rows[0]["input_ids_a"] == [4, 5]  # the row sliced off stays out
    assert_same_batch(SiamesePairCollator(word_tokenizer)(table), reference_batch(word_tokenizer, rows))


def test_collator_names_an_arrow_column_with_null_rows(word_tokenizer):
    table = pa.table({"input_ids_a": [[1], None], "input_ids_b": [[1], [2]]})
    with pytest.raises(ValueError, match="'input_ids_a' holds 1 null rows"):
        SiamesePairCollator(word_tokenizer)(table)
    with pytest.raises(ValueError, match="'labels' holds 1 null rows"):
        SiamesePairCollator(word_tokenizer)(
            pa.table({"input_ids_a": [[1], [2]], "input_ids_b": [[1], [2]], "labels": [1, None]})
        )


def test_rows_given_as_tensors_collate_the_same(word_tokenizer):
    tokenized = tokenize_pairs(mixed_pairs(with_negatives=False), word_tokenizer)
    expected = reference_batch(word_tokenizer, [tokenized[i] for i in range(6)])
    batch = SiamesePairCollator(word_tokenizer)([tokenized.with_format("torch")[i] for i in range(6)])
    assert_same_batch(batch, expected)


def test_collator_names_missing_columns(word_tokenizer):
    with pytest.raises(ValueError, match="tokenize_pairs"):
        SiamesePairCollator(word_tokenizer)([{"question1": "a", "question2": "b"}])
    table = datasets.Dataset.from_dict({"question1": ["a"], "input_ids_a": [[1]]}).with_format("arrow")[:]
    with pytest.raises(ValueError, match=r"lack \['input_ids_b'\].*tokenize_pairs"):
        SiamesePairCollator(word_tokenizer)(table)


def test_collator_refuses_an_empty_batch_and_a_tokenizer_without_pad_token(word_tokenizer, bert_tokenizer):
    with pytest.raises(ValueError, match="empty batch"):
        SiamesePairCollator(word_tokenizer)([])
    tokenized = tokenize_pairs(mixed_pairs(), word_tokenizer)
    with pytest.raises(ValueError, match="empty batch"):
        SiamesePairCollator(word_tokenizer)(arrow_batch_dataset(tokenized).__getitems__([]))
    bert_tokenizer.pad_token = None
    rows = [tokenize_pairs(mixed_pairs(), bert_tokenizer)[0]]
    with pytest.raises(ValueError, match="does not have a padding token"):
        bert_tokenizer.pad([{"input_ids": rows[0]["input_ids_a"]}])  # the tokenizer's own words ...
    with pytest.raises(ValueError, match="does not have a padding token"):
        SiamesePairCollator(bert_tokenizer)(rows)  # ... are the collator's


def test_collator_names_a_mask_that_does_not_match_its_ids(word_tokenizer):
    rows = [{"input_ids_a": [4, 5], "attention_mask_a": [1], "input_ids_b": [6]}]
    with pytest.raises(ValueError, match="attention_mask_a and input_ids_a differ in length"):
        SiamesePairCollator(word_tokenizer)(rows)


def test_tokenize_pairs_names_missing_column(word_tokenizer):
    with pytest.raises(ValueError, match="sentence1"):
        tokenize_pairs(datasets.Dataset.from_dict({"a": ["x"]}), word_tokenizer, question1_column="sentence1")
