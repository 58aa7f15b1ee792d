"""Rows for the losses on a teacher's scores: several negatives per row tokenised and batched row after row,
and the `teacher_scores` column carried into the batch."""

import datasets
import pytest
import torch

from hfsiamese.data.arrow_batches import arrow_batch_dataset
from hfsiamese.data.collator import SiamesePairCollator
from hfsiamese.data.preprocessing import tokenize_pairs
from tests.conftest import TEXTS


def scored_rows(negatives=None, scores=None):
    return datasets.Dataset.from_dict(
        {
            "question1": TEXTS[:3],
            "question2": TEXTS[3:6],
            "negative": negatives or [[TEXTS[6], TEXTS[7]], [TEXTS[0], TEXTS[1]], [TEXTS[2], TEXTS[7]]],
            "teacher_scores": scores or [[0.9, 0.1, -0.2], [0.8, 0.5, 0.25], [0.7, 0.0, 0.3]],
        }
    )


def arrow_batch(dataset):
    """The batch the trainer's Arrow path hands the collator: one table of the rows."""
    view = arrow_batch_dataset(dataset)
    return view.__getitems__(list(range(len(dataset))))


def test_a_list_of_negatives_is_tokenised_per_text(word_tokenizer):
    tokenized = tokenize_pairs(scored_rows(), word_tokenizer)
    assert tokenized[1]["input_ids_n"] == [word_tokenizer(TEXTS[0])["input_ids"], word_tokenizer(TEXTS[1])["input_ids"]]
    assert tokenized[0]["teacher_scores"] == [0.9, 0.1, -0.2]


def test_the_collator_flattens_negatives_row_after_row_and_carries_the_scores(word_tokenizer):
    tokenized = tokenize_pairs(scored_rows(), word_tokenizer)
    collator = SiamesePairCollator(word_tokenizer)
    batch = collator([tokenized[i] for i in range(3)])
    flat = [TEXTS[6], TEXTS[7], TEXTS[0], TEXTS[1], TEXTS[2], TEXTS[7]]
    expected = word_tokenizer(flat, padding=True, return_tensors="pt")
    assert torch.equal(batch["input_ids_n"], expected["input_ids"])
    assert torch.equal(batch["attention_mask_n"], expected["attention_mask"])
    assert batch["input_ids_a"].shape[0] == 3 and batch["input_ids_n"].shape[0] == 6
    assert batch["teacher_scores"].dtype == torch.float32
    assert torch.equal(batch["teacher_scores"], torch.tensor([[0.9, 0.1, -0.2], [0.8, 0.5, 0.25], [0.7, 0.0, 0.3]]))
    from_arrow = collator(arrow_batch(tokenized))
    assert set(from_arrow) == set(batch)
    assert all(torch.equal(from_arrow[key], batch[key]) for key in batch)


def test_one_negative_per_row_keeps_its_batch_and_gets_two_scores(word_tokenizer):
    rows = scored_rows(negatives=TEXTS[5:8], scores=[[1.0, 0.5]] * 3)
    batch = SiamesePairCollator(word_tokenizer)(arrow_batch(tokenize_pairs(rows, word_tokenizer)))
    assert batch["input_ids_n"].shape[0] == 3 and batch["teacher_scores"].shape == (3, 2)


def test_rows_of_different_lengths_are_refused_naming_the_problem(word_tokenizer):
    uneven = scored_rows(negatives=[[TEXTS[6]], [TEXTS[0], TEXTS[1]], [TEXTS[2]]])
    tokenized = tokenize_pairs(uneven, word_tokenizer)
    collator = SiamesePairCollator(word_tokenizer)
    for batch in ([tokenized[i] for i in range(3)], arrow_batch(tokenized)):
        with pytest.raises(ValueError, match=r"different numbers of negatives \(1, 2\): give every row the same"):
            collator(batch)
    ragged = tokenize_pairs(scored_rows(scores=[[0.9, 0.1, -0.2], [0.8, 0.5], [0.7, 0.0, 0.3]]), word_tokenizer)
    for batch in ([ragged[i] for i in range(3)], arrow_batch(ragged)):
        with pytest.raises(
            ValueError, match=r"teacher_scores rows hold different numbers of scores in one batch \(2, 3\)"
        ):
            collator(batch)


def test_a_non_text_among_the_negatives_names_its_column_and_row(word_tokenizer):
    rows = scored_rows(negatives=[[TEXTS[6], TEXTS[7]], [TEXTS[0], None], [TEXTS[2], TEXTS[7]]])
    with pytest.raises(ValueError, match="column 'negative' holds a null in row 1"):
        tokenize_pairs(rows, word_tokenizer)


def test_truncation_counts_every_negative(word_tokenizer):
    long_text = " ".join([TEXTS[0]] * 5)
    rows = scored_rows(negatives=[[long_text, long_text], [TEXTS[0], TEXTS[1]], [TEXTS[2], TEXTS[7]]])
    with pytest.warns(UserWarning, match="2 of 12 texts were longer than max_length=12"):
        tokenize_pairs(rows, word_tokenizer, max_length=12)
