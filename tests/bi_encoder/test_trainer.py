import datasets
import pytest
import torch

from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.data import tokenize_pairs
from tests.conftest import TEXTS
from tests.fixtures import tiny_eval_pairs as _eval_pairs, tiny_pairs as _pairs, tiny_training_args as _args


class RecordingTrainer(SiameseTrainer):
    """Records the group ids of every training batch."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        self.seen_groups = getattr(self, "seen_groups", []) + [inputs["group_ids"].tolist()]
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)


def test_trains_with_group_free_batches_and_calibrates(tiny_lstm, word_tokenizer, tmp_path):
    train = tokenize_pairs(_pairs(), word_tokenizer)
    trainer = RecordingTrainer(
        model=tiny_lstm,
        args=_args(tmp_path),
        train_dataset=train,
        eval_dataset=tokenize_pairs(_eval_pairs(), word_tokenizer),
        processing_class=word_tokenizer,
    )
    before = {k: v.clone() for k, v in tiny_lstm.state_dict().items()}
    trainer.train()
    assert len(trainer.seen_groups) == 6
    for groups in trainer.seen_groups:
        assert len(groups) == len(set(groups)) == 4
    assert any(not torch.equal(before[k], v) for k, v in tiny_lstm.state_dict().items())
    metrics = trainer.evaluate()
    for key in ("accuracy", "f1", "precision", "recall", "average_precision", "roc_auc", "threshold"):
        assert f"eval_{key}" in metrics
    assert metrics["eval_num_pairs"] == 8
    assert tiny_lstm.config.threshold == pytest.approx(metrics["eval_threshold"])


def test_uncalibrated_evaluation_uses_stored_threshold(tiny_lstm, word_tokenizer, tmp_path):
    tiny_lstm.config.threshold = 0.99
    trainer = SiameseTrainer(
        model=tiny_lstm,
        args=_args(tmp_path, calibrate_threshold=False),
        eval_dataset=tokenize_pairs(_eval_pairs(), word_tokenizer),
        processing_class=word_tokenizer,
    )
    assert trainer.evaluate()["eval_threshold"] == pytest.approx(0.99)
    assert tiny_lstm.config.threshold == 0.99


@pytest.mark.parametrize("label,kind", [(1, "duplicates"), (0, "non-duplicates")])
def test_validation_pairs_of_one_kind_are_refused_before_any_step(label, kind, tiny_lstm, word_tokenizer, tmp_path):
    """Calibrating on them would store the lowest duplicate's score (accuracy 1.0) as the model's threshold."""
    one_kind = _eval_pairs().map(lambda row: {"label": label}).select([0, 2, 4, 5])  # a selection of the set, too
    args = _args(tmp_path)
    with pytest.raises(ValueError, match=rf"the validation pairs are all {kind} \(4 pairs\).*both kinds"):
        SiameseTrainer(
            model=tiny_lstm,
            args=args,
            train_dataset=tokenize_pairs(_pairs(), word_tokenizer),
            eval_dataset={"a": tokenize_pairs(one_kind, word_tokenizer)},
            processing_class=word_tokenizer,
        )
    assert tiny_lstm.config.threshold is None and not (tmp_path / "out").exists()
    both = {"a": tokenize_pairs(one_kind, word_tokenizer), "b": tokenize_pairs(_eval_pairs(), word_tokenizer)}
    trainer = SiameseTrainer(model=tiny_lstm, args=args, eval_dataset=both, processing_class=word_tokenizer)
    assert trainer.evaluate()["eval_num_pairs"] == 12  # one kind in one set, both over the sets: calibrated together


def test_scoring_at_a_threshold_the_model_lacks_is_refused_before_any_step(tiny_lstm, word_tokenizer, tmp_path):
    """calibrate_threshold=False on a new model: the first evaluation, after the training, could only fail."""
    train, validation = tokenize_pairs(_pairs(), word_tokenizer), tokenize_pairs(_eval_pairs(), word_tokenizer)
    args = _args(tmp_path, calibrate_threshold=False)
    with pytest.raises(ValueError, match=r"calibrate_threshold=False .* this model has none \(never calibrated\)"):
        SiameseTrainer(
            model=tiny_lstm, args=args, train_dataset=train, eval_dataset=validation, processing_class=word_tokenizer
        )
    SiameseTrainer(model=tiny_lstm, args=args, train_dataset=train, processing_class=word_tokenizer)  # nothing to score


def test_refuses_non_duplicates_in_training(tiny_lstm, word_tokenizer, tmp_path):
    train = tokenize_pairs(_pairs(label=0), word_tokenizer)
    with pytest.raises(ValueError, match="duplicate pairs only"):
        SiameseTrainer(model=tiny_lstm, args=_args(tmp_path), train_dataset=train, processing_class=word_tokenizer)


def test_names_untokenised_datasets(tiny_lstm, word_tokenizer, tmp_path):
    with pytest.raises(ValueError, match="tokenize_pairs"):
        SiameseTrainer(model=tiny_lstm, args=_args(tmp_path), train_dataset=_pairs(), processing_class=word_tokenizer)


@pytest.mark.parametrize(
    "overrides,message",
    [
        (dict(per_device_train_batch_size=1), "at least 2 pairs"),
        (dict(loss="arcface"), "unknown loss"),
        (dict(calibrate_for="auc"), "calibrate_for"),
        (dict(margin=-0.1), "margin"),
    ],
)
def test_bad_arguments(tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        _args(tmp_path, **overrides)


def test_test_sets_are_scored_at_the_validation_threshold(tiny_lstm, word_tokenizer, tmp_path):
    trainer = SiameseTrainer(
        model=tiny_lstm,
        args=_args(tmp_path),
        eval_dataset=tokenize_pairs(_eval_pairs(), word_tokenizer),
        processing_class=word_tokenizer,
    )
    calibrated = trainer.evaluate()["eval_threshold"]
    flipped = _eval_pairs().map(lambda row: {"label": 1 - row["label"]})  # calibrating here would move τ
    test = trainer.evaluate(tokenize_pairs(flipped, word_tokenizer), metric_key_prefix="test")
    assert test["test_threshold"] == pytest.approx(calibrated)
    assert tiny_lstm.config.threshold == pytest.approx(calibrated)


def test_group_by_length_batches(tiny_lstm, word_tokenizer, tmp_path):
    train = tokenize_pairs(_pairs(n_groups=24), word_tokenizer)
    trainer = RecordingTrainer(
        model=tiny_lstm,
        args=_args(tmp_path, train_sampling_strategy="group_by_length", max_steps=4),
        train_dataset=train,
        eval_dataset=tokenize_pairs(_eval_pairs(), word_tokenizer),
        processing_class=word_tokenizer,
    )
    sampler = trainer._get_train_sampler()
    lengths = [len(a) + len(b) for a, b in zip(train["input_ids_a"], train["input_ids_b"])]
    assert sampler._lengths.tolist() == lengths
    trainer.train()
    for groups in trainer.seen_groups:
        assert len(groups) == len(set(groups))
    assert trainer.evaluate()["eval_num_pairs"] == 8


def _labelled_pairs(n_groups=12):
    positives = _pairs(n_groups)
    negatives = _pairs(n_groups, label=0).map(lambda row: {"question2": row["question2"] + " not"})
    return datasets.concatenate_datasets([positives, negatives]).shuffle(seed=0)


def test_labelled_pair_loss_with_classifier_head(word_tokenizer, tmp_path):
    from hfsiamese import SiameseConfig, SiameseModel
    from hfsiamese.losses.verification_identification import VerificationIdentificationLoss

    model = SiameseModel(
        SiameseConfig(vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, classifier_head=True)
    )
    train = tokenize_pairs(_labelled_pairs(), word_tokenizer)
    trainer = SiameseTrainer(
        model=model,
        args=_args(tmp_path),
        train_dataset=train,
        eval_dataset=tokenize_pairs(_eval_pairs(), word_tokenizer),
        processing_class=word_tokenizer,
        loss=VerificationIdentificationLoss(),
    )
    before = model.classifier.layers[0].weight.clone()
    trainer.train()
    assert not torch.equal(before, model.classifier.layers[0].weight)
    metrics = trainer.evaluate()
    assert 0.0 <= metrics["eval_threshold"] <= 1.0  # calibrated on the head's probability


def test_duplicate_loss_refuses_labelled_data_and_vice_versa(tiny_lstm, word_tokenizer, tmp_path):
    with pytest.raises(ValueError, match="duplicate pairs only"):
        SiameseTrainer(
            model=tiny_lstm,
            args=_args(tmp_path),
            train_dataset=tokenize_pairs(_labelled_pairs(), word_tokenizer),
            processing_class=word_tokenizer,
        )
    with pytest.raises(ValueError, match="only label 1"):
        SiameseTrainer(
            model=tiny_lstm,
            args=_args(tmp_path, loss="contrastive"),
            train_dataset=tokenize_pairs(_pairs(), word_tokenizer),
            processing_class=word_tokenizer,
        )


def test_explicit_negatives_reach_the_loss(tiny_lstm, word_tokenizer, tmp_path):
    triplets = _pairs().map(lambda row, i: {"negative": TEXTS[(i + 3) % len(TEXTS)]}, with_indices=True)
    train = tokenize_pairs(triplets, word_tokenizer)
    assert "input_ids_n" in train.column_names
    trainer = SiameseTrainer(
        model=tiny_lstm, args=_args(tmp_path, loss="triplet"), train_dataset=train, processing_class=word_tokenizer
    )
    trainer.train()
    assert trainer.state.global_step == 6


def test_negative_counts_are_logged(tiny_lstm, word_tokenizer, tmp_path):
    train = tokenize_pairs(_pairs(), word_tokenizer)
    trainer = SiameseTrainer(
        model=tiny_lstm,
        args=_args(tmp_path, logging_steps=2, negative_selection="semi_hard"),
        train_dataset=train,
        processing_class=word_tokenizer,
    )
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 3
    for entry in logged:
        candidates = entry["loss_negatives_easy"] + entry["loss_negatives_semi_hard"] + entry["loss_negatives_hard"]
        assert candidates == pytest.approx(4 * 3)  # batch of 4 pairs: 3 in-batch candidates per anchor


def test_a_loss_must_declare_what_it_needs(tiny_lstm, word_tokenizer, tmp_path):
    with pytest.raises(TypeError, match="SiameseLoss"):
        SiameseTrainer(model=tiny_lstm, args=_args(tmp_path), processing_class=word_tokenizer, loss=torch.nn.MSELoss())


def test_batches_come_from_arrow_tables_as_the_collator_pads_rows(tiny_lstm, word_tokenizer, tmp_path):
    """The training loader hands the collator Arrow tables; its batches equal the row-dict collation of the same rows."""
    from hfsiamese.data import ArrowBatchDataset, SiamesePairCollator

    args = _args(tmp_path)
    args.dataloader_pin_memory = True  # as a run without --use_cpu has it
    train = tokenize_pairs(_pairs(), word_tokenizer)
    trainer = SiameseTrainer(model=tiny_lstm, args=args, train_dataset=train, processing_class=word_tokenizer)
    loader = trainer.get_train_dataloader()
    assert isinstance(loader.dataset, ArrowBatchDataset)
    assert (
        not loader.pin_memory and args.dataloader_pin_memory
    )  # nothing to pin for on a CPU; the user's args untouched
    order = list(trainer._get_train_sampler(train))  # the same (seed, epoch 0) order the loader draws
    size = args.per_device_train_batch_size
    sampler_batches = [order[start : start + size] for start in range(0, len(order), size)]
    row_collator = SiamesePairCollator(word_tokenizer)
    batches = list(loader)
    assert len(batches) == len(sampler_batches)
    for batch, rows in zip(batches, sampler_batches, strict=True):
        expected = row_collator([train[i] for i in rows])
        assert batch.keys() == expected.keys()
        for key in expected:
            assert torch.equal(batch[key], expected[key]), key
