"""CrossEncoderTrainer: binary cross-entropy on pairs, both orders, calibration on validation, an atomic save."""

import datasets
import pytest
import torch
from transformers import AutoModelForSequenceClassification

from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.cross_encoder.pair_inputs import CrossPairCollator, tokenize_cross_pairs
from hfsiamese.cross_encoder.trainer import CrossEncoderTrainer
from hfsiamese.cross_encoder.training_args import CrossEncoderTrainingArguments
from hfsiamese.data.question_fingerprints import FINGERPRINT_FILE
from tests.fixtures import tiny_eval_pairs, tiny_pairs, tiny_training_args


def _labelled_training_pairs() -> datasets.Dataset:
    pairs = tiny_pairs()
    labels = [i % 2 for i in range(len(pairs))]
    return pairs.remove_columns("label").add_column("label", labels)


def test_tokenize_both_orders_and_swapped_columns(tiny_cross_encoder):
    tokenizer = tiny_cross_encoder.tokenizer
    pairs = tiny_eval_pairs()
    training = tokenize_cross_pairs(pairs, tokenizer, both_orders=True)
    assert len(training) == 2 * len(pairs) and "input_ids_swapped" not in training.column_names
    first = tokenizer(pairs[0]["question1"], pairs[0]["question2"])["input_ids"]
    second = tokenizer(pairs[0]["question2"], pairs[0]["question1"])["input_ids"]
    assert training[0]["input_ids"] == first and training[len(pairs)]["input_ids"] == second
    assert training["labels"] == [float(x) for x in pairs["label"]] * 2
    evaluation = tokenize_cross_pairs(pairs, tokenizer, swapped_columns=True)
    assert len(evaluation) == len(pairs) and evaluation[0]["input_ids_swapped"] == second
    batch = CrossPairCollator(tokenizer)([evaluation[i] for i in range(3)])
    assert batch["input_ids"].shape[0] == 3 and batch["labels"].dtype == torch.float32
    assert batch["input_ids_swapped"].shape == batch["input_ids"].shape  # same tokens, other order
    with pytest.raises(ValueError, match="holds None, not a text"):
        tokenize_cross_pairs(datasets.Dataset.from_dict({"question1": ["a"], "question2": [None]}), tokenizer)


def _trainer(cross, tmp_path, **overrides):
    tokenizer = cross.tokenizer
    return CrossEncoderTrainer(
        model=cross.model,
        args=tiny_training_args(tmp_path, CrossEncoderTrainingArguments, **overrides),
        train_dataset=tokenize_cross_pairs(_labelled_training_pairs(), tokenizer, both_orders=True),
        eval_dataset=tokenize_cross_pairs(tiny_eval_pairs(), tokenizer, swapped_columns=True),
        processing_class=tokenizer,
        training_questions=None,
    )


def test_trains_calibrates_on_validation_and_saves_a_loadable_folder(tiny_cross_encoder, tmp_path):
    cross = tiny_cross_encoder
    before = {k: v.clone() for k, v in cross.model.state_dict().items()}
    trainer = _trainer(cross, tmp_path)
    trainer.training_questions = __import__("numpy").arange(5, dtype="uint64")
    result = trainer.train()
    assert torch.isfinite(torch.tensor(result.training_loss))
    assert any(not torch.equal(before[k], v) for k, v in cross.model.state_dict().items())
    metrics = trainer.evaluate()
    assert 0.0 <= metrics["eval_average_precision"] <= 1.0 and cross.config.threshold == pytest.approx(
        metrics["eval_threshold"]
    )
    # Validation pairs scored as CrossEncoder scores them: both orders averaged.
    pairs = tiny_eval_pairs()
    scores = cross.score_pairs(pairs["question1"], pairs["question2"])
    predictions = trainer.predict(trainer.eval_dataset).predictions
    assert torch.tensor(predictions) == pytest.approx(scores, abs=1e-5)
    test = trainer.evaluate(metric_key_prefix="test")  # applies the stored threshold, never re-fits it
    assert test["test_threshold"] == pytest.approx(cross.config.threshold)
    trainer.save_model()
    out = tmp_path / "out"
    assert (out / "model.safetensors").is_file() and (out / FINGERPRINT_FILE).is_file()
    loaded = CrossEncoder.from_pretrained(out)
    assert loaded.config.threshold == pytest.approx(cross.config.threshold)
    assert loaded.score_pairs(pairs["question1"], pairs["question2"]) == pytest.approx(scores, abs=1e-5)
    assert AutoModelForSequenceClassification.from_pretrained(out).config.num_labels == 1


def _soft_label_loss(cross, rows) -> float:
    """Binary cross-entropy with soft labels, by hand (float64): -(y log p + (1 - y) log(1 - p)), p = sigmoid(logit)."""
    batch = CrossPairCollator(cross.tokenizer)(rows)
    cross.model.eval()
    with torch.no_grad():
        logits = cross.model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], token_type_ids=batch["token_type_ids"]
        ).logits[:, 0]
    p, y = torch.sigmoid(logits.double()), batch["labels"].double()
    return (-(y * torch.log(p) + (1 - y) * torch.log(1 - p))).mean().item()


def test_soft_labels_train_and_the_loss_is_binary_cross_entropy(tiny_cross_encoder, tmp_path):
    cross = tiny_cross_encoder
    pairs = tiny_pairs()
    soft = [0.7, 0.95, 0.8, 0.6, 0.9] * (len(pairs) // 5 + 1)  # mostly duplicates, none certain
    pairs = pairs.remove_columns("label").add_column("label", soft[: len(pairs)])
    trainer = CrossEncoderTrainer(
        model=cross.model, args=tiny_training_args(tmp_path, CrossEncoderTrainingArguments, max_steps=12, learning_rate=1e-2),
        train_dataset=tokenize_cross_pairs(pairs, cross.tokenizer, both_orders=True), processing_class=cross.tokenizer,
        training_questions=None,
    )  # fmt: skip
    rows = [trainer.train_dataset[i] for i in range(len(trainer.train_dataset))]
    assert sorted({row["labels"] for row in rows}) == pytest.approx([0.6, 0.7, 0.8, 0.9, 0.95])  # kept soft

    # Training on them moves the weights and lowers that loss over the training pairs.
    before_weights = {k: v.clone() for k, v in cross.model.state_dict().items()}
    before = _soft_label_loss(cross, rows)
    trainer.train()
    assert any(not torch.equal(before_weights[k], v) for k, v in cross.model.state_dict().items())
    after = _soft_label_loss(cross, rows)
    assert after < before - 1e-3, (before, after)

    # The trainer's loss is the hand-computed BCE with the soft labels, not with labels rounded to 0/1 (trained,
    # the logits are away from 0, where the two differ: by (rounded - soft) * logit per row).
    batch = CrossPairCollator(cross.tokenizer)(rows)
    cross.model.eval()
    with torch.no_grad():
        loss = trainer.compute_loss(cross.model, batch).item()
    assert loss == pytest.approx(after, abs=1e-6)
    rounded = [dict(row, labels=float(round(row["labels"]))) for row in rows]
    assert abs(loss - _soft_label_loss(cross, rounded)) > 1e-3, (loss, _soft_label_loss(cross, rounded))


def test_refusals(tiny_cross_encoder, tiny_lstm, tmp_path):
    with pytest.raises(ValueError, match="one-logit sequence-classification model"):
        CrossEncoderTrainer(
            model=tiny_lstm,
            args=tiny_training_args(tmp_path, CrossEncoderTrainingArguments),
            processing_class=tiny_cross_encoder.tokenizer,
        )
    with (
        pytest.raises(ValueError, match="gradient_cache_mini_batch_size applies to in-batch losses"),
        pytest.warns(FutureWarning, match=r"is replaced by CrossEncoderTrainer\(args=CrossEncoderTrainingArguments"),
    ):
        CrossEncoderTrainer(
            model=tiny_cross_encoder.model,
            args=tiny_training_args(tmp_path, gradient_cache_mini_batch_size=2),  # the old arguments class
            processing_class=tiny_cross_encoder.tokenizer,
        )
    with pytest.raises(ValueError, match="no input_ids column"):
        CrossEncoderTrainer(
            model=tiny_cross_encoder.model, args=tiny_training_args(tmp_path, CrossEncoderTrainingArguments), train_dataset=tiny_pairs(),
            processing_class=tiny_cross_encoder.tokenizer,
        )  # fmt: skip
    trainer = CrossEncoderTrainer(
        model=tiny_cross_encoder.model,
        args=tiny_training_args(tmp_path, CrossEncoderTrainingArguments),
        train_dataset=tokenize_cross_pairs(_labelled_training_pairs(), tiny_cross_encoder.tokenizer),
        eval_dataset=tokenize_cross_pairs(tiny_eval_pairs(), tiny_cross_encoder.tokenizer),  # no swapped columns
        processing_class=tiny_cross_encoder.tokenizer,
    )
    with pytest.raises(ValueError, match="scores both orders: tokenise evaluation pairs with swapped_columns=True"):
        trainer.evaluate()


def test_arguments_of_neither_family_are_refused(tiny_cross_encoder, tmp_path):
    from hfsiamese.base.training_args import PairTrainingArguments

    with pytest.raises(
        TypeError, match="CrossEncoderTrainer needs CrossEncoderTrainingArguments, got PairTrainingArguments"
    ):
        CrossEncoderTrainer(
            model=tiny_cross_encoder.model,
            args=tiny_training_args(tmp_path, PairTrainingArguments),
            processing_class=tiny_cross_encoder.tokenizer,
        )
