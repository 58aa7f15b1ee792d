"""Shared fixtures: tiny models and tokenizers, offline; every process a test starts ends with it."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Nothing a test starts reports usage over the network (Gradio's analytics, a local Ray's usage stats).
os.environ.update(GRADIO_ANALYTICS_ENABLED="False", RAY_USAGE_STATS_ENABLED="0")
# What the machine would otherwise decide is pinned, so a result cannot depend on the CPU or its load: bf16 is
# never measured faster (an AMX Xeon's timing probe flips between fp32 and bf16 from run to run, and a bf16
# embedding is 1e-3 from an fp32 one), and runs never change their thread count with the machine's load. These
# override the caller's environment (the suite passes with `HFSIAMESE_BF16_SPEEDUP=5` set outside it); the tests
# of those features unpin them (`unpin_machine_decisions` below). Recipe subprocesses inherit the pins.
MACHINE_PINS = {"HFSIAMESE_BF16_SPEEDUP": "1.0", "HFSIAMESE_SHARE_CORES": "0"}
os.environ.update(MACHINE_PINS)
# Under pytest-xdist (`-n 2` in pyproject.toml's addopts) each worker is one of several test processes: with torch's
# default of every core in each, the workers would oversubscribe the machine. Each takes its share of the cores,
# set before torch is imported (the processes a test starts inherit it); a thread count the caller set wins. The
# suite passes under any count (the commands' own defaults are tested with the variable removed).
if workers := os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    cores_each = str(max(1, cores // int(workers)))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, cores_each)

import uuid  # noqa: E402
from pathlib import Path  # noqa: E402

import psutil  # noqa: E402  (installed with accelerate)
import pytest  # noqa: E402
import torch  # noqa: E402

# deepspeed (in the test extra) logs its accelerator detection to stdout on a machine without a GPU, which would
# mix into the JSON the commands print there; the suite names the accelerator instead, as a CPU fleet would. Not on a
# GPU machine: there deepspeed must find CUDA (named "cpu", tests/test_on_cuda.py's ZeRO-2 run failed at its start).
if not torch.cuda.is_available():
    os.environ.setdefault("DS_ACCELERATOR", "cpu")

from hfsiamese import SiameseConfig, SiameseModel  # noqa: E402
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer  # noqa: E402

# Skips are counted (a reason off its allow-list fails the session); the `runs_first` tests are collected first
# (tests/plugins/run_order.py); what the docs and README runs ran is a section of the summary (tests/plugins/run_notes.py);
# pytester runs the suite's own guards (tests/test_suite_guards.py) in inner sessions.
pytest_plugins = ["tests.plugins.skip_allowlist", "tests.plugins.run_order", "tests.plugins.run_notes", "pytester"]

REPO_ROOT = Path(__file__).resolve().parents[1]
QQP_FILE = REPO_ROOT / "recipes" / "data" / "qqp_dev.tsv"

TEXTS = [
    "how do i learn python ?",
    "what is the best way to learn python ?",
    "how can i lose weight fast ?",
    "what is the fastest way to lose weight ?",
    "why is the sky blue ?",
    "what makes the sky look blue ?",
    "how do i cook rice ?",
    "what is the capital of france ?",
]


@pytest.fixture
def unpin_machine_decisions(monkeypatch):
    """For the tests of bf16 measurement and core sharing themselves: the machine decides, as for a user."""
    for name in MACHINE_PINS:
        monkeypatch.delenv(name, raising=False)


def _cpu_policy_state() -> dict:
    """Where the process's CPU policy lives (module attribute -> its dict), as copies."""
    from hfsiamese import cpu_policy
    from hfsiamese.utils import core_sharing, encode_precision

    holders = [(cpu_policy, "_policy"), (core_sharing, "_choice"), (encode_precision, "_process_default"),
               (encode_precision, "_memory")]  # fmt: skip
    return {(module, name): dict(getattr(module, name)) for module, name in holders}


@pytest.fixture(scope="session")
def session_cpu_policy() -> dict:
    """The CPU policy the session started with (a library process's: nothing applied)."""
    return _cpu_policy_state()


@pytest.fixture(autouse=True)
def restore_cpu_policy(monkeypatch, session_cpu_policy):
    """
    A test or module fixture that runs a command's `main` in this process (`hfsiamese.cli.main.main([...])`) applies
    the commands' CPU policy to the process; each test starts from the policy the session started with and leaves
    the process so, whatever ran before it.
    """
    for (module, name), state in session_cpu_policy.items():
        monkeypatch.setattr(module, name, dict(state))


@pytest.fixture(scope="session")
def word_tokenizer():
    return train_word_tokenizer(TEXTS, vocab_size=100, model_max_length=16)


@pytest.fixture
def tiny_lstm(word_tokenizer):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, pad_token_id=0
    )
    return SiameseModel(config)


def tiny_bert_config(vocab_size: int, *, layers: int, positions: int, hidden: int = 16):
    """A BERT of `hidden` (16) dimensions and 2 heads: the tests' transformer encoder."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=positions,
        pad_token_id=0,
    )


@pytest.fixture
def tiny_transformer(word_tokenizer):
    """A tiny random BERT Siamese model: its bf16 path (matrix products) runs on every x86 CPU, emulated below
    AVX512-BF16, so a test that pretends the CPU has native bf16 can run it for real (an LSTM's cannot, below
    AVX-512: `hfsiamese.utils.cpu_features`)."""
    torch.manual_seed(0)
    bert = tiny_bert_config(len(word_tokenizer), layers=1, positions=64)
    return SiameseModel(SiameseConfig(encoder_type="transformer", encoder_config=bert.to_dict()))


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory, word_tokenizer):
    """A randomly initialised 2-layer BERT saved as a local "pretrained" checkpoint, with a tokenizer."""
    from transformers import BertModel

    torch.manual_seed(0)
    config = tiny_bert_config(len(word_tokenizer), layers=2, positions=32)
    path = tmp_path_factory.mktemp("tiny_bert")
    BertModel(config).save_pretrained(path)
    word_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_cross_encoder_dir(tmp_path_factory):
    """
    A randomly initialised 2-layer BERT with a one-logit head, saved as a cross-encoder folder, with all-MiniLM-L6-v2's
    tokenizer (a cross-encoder needs a tokenizer that joins two texts with [SEP] and segment ids).
    """
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from hfsiamese.cross_encoder.model import CrossEncoder
    from hfsiamese.utils.minilm import resolve_minilm_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_minilm_path())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
        architectures=["BertForSequenceClassification"],
    )
    path = tmp_path_factory.mktemp("tiny_cross_encoder")
    CrossEncoder(BertForSequenceClassification(config), tokenizer, pair_order="both").save_pretrained(path)
    return path


@pytest.fixture
def tiny_cross_encoder(tiny_cross_encoder_dir):
    """The tiny cross-encoder, loaded afresh for each test (tests may calibrate or train it)."""
    from hfsiamese.cross_encoder.model import CrossEncoder

    return CrossEncoder.from_pretrained(tiny_cross_encoder_dir)


# Each test (and each test module, for processes its module fixtures start) marks the processes it starts
# through the environment they inherit; a marked process still alive at the end is killed and fails the
# test. The environment, not the process tree: a worker whose launcher was killed is re-parented to init
# and is no one's child any more (a resume test once left such a worker running 10 minutes after pytest).
REAP_VARIABLES = {"module": "HFSIAMESE_TEST_MODULE", "function": "HFSIAMESE_TEST_FUNCTION"}


def _marked_processes(variable: str, marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        if process.pid == os.getpid():
            continue
        try:
            if process.environ().get(variable) == marker:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _reap(scope: str, name: str, grace: float = 10.0):
    variable, marker = REAP_VARIABLES[scope], uuid.uuid4().hex
    os.environ[variable] = marker
    yield
    os.environ.pop(variable, None)
    survivors = _marked_processes(variable, marker)
    if not survivors:
        return
    _, alive = psutil.wait_procs(survivors, timeout=grace)  # a process on its way out
    described = []
    for process in alive:
        try:
            described.append(f"pid {process.pid}: {' '.join(process.cmdline())[:200]}")
            process.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(alive, timeout=10)
    if described:
        pytest.fail(f"{name} left {len(described)} process(es) running (now killed): {'; '.join(described)}")


@pytest.fixture(autouse=True, scope="module")
def reap_module_processes(request):
    yield from _reap("module", request.module.__name__)


@pytest.fixture(autouse=True)
def reap_test_processes(request):
    yield from _reap("function", request.node.nodeid)
