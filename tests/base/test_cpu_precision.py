"""`--bf16 auto`: explicit flags win; on a CPU, bf16 only where it computes natively and a measured step is faster."""

import pytest
import torch

from hfsiamese.base import cpu_precision
from hfsiamese.base.cpu_precision import choose_bf16, measured_bf16_speedup, parse_bf16
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments


@pytest.fixture
def cpu(monkeypatch):
    """A CPU whose native bf16 support and measured speed-up the test sets."""

    def set_cpu(native: bool, speedup: float | None = None):
        monkeypatch.setattr(cpu_precision, "native_cpu_bf16", lambda: native)
        measured_bf16_speedup.cache_clear()
        if speedup is None:
            monkeypatch.delenv("HFSIAMESE_BF16_SPEEDUP", raising=False)
        else:
            monkeypatch.setenv("HFSIAMESE_BF16_SPEEDUP", str(speedup))

    yield set_cpu
    measured_bf16_speedup.cache_clear()


@pytest.mark.parametrize(
    ("value", "expected"), [("auto", None), ("true", True), ("False", False), (True, True), ("0", False)]
)
def test_parse(value, expected):
    assert parse_bf16(value) is expected


def test_an_unknown_value_is_one_line():
    with pytest.raises(ValueError, match=r"--bf16 must be one of \('auto', 'true', 'false'\), got 'maybe'"):
        parse_bf16("maybe")


def test_explicit_flags_win_whatever_the_cpu(cpu):
    cpu(native=True, speedup=3.0)
    assert choose_bf16("false", device_type="cpu") == cpu_precision.PrecisionChoice(False, "--bf16 false given")
    cpu(native=False)
    assert choose_bf16("true", device_type="cpu").bf16 is True


def test_a_cpu_without_native_bf16_stays_fp32_without_measuring(cpu, monkeypatch):
    cpu(native=False)
    monkeypatch.setattr(cpu_precision, "measured_bf16_speedup", lambda: pytest.fail("measured on an incapable CPU"))
    choice = choose_bf16("auto", device_type="cpu")
    assert not choice.bf16 and "no native bf16" in choice.reason


@pytest.mark.parametrize(("speedup", "bf16"), [(2.7, True), (1.25, True), (1.1, False), (0.62, False)])
def test_a_capable_cpu_follows_the_measurement(cpu, speedup, bf16):
    cpu(native=True, speedup=speedup)
    choice = choose_bf16("auto", device_type="cpu")
    assert choice.bf16 is bf16 and f"{speedup:.2f}×" in choice.reason


def test_training_arguments_settle_auto_before_the_trainer_checks(cpu, tmp_path):
    cpu(native=True, speedup=2.0)
    args = SiameseTrainingArguments(output_dir=str(tmp_path), bf16="auto", use_cpu=True, report_to="none")
    assert args.bf16 is True and args.mixed_precision == "bf16" and "2.00×" in args.precision_reason
    cpu(native=True, speedup=0.6)
    args = SiameseTrainingArguments(output_dir=str(tmp_path), bf16="auto", use_cpu=True, report_to="none")
    assert args.bf16 is False and args.mixed_precision == "no"
    assert (
        SiameseTrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none").bf16 is False
    )  # library default


@pytest.mark.slow
def test_the_measurement_leaves_the_seeded_generator_alone(cpu):
    cpu(native=True)  # no pinned figure: really measured
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    speedup = measured_bf16_speedup()
    assert speedup > 0 and torch.equal(torch.rand(3), expected)
