"""A NaN/inf training loss stops training with a clear error, or skips the batch: never trains on silently."""

from __future__ import annotations

import datasets
import pytest
import torch
from transformers import TrainerCallback

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.trainer import NonFiniteLossError, SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.data import tokenize_pairs
from hfsiamese.losses import MultipleNegativesRankingLoss, SiameseLossOutput
from tests.conftest import TEXTS

STEPS = 6


class RiggedLoss(MultipleNegativesRankingLoss):
    """The real loss, turned into `value` on the chosen calls (one call per batch)."""

    def __init__(self, bad_calls, value=float("nan")):
        super().__init__()
        self.bad_calls, self.value, self.calls = set(bad_calls), value, 0

    def compute(self, *args, **kwargs):
        self.calls += 1
        output = super().compute(*args, **kwargs)
        return SiameseLossOutput(output.loss * self.value, output.stats) if self.calls in self.bad_calls else output


class WeightsAtEachStep(TrainerCallback):
    def __init__(self):
        self.weights = {}

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.weights[state.global_step] = {k: v.detach().clone() for k, v in model.state_dict().items()}


def _trainer(word_tokenizer, tmp_path, loss, **overrides):
    q1 = [f"{TEXTS[g % len(TEXTS)]} number {g}" for g in range(24)]
    q2 = [f"{TEXTS[(g + 1) % len(TEXTS)]} again {g}" for g in range(24)]
    train = tokenize_pairs(
        datasets.Dataset.from_dict({"question1": q1, "question2": q2, "label": [1] * 24, "group_id": list(range(24))}),
        word_tokenizer,
    )
    torch.manual_seed(0)
    model = SiameseModel(SiameseConfig(vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, pad_token_id=0))
    values = dict(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, max_steps=STEPS, learning_rate=1e-2,
        save_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True, logging_steps=1,
    )  # fmt: skip
    values.update(overrides)
    recorder = WeightsAtEachStep()
    trainer = SiameseTrainer(
        model=model,
        args=SiameseTrainingArguments(**values),
        train_dataset=train,
        processing_class=word_tokenizer,
        loss=loss,
        callbacks=[recorder],
    )
    return trainer, recorder


STEP_KINDS = [pytest.param({}, id="plain"), pytest.param({"gradient_cache_mini_batch_size": 2}, id="gradient_cache")]


@pytest.mark.parametrize("step_kind", STEP_KINDS)
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_raise_names_the_step_and_the_batch(word_tokenizer, tmp_path, step_kind, value):
    trainer, recorder = _trainer(word_tokenizer, tmp_path, RiggedLoss([3], value), **step_kind)
    with pytest.raises(NonFiniteLossError) as error:
        trainer.train()
    message = str(error.value)
    assert f"the training loss is {value} at global step 3" in message
    assert "in a batch of 4 pairs" in message and "group ids [" in message
    assert "pairs '" in message and "' / '" in message and "?" in message  # the first pairs' texts, decoded
    assert "--nan_policy skip" in message
    assert trainer.state.global_step == 2 and sorted(recorder.weights) == [1, 2]
    for tensor in trainer.model.state_dict().values():
        assert torch.isfinite(tensor).all()


@pytest.mark.parametrize("step_kind", STEP_KINDS)
def test_skip_drops_the_batch_and_counts_it(word_tokenizer, tmp_path, step_kind):
    trainer, recorder = _trainer(word_tokenizer, tmp_path, RiggedLoss([3, 5]), nan_policy="skip", **step_kind)
    result = trainer.train()
    assert trainer.state.global_step == STEPS
    assert result.metrics["train_skipped_batches"] == 2
    logged = {
        entry["step"]: entry["skipped_batches"] for entry in trainer.state.log_history if "skipped_batches" in entry
    }
    assert logged == {1: 0, 2: 0, 3: 1, 4: 1, 5: 2, 6: 2}
    # A skipped batch changes nothing (no backward, no optimizer update); the others still train.
    for skipped in (3, 5):
        before, after = recorder.weights[skipped - 1], recorder.weights[skipped]
        assert all(torch.equal(before[k], after[k]) for k in before), f"step {skipped} changed the weights"
    assert any(not torch.equal(recorder.weights[3][k], recorder.weights[4][k]) for k in recorder.weights[3])
    for tensor in trainer.model.state_dict().values():
        assert torch.isfinite(tensor).all()
    assert all(torch.isfinite(torch.tensor(e["loss"])) for e in trainer.state.log_history if "loss" in e)


def test_skip_keeps_the_other_accumulated_batches(word_tokenizer, tmp_path):
    # Two batches per step: the first batch of step 2 is NaN, its second batch still updates.
    trainer, recorder = _trainer(
        word_tokenizer, tmp_path, RiggedLoss([3]), nan_policy="skip", gradient_accumulation_steps=2, max_steps=3
    )
    trainer.train()
    assert trainer.state.global_step == 3
    assert any(not torch.equal(recorder.weights[1][k], recorder.weights[2][k]) for k in recorder.weights[1])
    for tensor in trainer.model.state_dict().values():
        assert torch.isfinite(tensor).all()


def test_finite_losses_train_as_before(word_tokenizer, tmp_path):
    trainer, _ = _trainer(word_tokenizer, tmp_path, RiggedLoss([]))
    trainer.train()
    assert trainer.state.global_step == STEPS
    assert not any("skipped_batches" in entry for entry in trainer.state.log_history)


def test_unknown_policy_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="nan_policy must be 'raise' or 'skip'"):
        SiameseTrainingArguments(output_dir=str(tmp_path), nan_policy="ignore", use_cpu=True)


def test_a_cross_encoder_batch_is_described_by_its_pair_sequences():
    """A cross-encoder's batch holds one sequence a pair (`input_ids`), not two sides: the error still names it."""
    from hfsiamese.base.nonfinite_loss import describe_batch

    class Tokenizer:
        def batch_decode(self, ids, skip_special_tokens=True):
            return [f"q{int(row[0])} [SEP] q{int(row[1])}" for row in ids]

    batch = {"input_ids": torch.tensor([[1, 2], [3, 4], [5, 6]]), "labels": torch.tensor([1.0, 0.0, 1.0])}
    assert describe_batch(batch, Tokenizer()) == "in a batch of 3 pairs (first 2: pairs 'q1 [SEP] q2'; 'q3 [SEP] q4')"
    paired = {"input_ids_a": torch.tensor([[1], [2]]), "input_ids_b": torch.tensor([[3], [4]])}
    assert describe_batch(paired, None) == "in a batch of 2 pairs (first 2: no detail available)"
