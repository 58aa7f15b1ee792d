"""Pairs tokenised in the collator give the batches, and a run the losses, of pairs tokenised before training."""

from __future__ import annotations

import copy

import datasets
import pyarrow as pa
import pytest
import torch

from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.data.arrow_batches import arrow_batch_dataset
from hfsiamese.data.collator import PAIR_BATCH_COLUMNS, SiamesePairCollator
from hfsiamese.data.preprocessing import tokenize_pairs, untokenized_pairs
from hfsiamese.data.tokenizing_collator import TokenizingPairCollator
from tests.conftest import TEXTS
from tests.data.test_collator import assert_same_batch, mixed_pairs

TEXT_COLUMNS = ("question1", "question2", "negative")


def batches_both_ways(pairs, tokenizer, rows, **options):
    tokenised = arrow_batch_dataset(tokenize_pairs(pairs, tokenizer, **options))
    texts = arrow_batch_dataset(untokenized_pairs(pairs), PAIR_BATCH_COLUMNS + TEXT_COLUMNS)
    expected = SiamesePairCollator(tokenizer)(tokenised.__getitems__(rows))
    batch = TokenizingPairCollator(tokenizer, **options)(texts.__getitems__(rows))
    return batch, expected


@pytest.mark.parametrize("options", [{}, {"max_length": 3}, {"prompt": "query: "}])
def test_an_arrow_batch_of_texts_collates_as_the_tokenised_rows(word_tokenizer, options):
    batch, expected = batches_both_ways(mixed_pairs(), word_tokenizer, [4, 0, 2, 7], **options)
    assert_same_batch(batch, expected)


def test_lists_of_negatives_and_row_dicts(word_tokenizer):
    pairs = mixed_pairs(with_negatives=False)
    pairs = pairs.add_column("negative", [[TEXTS[(i + 2) % len(TEXTS)], TEXTS[i]] for i in range(len(pairs))])
    batch, expected = batches_both_ways(pairs, word_tokenizer, [1, 3, 5])
    assert_same_batch(batch, expected)
    rows = [untokenized_pairs(pairs)[i] for i in (1, 3, 5)]
    assert_same_batch(TokenizingPairCollator(word_tokenizer)(rows), expected)


def test_already_tokenised_batches_pass_through(word_tokenizer):
    rows = tokenize_pairs(mixed_pairs(), word_tokenizer)
    batch = arrow_batch_dataset(rows).__getitems__([0, 1])
    assert_same_batch(TokenizingPairCollator(word_tokenizer)(batch), SiamesePairCollator(word_tokenizer)(batch))


def test_a_null_text_is_named(word_tokenizer):
    table = pa.table({"question1": ["How?", None], "question2": ["Why?", "When?"], "labels": [1, 0]})
    with pytest.raises(ValueError, match="column 'question1' holds 1 null texts"):
        TokenizingPairCollator(word_tokenizer)(table)


def losses(model, tokenizer, train, tmp_path, name, collator=None):
    args = SiameseTrainingArguments(
        output_dir=str(tmp_path / name), report_to="none", use_cpu=True, max_steps=4, logging_steps=1,
        per_device_train_batch_size=4, save_strategy="no", eval_strategy="no", seed=3, disable_tqdm=True,
    )  # fmt: skip
    trainer = SiameseTrainer(
        model=model, args=args, train_dataset=train, processing_class=tokenizer, data_collator=collator
    )
    trainer.train()
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def test_a_run_on_texts_trains_on_the_same_batches(tiny_lstm, word_tokenizer, tmp_path):
    n = len(TEXTS)
    pairs = datasets.Dataset.from_dict(
        {
            "question1": [TEXTS[i % n] for i in range(24)],
            "question2": [TEXTS[(i * 5 + 1) % n] for i in range(24)],
            "label": [1] * 24,
            "group_id": list(range(24)),
        }
    )
    first = copy.deepcopy(tiny_lstm)
    tokenised = losses(first, word_tokenizer, tokenize_pairs(pairs, word_tokenizer), tmp_path, "tokenised")
    on_the_fly = losses(
        tiny_lstm, word_tokenizer, untokenized_pairs(pairs), tmp_path, "texts", TokenizingPairCollator(word_tokenizer)
    )
    assert len(tokenised) == 4 and on_the_fly == tokenised
    for a, b in zip(first.parameters(), tiny_lstm.parameters(), strict=True):
        assert torch.equal(a, b)


def test_texts_without_a_tokenising_collator_are_refused(tiny_lstm, word_tokenizer, tmp_path):
    with pytest.raises(ValueError, match="tokenise it with hfsiamese.data.tokenize_pairs"):
        losses(tiny_lstm, word_tokenizer, untokenized_pairs(mixed_pairs()), tmp_path, "refused")
