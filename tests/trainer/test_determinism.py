"""Same seed, same data, same recipe: the same weights and metrics on CPU, whichever launcher runs it.

CPU float results depend on the number of threads (it splits reductions), and `accelerate launch`
sets OMP_NUM_THREADS (1 per process unless told otherwise) where `python` uses every core: that,
not the launcher, is why the two gave slightly different metrics. With equal thread counts they agree
bit for bit. The recipe logs the count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from safetensors.torch import load_file

from tests.conftest import REPO_ROOT

TRAIN = REPO_ROOT / "recipes" / "train.py"
FLAGS = dict(
    embedding_dim=16,
    hidden_size=16,
    vocab_size=2000,
    max_length=32,
    max_train_pairs=300,
    max_eval_pairs=100,
    per_device_train_batch_size=16,
    num_train_epochs=1,
    warmup_steps=2,
    eval_strategy="no",
    save_strategy="no",
    disable_tqdm=True,
)  # dropout stays on (0.2 in the default config): its masks must be reproducible too
RUN_DEPENDENT = ("_runtime", "_per_second")


def run(launcher, output_dir, cwd):
    env = dict(
        os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1"
    )
    flags = [f"--{k}={v}" for k, v in FLAGS.items()] + ["--output_dir", str(output_dir)]
    result = subprocess.run([*launcher, str(TRAIN), *flags], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "seed 42, 1 CPU threads per process" in result.stderr
    metrics = json.loads((output_dir / "all_results.json").read_text())
    return load_file(output_dir / "model.safetensors"), {k: v for k, v in metrics.items() if not k.endswith(RUN_DEPENDENT)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("determinism")
    python = [sys.executable]
    accelerate = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
                  "--mixed_precision", "no", "--dynamo_backend", "no"]  # fmt: skip
    return {
        "python": run(python, tmp / "python", tmp),
        "python_again": run(python, tmp / "python_again", tmp),
        "accelerate": run(accelerate, tmp / "accelerate", tmp),
    }


@pytest.mark.parametrize("other", ["python_again", "accelerate"])
def test_same_seed_gives_identical_weights_and_metrics(runs, other):
    (weights, metrics), (other_weights, other_metrics) = runs["python"], runs[other]
    assert weights.keys() == other_weights.keys()
    for name in weights:
        assert (weights[name] - other_weights[name]).abs().max().item() == 0.0, name
    assert "eval_average_precision" in metrics and "train_loss" in metrics
    assert other_metrics == metrics
