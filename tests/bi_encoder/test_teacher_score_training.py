"""SiameseTrainer with the losses on a teacher's scores: a few steps learn them, and bad data is refused first."""

import datasets
import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.data import tokenize_pairs
from tests.conftest import TEXTS
from tests.fixtures import tiny_eval_pairs, tiny_training_args


def scored_rows(rows=8, negatives=2):
    """Each question with the next as its positive and the following ones as negatives, the teacher preferring the positive."""
    return datasets.Dataset.from_dict(
        {
            "question1": [TEXTS[i % 8] for i in range(rows)],
            "question2": [TEXTS[(i + 1) % 8] for i in range(rows)],
            "negative": [[TEXTS[(i + 2 + j) % 8] for j in range(negatives)] for i in range(rows)],
            "teacher_scores": [[0.9] + [0.1 - 0.2 * j for j in range(negatives)]] * rows,
        }
    )


def trainer(tokenizer, tmp_path, loss, rows, **overrides):
    torch.manual_seed(0)
    model = SiameseModel(SiameseConfig(encoder_type="static", vocab_size=len(tokenizer), embedding_dim=8))
    args = tiny_training_args(
        tmp_path, **{"loss": loss, "max_steps": 12, "logging_steps": 1, "no_duplicate_batches": False, **overrides}
    )
    return SiameseTrainer(
        model=model,
        args=args,
        train_dataset=tokenize_pairs(rows, tokenizer),
        eval_dataset=tokenize_pairs(tiny_eval_pairs(), tokenizer),
        processing_class=tokenizer,
    )


def batch_loss(trainer, rows, tokenizer):
    batch = trainer.data_collator([tokenize_pairs(rows, tokenizer)[i] for i in range(len(rows))])
    trainer.model.eval()
    with torch.no_grad():
        return trainer.compute_loss(trainer.model, batch).item()


@pytest.mark.parametrize(
    "loss,options,statistic",
    [
        ("margin_mse", {}, "student_margin"),
        ("listwise_kl", {"teacher_temperature": 0.5}, "student_positive_probability"),
    ],
)
def test_a_few_steps_learn_the_teacher_scores(word_tokenizer, tmp_path, loss, options, statistic):
    rows = scored_rows()
    run = trainer(word_tokenizer, tmp_path, loss, rows, **options)
    weights = run.model.encoder.embeddings.weight.detach().clone()
    before = batch_loss(run, rows, word_tokenizer)
    run.train()
    assert not torch.equal(run.model.encoder.embeddings.weight.detach(), weights)
    assert batch_loss(run, rows, word_tokenizer) < 0.5 * before
    logged = [entry for entry in run.state.log_history if "loss" in entry]
    assert len(logged) == 12 and all(f"loss_{statistic}" in entry for entry in logged)  # the loss's statistics


def test_missing_or_mismatched_teacher_scores_are_refused_before_training(word_tokenizer, tmp_path):
    with pytest.raises(
        ValueError, match="margin_mse learns a teacher's scores: train_dataset needs a `teacher_scores` column"
    ):
        trainer(word_tokenizer, tmp_path, "margin_mse", scored_rows().remove_columns("teacher_scores"))
    with pytest.raises(
        ValueError, match="listwise_kl compares each positive with negatives: train_dataset needs a `negative`"
    ):
        trainer(word_tokenizer, tmp_path, "listwise_kl", scored_rows().remove_columns("negative"))
    with pytest.raises(ValueError, match="teacher_scores holds 2 scores per row but the rows hold 3 negatives"):
        rows = scored_rows(negatives=3).map(lambda row: {"teacher_scores": row["teacher_scores"][:2]})
        trainer(word_tokenizer, tmp_path, "margin_mse", rows)
    uneven = scored_rows(rows=4).map(lambda row, i: {"negative": row["negative"][: 1 + i % 2]}, with_indices=True)
    with pytest.raises(ValueError, match=r"the same number of negatives and of teacher_scores; .* \[1, 2\] negatives"):
        trainer(word_tokenizer, tmp_path, "margin_mse", uneven)


def test_other_losses_do_not_see_the_scores(word_tokenizer, tmp_path):
    """A loss that does not declare them trains as before on the same rows (one negative each)."""
    rows = scored_rows(negatives=1).map(lambda row: {"negative": row["negative"][0]})
    run = trainer(word_tokenizer, tmp_path, "multiple_negatives_ranking", rows, max_steps=2)
    run.train()
    assert run.state.global_step == 2


def test_the_gradient_cache_gives_the_same_steps(word_tokenizer, tmp_path):
    """Negatives k per row are embedded in mini-batches like any side: the same losses step by step."""
    rows = scored_rows()
    logged = []
    for mini_batch in (None, 2):
        run = trainer(word_tokenizer, tmp_path / str(mini_batch), "margin_mse", rows, max_steps=3,
                      gradient_cache_mini_batch_size=mini_batch)  # fmt: skip
        run.train()
        logged.append([entry["loss"] for entry in run.state.log_history if "loss" in entry])
    assert logged[0] == pytest.approx(logged[1], rel=1e-5)
