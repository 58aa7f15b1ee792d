import datasets
import pytest
import torch

from hfsiamese.data.collator import SiamesePairCollator
from hfsiamese.data.preprocessing import tokenize_pairs


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


def test_collator_names_missing_columns(word_tokenizer):
    with pytest.raises(ValueError, match="tokenize_pairs"):
        SiamesePairCollator(word_tokenizer)([{"question1": "a", "question2": "b"}])


def test_tokenize_pairs_names_missing_column(word_tokenizer):
    with pytest.raises(ValueError, match="sentence1"):
        tokenize_pairs(datasets.Dataset.from_dict({"a": ["x"]}), word_tokenizer, question1_column="sentence1")
