"""TokenizingCrossPairCollator: text rows tokenised batch by batch give the batches and losses of pairs tokenised first."""

import datasets
import pytest
import torch

from hfsiamese.cross_encoder.pair_inputs import CrossPairCollator, tokenize_cross_pairs
from hfsiamese.cross_encoder.tokenizing_collator import TokenizingCrossPairCollator, cross_text_rows
from hfsiamese.cross_encoder.trainer import CrossEncoderTrainer
from hfsiamese.cross_encoder.training_args import CrossEncoderTrainingArguments
from hfsiamese.data.question_identity import KEY_COLUMNS
from tests.fixtures import tiny_eval_pairs, tiny_pairs, tiny_training_args


def _labelled_pairs() -> datasets.Dataset:
    pairs = tiny_pairs()
    return pairs.remove_columns("label").add_column("label", [i % 2 for i in range(len(pairs))])


@pytest.mark.parametrize("max_length", [None, 12])
def test_batches_equal_those_of_pairs_tokenised_first(tiny_cross_encoder, max_length):
    tokenizer = tiny_cross_encoder.tokenizer
    pairs = _labelled_pairs()
    tokenized = tokenize_cross_pairs(pairs, tokenizer, max_length=max_length, both_orders=True)
    texts = cross_text_rows(pairs, both_orders=True)
    assert len(texts) == len(tokenized) and not set(KEY_COLUMNS) & set(texts.column_names)
    collator = TokenizingCrossPairCollator(tokenizer, max_length=max_length)
    for rows in ([0, 1, 2, 3], [len(pairs) - 1, len(pairs), 2 * len(pairs) - 1]):  # both orders in one batch too
        expected = CrossPairCollator(tokenizer)([tokenized[i] for i in rows])
        if max_length is None:
            got = collator([texts[i] for i in rows])
        else:
            with pytest.warns(UserWarning, match=f"longer than max_length={max_length} tokens are truncated"):
                got = TokenizingCrossPairCollator(tokenizer, max_length=max_length)([texts[i] for i in rows])
        assert got.keys() == expected.keys()
        for name, tensor in expected.items():
            assert torch.equal(got[name], tensor), name


def test_tokenised_rows_are_padded_as_they_are_and_bad_rows_refused(tiny_cross_encoder):
    tokenizer = tiny_cross_encoder.tokenizer
    evaluation = tokenize_cross_pairs(tiny_eval_pairs(), tokenizer, swapped_columns=True)
    rows = [evaluation[i] for i in range(3)]
    assert all(
        torch.equal(a, b)
        for a, b in zip(
            TokenizingCrossPairCollator(tokenizer)(rows).values(), CrossPairCollator(tokenizer)(rows).values()
        )
    )
    with pytest.raises(ValueError, match="lack \\['question2'\\] and are not tokenised"):
        TokenizingCrossPairCollator(tokenizer)([{"question1": "a"}])
    with pytest.raises(ValueError, match="column 'question2' holds None, not a text"):
        TokenizingCrossPairCollator(tokenizer)([{"question1": "a", "question2": None}])


def _losses(cross, tmp_path, train_dataset, **kwargs) -> list[float]:
    trainer = CrossEncoderTrainer(
        model=cross.model,
        args=tiny_training_args(tmp_path, CrossEncoderTrainingArguments, logging_steps=1, seed=3),
        train_dataset=train_dataset,
        eval_dataset=tokenize_cross_pairs(tiny_eval_pairs(), cross.tokenizer, swapped_columns=True),
        processing_class=cross.tokenizer,
        training_questions=None,
        **kwargs,
    )
    trainer.train()
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def test_a_run_tokenising_in_the_collator_has_the_losses_of_one_tokenising_first(tiny_cross_encoder_dir, tmp_path):
    from hfsiamese.cross_encoder.model import CrossEncoder

    pairs = _labelled_pairs()
    first = CrossEncoder.from_pretrained(tiny_cross_encoder_dir)
    tokenized = tokenize_cross_pairs(pairs, first.tokenizer, both_orders=True)
    expected = _losses(first, tmp_path / "first", tokenized)
    in_collator = CrossEncoder.from_pretrained(tiny_cross_encoder_dir)
    collator = TokenizingCrossPairCollator(in_collator.tokenizer)
    got = _losses(in_collator, tmp_path / "collator", cross_text_rows(pairs, both_orders=True), data_collator=collator)
    assert len(got) == 6 and got == expected
