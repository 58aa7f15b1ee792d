"""DistillationTrainer: batches carry the teacher's vectors, and the student moves towards the teacher."""

import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.data import tokenize_pairs
from hfsiamese.data.collator import SiamesePairCollator
from hfsiamese.distillation import (
    DistillationCollator,
    DistillationTrainer,
    distillation_pairs,
    encode_teacher_targets,
    load_teacher,
    with_teacher_rows,
)
from hfsiamese.losses import get_loss
from tests.fixtures import tiny_eval_pairs, tiny_pairs, tiny_training_args


@pytest.fixture
def stage1(tiny_bert_dir, word_tokenizer):
    teacher, teacher_tokenizer = load_teacher(str(tiny_bert_dir))
    rows = distillation_pairs(tiny_pairs())
    targets = encode_teacher_targets(teacher, teacher_tokenizer, list(rows["question1"]) + list(rows["question2"]))
    return tokenize_pairs(with_teacher_rows(rows, targets), word_tokenizer), targets


def student(tokenizer, dim):
    torch.manual_seed(0)
    config = SiameseConfig(encoder_type="static", vocab_size=len(tokenizer), embedding_dim=8, projection_dim=dim)
    return SiameseModel(config)


def distance_to_teacher(model, dataset, targets, tokenizer):
    batch = DistillationCollator(SiamesePairCollator(tokenizer), targets.vectors)(
        [dataset[i] for i in range(len(dataset))]
    )
    with torch.no_grad():
        embeddings = model.eval().embed(batch["input_ids_a"], batch["attention_mask_a"])
    return (embeddings - batch["teacher_a"]).pow(2).sum(dim=1).mean().item()


def test_the_collator_adds_each_side_teacher_vector(stage1, word_tokenizer):
    dataset, targets = stage1
    rows = [dataset[i] for i in range(3)]
    batch = DistillationCollator(SiamesePairCollator(word_tokenizer), targets.vectors)(rows)
    for key, column in (("teacher_a", "teacher_row_a"), ("teacher_b", "teacher_row_b")):
        assert torch.equal(batch[key], targets.vectors[[row[column] for row in rows]])
    plain = DistillationCollator(SiamesePairCollator(word_tokenizer), targets.vectors)(
        [tokenize_pairs(tiny_eval_pairs(), word_tokenizer)[0]]
    )
    assert "teacher_a" not in plain and "input_ids_a" in plain


def test_training_moves_the_student_towards_the_teacher(stage1, word_tokenizer, tmp_path):
    dataset, targets = stage1
    model = student(word_tokenizer, targets.dim)
    before = distance_to_teacher(model, dataset, targets, word_tokenizer)
    args = tiny_training_args(
        tmp_path,
        loss="embedding_distillation",
        max_steps=30,
        learning_rate=0.05,
        no_duplicate_batches=False,
        logging_steps=10,
    )
    trainer = DistillationTrainer(
        model=model,
        args=args,
        teacher_vectors=targets.vectors,
        train_dataset=dataset,
        eval_dataset=tokenize_pairs(tiny_eval_pairs(), word_tokenizer),
        processing_class=word_tokenizer,
    )
    trainer.train()
    assert distance_to_teacher(model, dataset, targets, word_tokenizer) < 0.5 * before
    logged = [entry for entry in trainer.state.log_history if "loss_embedding_term" in entry]
    assert logged and "loss_score_term" in logged[0]
    assert 0.0 <= trainer.evaluate()["eval_average_precision"] <= 1.0


def test_refuses_another_loss_and_rows_without_teacher_vectors(stage1, word_tokenizer, tmp_path):
    dataset, targets = stage1
    model = student(word_tokenizer, targets.dim)
    with pytest.raises(TypeError, match="EmbeddingDistillationLoss"):
        DistillationTrainer(
            model=model, args=tiny_training_args(tmp_path), teacher_vectors=targets.vectors, train_dataset=dataset,
            processing_class=word_tokenizer, loss=get_loss("hard_negative_triplet"),
        )  # fmt: skip
    trainer = DistillationTrainer(
        model=model,
        args=tiny_training_args(tmp_path, loss="embedding_distillation", no_duplicate_batches=False),
        teacher_vectors=targets.vectors,
        train_dataset=dataset.remove_columns(["teacher_row_a", "teacher_row_b"]),
        processing_class=word_tokenizer,
    )
    with pytest.raises(ValueError, match="teacher's vectors"):
        trainer.train()


def test_refuses_several_data_sets(stage1, word_tokenizer, tmp_path):
    dataset, targets = stage1
    with pytest.raises(ValueError, match="DistillationTrainer trains on one data set"):
        DistillationTrainer(
            model=student(word_tokenizer, targets.dim),
            args=tiny_training_args(tmp_path, loss="embedding_distillation"),
            teacher_vectors=targets.vectors,
            train_dataset={"a": dataset, "b": dataset},
            processing_class=word_tokenizer,
        )
