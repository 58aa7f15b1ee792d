"""encode(dtype="auto"): bf16 only on a CPU with native bf16 where the model measures faster and agrees; explicit types win.

The tests that pretend the CPU has native bf16 and then run bf16 use `tiny_transformer`, whose bf16 path runs on
every x86 CPU; an LSTM's does not below AVX-512 (tests/utils/test_cpu_features.py holds that refusal)."""

from __future__ import annotations

import pytest
import torch

from hfsiamese.utils import encode_precision
from hfsiamese.utils.encode_precision import EncodePrecision, choose_encode_precision, probe_batch

TEXTS = ["how do i learn python", "what is the capital of france", "is this a duplicate question"] * 4


@pytest.fixture
def cpu(monkeypatch):
    """A CPU whose native bf16 and measured speed-up the test sets (None: really measured)."""

    def set_cpu(native: bool, speedup: float | None = None):
        monkeypatch.setattr(encode_precision, "native_cpu_bf16", lambda: native)
        if speedup is None:
            monkeypatch.delenv(encode_precision.PINNED_SPEEDUP, raising=False)
        else:
            monkeypatch.setenv(encode_precision.PINNED_SPEEDUP, str(speedup))

    return set_cpu


def recording(model, monkeypatch) -> list[bool]:
    """Whether each embedded batch ran under CPU autocast."""
    seen, embed = [], model._embed_batch

    def spy(features):
        seen.append(torch.is_autocast_enabled("cpu"))
        return embed(features)

    monkeypatch.setattr(model, "_embed_batch", spy)
    return seen


def test_a_cpu_without_native_bf16_is_fp32_without_measuring(cpu, tiny_lstm, monkeypatch):
    cpu(native=False)
    monkeypatch.setattr(encode_precision, "_measured_speedup", lambda *a: pytest.fail("measured on an incapable CPU"))
    choice = tiny_lstm.encode_precision()
    assert choice == EncodePrecision(None, "fp32: this CPU has no native bf16 (neither AVX512-BF16 nor AMX)")


@pytest.mark.parametrize(("speedup", "bf16"), [(2.0, True), (1.25, True), (1.1, False), (0.6, False)])
def test_a_capable_cpu_follows_the_measurement(cpu, tiny_transformer, word_tokenizer, monkeypatch, speedup, bf16):
    cpu(native=True, speedup=speedup)
    choice = tiny_transformer.encode_precision()
    assert (choice.dtype == torch.bfloat16) is bf16 and f"{speedup:.2f}×" in choice.reason
    seen = recording(tiny_transformer, monkeypatch)
    tiny_transformer.encode(TEXTS, word_tokenizer, batch_size=5, dtype="auto")
    assert seen == [bf16] * 3


def test_explicit_types_win_and_a_bad_one_is_one_line(cpu, tiny_transformer, word_tokenizer, monkeypatch):
    cpu(native=True, speedup=2.0)
    seen = recording(tiny_transformer, monkeypatch)
    tiny_transformer.encode(TEXTS, word_tokenizer, dtype=torch.float32)
    tiny_transformer.encode(TEXTS, word_tokenizer)  # no dtype: float32, the library default (measured only when asked)
    assert seen == [False, False]
    cpu(native=False)
    tiny_transformer.encode(TEXTS, word_tokenizer, dtype=torch.bfloat16)
    assert seen[-1] is True
    with pytest.raises(ValueError, match=r"dtype must be 'auto', a torch.dtype .* got 'bf16'"):
        tiny_transformer.encode(TEXTS, word_tokenizer, dtype="bf16")


def test_decided_once_per_model_and_device(cpu, tiny_transformer, word_tokenizer, monkeypatch):
    cpu(native=True)
    calls = []
    monkeypatch.setattr(encode_precision, "_measured_speedup", lambda *a: calls.append(1) or 3.0)
    tiny_transformer.encode(TEXTS, word_tokenizer, dtype="auto")
    tiny_transformer.encode(TEXTS[:1], word_tokenizer, dtype="auto")
    assert len(calls) == 1 and tiny_transformer.encode_precision().dtype == torch.bfloat16


def test_embeddings_that_disagree_in_bf16_stay_fp32(cpu):
    cpu(native=True, speedup=3.0)

    def embed(features):  # a model whose bf16 result points elsewhere
        rows = features["input_ids"].shape[0]
        return torch.eye(rows, 4) if not torch.is_autocast_enabled("cpu") else torch.ones(rows, 4)

    choice = choose_encode_precision(embed, probe_batch(50, torch.device("cpu")), torch.device("cpu"))
    assert choice.dtype is None and "agree only to cosine" in choice.reason


def test_the_real_measurement_on_this_machine(cpu, tiny_transformer):
    cpu(native=True)  # nothing pinned: timed for real, on the model itself
    torch.manual_seed(5)
    state = torch.random.get_rng_state()
    choice = tiny_transformer.encode_precision()
    assert "measured" in choice.reason and "× as fast" in choice.reason
    assert torch.equal(torch.random.get_rng_state(), state)  # the probe does not move the caller's generator


def test_weights_already_in_bf16_need_no_autocast(cpu, tiny_lstm):
    cpu(native=True, speedup=3.0)
    choice = tiny_lstm.to(torch.bfloat16).encode_precision()
    assert choice.dtype is None and "weights are torch.bfloat16" in choice.reason


def test_a_fixed_precision_wins_over_measuring(cpu, tiny_lstm, word_tokenizer, monkeypatch):
    cpu(native=True, speedup=3.0)
    tiny_lstm.set_encode_precision(None, "the training run's precision")
    seen = recording(tiny_lstm, monkeypatch)
    tiny_lstm.encode(TEXTS, word_tokenizer)
    assert seen == [False] and tiny_lstm.encode_precision().reason == "the training run's precision"


def test_probe_batch_avoids_the_pad_id_and_stays_in_the_vocabulary():
    batch = probe_batch(12, torch.device("cpu"), pad_id=0)
    assert (
        batch["input_ids"].shape == (16, 32)
        and int(batch["input_ids"].min()) >= 1
        and int(batch["input_ids"].max()) < 12
    )
    assert torch.equal(batch["input_ids"], probe_batch(12, torch.device("cpu"))["input_ids"])  # same every time
