import datasets
import pytest

from hfsiamese.bi_encoder.multi_dataset import DATASET_INDEX
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.data import tokenize_pairs
from hfsiamese.data.sampler import NoDuplicateGroupSampler
from hfsiamese.losses import get_loss
from tests.conftest import TEXTS
from tests.fixtures import (
    tiny_eval_pairs as _eval_pairs,
    tiny_pairs as _pairs,
    tiny_training_args as _args,
    trainer_on_tiny_pairs,
)


def _labelled_pairs(n: int = 16) -> datasets.Dataset:
    """Labelled pairs, duplicates and not, each its own group."""
    return datasets.Dataset.from_dict(
        {
            "question1": [f"{TEXTS[i % 8]} {i}" for i in range(n)],
            "question2": [f"{TEXTS[(i + 1) % 8]} {i}" for i in range(n)],
            "label": [i % 2 for i in range(n)],
            "group_id": list(range(n)),
        }
    )


class RecordingTrainer(SiameseTrainer):
    """Records, in order, each training batch's data set and group ids, and each loss called."""

    def __init__(self, *args, **kwargs):
        self.events = []
        super().__init__(*args, **kwargs)
        for name, loss in (self.named_losses.by_name if self.named_losses else {}).items():
            loss.compute = self._recording(name, loss.compute)

    def _recording(self, name, compute):
        def recorded(*args, **kwargs):
            self.events.append(("loss", name))
            return compute(*args, **kwargs)

        return recorded

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        self.events.append(("batch", set(inputs[DATASET_INDEX].tolist()), inputs["group_ids"].tolist()))
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

    def batches(self):
        return [event for event in self.events if event[0] == "batch"]


def _trainer(tokenizer, model, tmp_path, *, loss=None, trainer_class=RecordingTrainer, **options):
    train = {
        "duplicates": tokenize_pairs(_pairs(), tokenizer),
        "labelled": tokenize_pairs(_labelled_pairs(), tokenizer),
    }
    if loss is None:
        loss = {"duplicates": get_loss("multiple_negatives_ranking"), "labelled": get_loss("contrastive")}
    weights = options.pop("dataset_weights", None)
    evaluation = options.pop("eval_dataset", None)
    return trainer_class(
        model=model,
        args=_args(tmp_path, **options),
        train_dataset=train,
        eval_dataset=evaluation,
        processing_class=tokenizer,
        loss=loss,
        dataset_weights=weights,
    )


def test_each_batch_goes_to_its_data_sets_loss(tiny_lstm, word_tokenizer, tmp_path):
    trainer = _trainer(word_tokenizer, tiny_lstm, tmp_path, max_steps=8)
    trainer.train()
    names = ["duplicates", "labelled"]
    batches = trainer.batches()
    assert len(batches) == 8
    for event, called in zip(trainer.events[0::2], trainer.events[1::2], strict=True):
        assert event[0] == "batch" and called[0] == "loss"
        (index,) = event[1]  # one data set per batch
        assert called[1] == names[index]
        assert len(set(event[2])) == len(event[2])  # group-aware inside the data set
    assert {next(iter(event[1])) for event in batches} == {0, 1}


def test_round_robin_alternates_the_data_sets(tiny_lstm, word_tokenizer, tmp_path):
    trainer = _trainer(word_tokenizer, tiny_lstm, tmp_path, max_steps=6, multi_dataset_sampling="round_robin")
    trainer.train()
    assert [next(iter(event[1])) for event in trainer.batches()] == [0, 1, 0, 1, 0, 1]


@pytest.mark.parametrize(
    "options", [dict(train_sampling_strategy="group_by_length"), dict(no_duplicate_batches=False)], ids=str
)
def test_length_grouped_or_plain_batches_keep_to_one_data_set(tiny_lstm, word_tokenizer, tmp_path, options):
    trainer = _trainer(word_tokenizer, tiny_lstm, tmp_path, max_steps=6, **options)
    trainer.train()
    assert all(len(event[1]) == 1 for event in trainer.batches())
    assert len(trainer.batches()) == 6


def test_gradient_cache_steps_use_each_data_sets_loss(tiny_lstm, word_tokenizer, tmp_path):
    trainer = _trainer(
        word_tokenizer, tiny_lstm, tmp_path, max_steps=4, multi_dataset_sampling="round_robin",
        gradient_cache_mini_batch_size=2,
    )  # fmt: skip
    trainer.train()
    called = [event[1] for event in trainer.events if event[0] == "loss"]
    steps = [name for k, name in enumerate(called) if k == 0 or called[k - 1] != name]  # one entry per step
    assert steps == ["duplicates", "labelled", "duplicates", "labelled"]


def test_the_arguments_loss_serves_every_data_set(tiny_lstm, word_tokenizer, tmp_path):
    train = {"a": tokenize_pairs(_pairs(), word_tokenizer), "b": tokenize_pairs(_pairs(6), word_tokenizer)}
    trainer = SiameseTrainer(
        model=tiny_lstm, args=_args(tmp_path, max_steps=2), train_dataset=train, processing_class=word_tokenizer
    )
    first, second = trainer.named_losses.losses
    assert first is second and first is trainer.loss_fn
    trainer.train()


def test_per_data_set_evaluation_and_overall(tiny_lstm, word_tokenizer, tmp_path):
    evaluation = {
        "first": tokenize_pairs(_eval_pairs(), word_tokenizer),
        "second": tokenize_pairs(_labelled_pairs(6), word_tokenizer),
    }
    trainer = _trainer(word_tokenizer, tiny_lstm, tmp_path, max_steps=2, eval_dataset=evaluation)
    trainer.train()
    metrics = trainer.evaluate()
    assert metrics["eval_num_pairs"] == 14  # all pairs together, which calibrate the threshold
    assert metrics["eval_first_num_pairs"] == 8 and metrics["eval_second_num_pairs"] == 6
    for name in ("first", "second"):
        assert f"eval_{name}_average_precision" in metrics
        assert metrics[f"eval_{name}_threshold"] == pytest.approx(metrics["eval_threshold"])
    assert tiny_lstm.config.threshold == pytest.approx(metrics["eval_threshold"])
    test = trainer.evaluate(evaluation, metric_key_prefix="test")
    assert test["test_threshold"] == pytest.approx(metrics["eval_threshold"]) and "test_second_roc_auc" in test


def test_model_card_lists_the_data_sets(tiny_lstm, word_tokenizer, tmp_path):
    trainer = _trainer(
        word_tokenizer, tiny_lstm, tmp_path, max_steps=2, dataset_weights={"duplicates": 2, "labelled": 1}
    )
    trainer.train()
    trainer.create_model_card()
    card = (tmp_path / "out" / "README.md").read_text()
    assert "proportional sampling" in card
    assert "- duplicates: 24 training rows, loss `multiple_negatives_ranking`, weight 2\n" in card
    assert "- labelled: 16 training rows, loss `contrastive`, weight 1\n" in card
    assert "multi_dataset_sampling: proportional" in card  # read back by `hfsiamese train`


def test_one_data_set_keeps_its_sampler(tiny_lstm, word_tokenizer, tmp_path):
    trainer = trainer_on_tiny_pairs(tiny_lstm, word_tokenizer, _args(tmp_path))
    assert trainer.named_losses is None
    assert type(trainer._get_train_sampler()) is NoDuplicateGroupSampler


@pytest.mark.parametrize(
    "options,message",
    [
        (
            dict(loss={"duplicates": get_loss("multiple_negatives_ranking")}),
            "no loss for the training data set 'labelled'",
        ),
        (
            dict(
                loss={
                    "duplicates": get_loss("contrastive"),
                    "labelled": get_loss("contrastive"),
                    "x": get_loss("contrastive"),
                }
            ),
            "names 'x', which is no training data set",
        ),
        (dict(dataset_weights={"duplicates": 1, "labelled": 0}), "positive numbers, got 0 for 'labelled'"),
        (dict(dataset_weights={"duplicates": 1}), "no weight for 'labelled'"),
        (dict(dataset_weights={"duplicates": 1, "labelled": 1}, multi_dataset_sampling="round_robin"), "proportional"),
        (dict(loss=get_loss("multiple_negatives_ranking")), "duplicate pairs only"),  # the labelled set's 0 labels
        (dict(remove_unused_columns=True), "remove_unused_columns=False"),
        (dict(loss={}), "no loss for the training data set 'duplicates'"),
    ],
)
def test_refusals(tiny_lstm, word_tokenizer, tmp_path, options, message):
    with pytest.raises(ValueError, match=message):
        _trainer(word_tokenizer, tiny_lstm, tmp_path, trainer_class=SiameseTrainer, **options)


def test_refuses_a_loss_dict_or_weights_for_one_data_set(tiny_lstm, word_tokenizer, tmp_path):
    train = tokenize_pairs(_pairs(), word_tokenizer)
    for options in (dict(loss={"a": get_loss("contrastive")}), dict(dataset_weights={"a": 1.0})):
        with pytest.raises(ValueError, match="several training data sets"):
            SiameseTrainer(
                model=tiny_lstm, args=_args(tmp_path), train_dataset=train, processing_class=word_tokenizer, **options
            )


def test_refuses_an_unknown_sampling(tmp_path):
    with pytest.raises(ValueError, match="multi_dataset_sampling"):
        _args(tmp_path, multi_dataset_sampling="shuffled")
