"""The trainers adapt their threads between steps (and evaluation batches) unless the user chose; encode follows the run's precision."""

from __future__ import annotations

from typing import ClassVar

import pytest
import torch

from hfsiamese import cpu_policy
from hfsiamese.base.core_sharing_callback import CoreSharingCallback, share_cores_verdict
from hfsiamese.utils import core_sharing
from tests.fixtures import tiny_training_args, trainer_on_tiny_pairs


@pytest.fixture(autouse=True)
def fresh_choice(monkeypatch):
    """A command's process (`apply_command_defaults`: core sharing on unless a run's options say otherwise)."""
    monkeypatch.setattr(core_sharing, "_choice", {})
    monkeypatch.setattr(cpu_policy, "_policy", dict(cpu_policy._policy, share_cores=True))
    monkeypatch.delenv(core_sharing.OPT_OUT, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)


class Recording:
    made: ClassVar[list[Recording]] = []

    def __init__(self):
        self.updates, self.restored, self.changes = 0, False, []
        Recording.made.append(self)

    def update(self):
        self.updates += 1
        return 1

    def restore(self):
        self.restored = True


@pytest.mark.parametrize(
    ("overrides", "env", "on", "reason"),
    [
        ({}, {}, True, "fewer threads while other processes use this run's cores"),
        ({"share_cores": False}, {}, False, "--share_cores false"),
        ({"num_threads": 1}, {}, False, "thread count chosen by the user"),
        ({}, {"OMP_NUM_THREADS": "2"}, False, "thread count chosen by the user"),
        ({"full_determinism": True}, {}, False, "full_determinism (a float reduction depends on the thread count)"),
        ({}, {core_sharing.OPT_OUT: "0"}, False, "HFSIAMESE_SHARE_CORES=0 or no /proc/stat"),
    ],
)
def test_who_turns_it_on(tmp_path, monkeypatch, overrides, env, on, reason):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert share_cores_verdict(tiny_training_args(tmp_path, **overrides)) == (on, reason)


def test_a_library_run_keeps_its_threads_unless_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_policy, "_policy", dict(cpu_policy._policy, share_cores=False))
    on, reason = share_cores_verdict(tiny_training_args(tmp_path))
    assert not on and "set_cpu_policy(share_cores=True)" in reason
    assert share_cores_verdict(tiny_training_args(tmp_path, share_cores=True))[0]


def test_a_previous_runs_verdict_does_not_decide_the_next(tmp_path):
    core_sharing.configure(False, "--share_cores false")  # an earlier run in this process
    assert share_cores_verdict(tiny_training_args(tmp_path)) == (
        True,
        "fewer threads while other processes use this run's cores",
    )


def test_the_trainer_updates_every_step_and_evaluation_batch_and_restores(
    tiny_lstm, word_tokenizer, tmp_path, monkeypatch
):
    monkeypatch.setattr(core_sharing, "CoreSharing", Recording)
    Recording.made.clear()
    trainer = trainer_on_tiny_pairs(
        tiny_lstm, word_tokenizer, tiny_training_args(tmp_path, eval_strategy="steps", eval_steps=3)
    )
    assert any(isinstance(callback, CoreSharingCallback) for callback in trainer.callback_handler.callbacks)
    trainer.train()
    (sharing,) = Recording.made
    # 6 steps, and 2 evaluations of 2 batches of the 8 validation pairs each.
    assert sharing.updates == 6 + 2 * 2 and sharing.restored
    assert not core_sharing.enabled()  # the run's verdict held for its own evaluation; the process's policy is back


def test_off_makes_none_and_says_so_to_encode(tiny_lstm, word_tokenizer, tmp_path, monkeypatch):
    monkeypatch.setattr(core_sharing, "CoreSharing", Recording)
    Recording.made.clear()
    trainer_on_tiny_pairs(tiny_lstm, word_tokenizer, tiny_training_args(tmp_path, share_cores=False)).train()
    assert Recording.made == [] and not core_sharing.enabled()


def test_encode_in_a_training_run_uses_the_runs_precision(tiny_transformer, word_tokenizer, tmp_path):
    """A transformer: its bf16 runs on every x86 CPU (an LSTM's is refused below AVX-512, test_cpu_features.py)."""
    trainer_on_tiny_pairs(tiny_transformer, word_tokenizer, tiny_training_args(tmp_path, bf16="true"))
    choice = tiny_transformer.encode_precision()
    assert choice.dtype == torch.bfloat16 and choice.reason == "the training run's precision (--bf16 true given)"
    trainer_on_tiny_pairs(tiny_transformer, word_tokenizer, tiny_training_args(tmp_path, bf16="false"))
    assert tiny_transformer.encode_precision().dtype is None
