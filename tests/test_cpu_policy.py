"""`hfsiamese.cpu_policy`: a library import or call leaves the process alone; the commands apply their measured defaults."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from hfsiamese import cpu_policy
from hfsiamese.utils import core_sharing, encode_precision, openmp_defaults
from tests.conftest import REPO_ROOT, TEXTS


@pytest.fixture
def library_policy(monkeypatch):
    """The process as a library user has it, restored after the test."""
    monkeypatch.setattr(cpu_policy, "_policy", dict(cpu_policy._policy, share_cores=False, encode_dtype=None))
    monkeypatch.setattr(core_sharing, "_choice", {})
    monkeypatch.setattr(encode_precision, "_process_default", {"dtype": None})
    monkeypatch.setattr(encode_precision, "_memory", {"remember": None})


def _child(code: str) -> dict:
    env = {
        k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", openmp_defaults.OPT_OUT)
    }
    env["PYTHONPATH"] = str(REPO_ROOT)
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, cwd=REPO_ROOT
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_import_leaves_the_environment_and_threads_alone():
    # transformers' own pipelines import makes torch's inductor set TORCHINDUCTOR_CACHE_DIR: measured after it.
    seen = _child(
        "import json, os, torch, transformers.pipelines; env = dict(os.environ); threads = torch.get_num_threads(); "
        "import hfsiamese, hfsiamese.utils.openmp_defaults as o; "
        "print(json.dumps({'env_changed': sorted(k for k in set(env) | set(os.environ) if env.get(k) != os.environ.get(k)), "
        "'threads': [threads, torch.get_num_threads()], 'openmp': o.describe()}))"
    )
    assert seen["env_changed"] == [] and seen["threads"][0] == seen["threads"][1]
    bare = _child("import json, os; import hfsiamese; print(json.dumps({'spin': os.environ.get('GOMP_SPINCOUNT')}))")
    assert bare == {"spin": None}  # torch not loaded before: still no spin for a library import


@pytest.mark.slow
def test_a_command_or_an_explicit_opt_in_gets_the_spin_before_torch_loads():
    recipe = str(REPO_ROOT / "recipes" / "evaluate_pairs.py")
    as_command = _child(
        f"import json, os, sys; sys.argv = [{recipe!r}]; import hfsiamese, hfsiamese.utils.openmp_defaults as o; "
        "print(json.dumps({'spin': os.environ.get('GOMP_SPINCOUNT'), 'openmp': o.describe()}))"
    )
    assert as_command["spin"] == str(openmp_defaults.SPIN_COUNT)
    opted_in = _child(
        f"import json, os; os.environ[{openmp_defaults.OPT_OUT!r}] = '1'; import hfsiamese; "
        "print(json.dumps({'spin': os.environ.get('GOMP_SPINCOUNT')}))"
    )
    assert opted_in["spin"] == str(openmp_defaults.SPIN_COUNT)


@pytest.mark.parametrize(
    ("argv", "orig_argv", "program"),
    [
        ([str(REPO_ROOT / "recipes" / "train.py")], None, "recipes/train.py"),
        (
            [str(REPO_ROOT / "benchmarks" / "training" / "shared_machine.py")],
            None,
            "benchmarks/training/shared_machine.py",
        ),
        (["-m"], ["python", "-m", "hfsiamese.cli.train", "--help"], "-m hfsiamese.cli.train"),
        (["/venv/bin/hfsiamese", "train"], ["python", "/venv/bin/hfsiamese", "train"], "hfsiamese"),
        (["-c"], ["python", "-c", "import hfsiamese"], None),
        (["/home/me/recipes/train.py"], ["python", "/home/me/recipes/train.py"], None),  # not this package's recipes
        (["-m"], ["python", "-m", "hfsiamese_extras.cli"], None),
        (["-m"], ["python", "-m", "pytest"], None),
        (["-m"], ["python", "-X", "dev", "-um", "hfsiamese.cli"], "-m hfsiamese.cli"),
        (
            [str(REPO_ROOT / "recipes" / "search.py"), "-m", "x"],
            ["python", "-u", str(REPO_ROOT / "recipes" / "search.py"), "-m", "x"],
            "recipes/search.py",
        ),
    ],
)
def test_which_program_is_a_command(argv, orig_argv, program):
    assert cpu_policy.command_program(argv, orig_argv if orig_argv is not None else ["python", *argv]) == program


def test_encode_by_default_neither_probes_nor_changes_threads(library_policy, monkeypatch, tiny_lstm, word_tokenizer):
    monkeypatch.setattr(core_sharing, "available", lambda: True)
    monkeypatch.setattr(
        encode_precision, "choose_encode_precision", lambda *a, **k: pytest.fail("probed without dtype=auto")
    )
    monkeypatch.setattr(torch, "set_num_threads", lambda n: pytest.fail("encode changed torch's thread count"))
    monkeypatch.setattr(core_sharing, "CoreSharing", lambda *a, **k: pytest.fail("encode shared cores by default"))
    embeddings = tiny_lstm.encode(TEXTS, word_tokenizer)
    assert embeddings.dtype == torch.float32 and tiny_lstm.resolve_encode_dtype() is None


def test_auto_given_or_opted_into_probes_and_shares_cores(library_policy, monkeypatch, tiny_lstm, word_tokenizer):
    probes = []
    monkeypatch.setattr(
        encode_precision, "choose_encode_precision",
        lambda *a, **k: probes.append(1) or encode_precision.EncodePrecision(None, "fp32: as measured here"),
    )  # fmt: skip
    tiny_lstm.encode(TEXTS, word_tokenizer, dtype="auto")
    assert probes == [1]
    made = []

    class Recording(core_sharing.CoreSharing):
        def __init__(self, *args, **kwargs):
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(core_sharing, "CoreSharing", Recording)
    monkeypatch.setattr(core_sharing, "available", lambda: True)
    monkeypatch.setattr("hfsiamese.utils.cpu_threads.threads_set_by_user", lambda: False)
    policy = cpu_policy.set_cpu_policy(share_cores=True, encode_dtype="auto")
    assert policy["share_cores"] is True and policy["encode_dtype"] == "auto"
    tiny_lstm.__dict__.pop("_encode_precisions", None)
    tiny_lstm.encode(TEXTS, word_tokenizer)  # no dtype: the process's default is now "auto"
    assert probes == [1, 1] and made == [1]
    cpu_policy.set_cpu_policy(share_cores=False, encode_dtype=None)
    tiny_lstm.encode(TEXTS, word_tokenizer)
    assert probes == [1, 1] and made == [1]


def test_apply_command_defaults_turns_the_measured_defaults_on(library_policy, monkeypatch):
    monkeypatch.setattr("hfsiamese.utils.cpu_threads.threads_set_by_user", lambda: False)
    monkeypatch.setattr(core_sharing, "available", lambda: True)
    policy = cpu_policy.apply_command_defaults()
    assert policy["share_cores"] is True and policy["encode_dtype"] == "auto"
    assert core_sharing.enabled() and encode_precision.default_dtype() == "auto"
    assert encode_precision._memory["remember"] is not None and policy["remember_speedups"]
    assert "OpenMP" in policy["openmp"] or "GOMP_SPINCOUNT" in policy["openmp"]


def test_a_thread_count_the_user_chose_stays_theirs(library_policy, monkeypatch):
    monkeypatch.setattr("hfsiamese.utils.cpu_threads.threads_set_by_user", lambda: True)
    monkeypatch.setattr(core_sharing, "available", lambda: True)
    cpu_policy.set_cpu_policy(share_cores=True)
    assert not core_sharing.enabled()


@pytest.mark.parametrize("bad", [("share_cores", "yes"), ("encode_dtype", "bf16")])
def test_bad_values_are_refused_in_one_line(library_policy, bad):
    name, value = bad
    with pytest.raises((TypeError, ValueError), match=name):
        cpu_policy.set_cpu_policy(**{name: value})
