"""Same seed, same data, same recipe: the same weights and metrics on CPU, whichever launcher runs it.

CPU float results depend on the number of threads (it splits reductions), and `accelerate launch`
sets OMP_NUM_THREADS (1 per process unless told otherwise) where `python` uses every core: that,
not the launcher, is why the two gave slightly different metrics. With equal thread counts they agree
bit for bit. The recipe logs the count.
"""

from __future__ import annotations

import json
import sys

import pytest
from safetensors.torch import load_file

from tests.helpers import TINY_LSTM_BASE, TRAIN, accelerate_launch, recipe_flags, run_offline

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

FLAGS = dict(
    TINY_LSTM_BASE,
    max_length=32,
    max_train_pairs=300,
    max_eval_pairs=100,
    num_train_epochs=1,
    warmup_steps=2,
    eval_strategy="no",
    save_strategy="no",
)  # dropout stays on (0.2 in the default config): its masks must be reproducible too
RUN_DEPENDENT = ("_runtime", "_per_second")


def run(launcher, output_dir, cwd):
    result = run_offline([*launcher, str(TRAIN), *recipe_flags(FLAGS, output_dir)], cwd, OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr[-4000:]
    assert "seed 42, 1 CPU threads per process" in result.stderr
    metrics = json.loads((output_dir / "all_results.json").read_text())
    return load_file(output_dir / "model.safetensors"), {
        k: v for k, v in metrics.items() if not k.endswith(RUN_DEPENDENT)
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("determinism")
    python = [sys.executable]
    return {
        "python": run(python, tmp / "python", tmp),
        "python_again": run(python, tmp / "python_again", tmp),
        "accelerate": run(accelerate_launch(1), tmp / "accelerate", tmp),
    }


@pytest.mark.parametrize("other", ["python_again", "accelerate"])
def test_same_seed_gives_identical_weights_and_metrics(runs, other):
    (weights, metrics), (other_weights, other_metrics) = runs["python"], runs[other]
    assert weights.keys() == other_weights.keys()
    for name in weights:
        assert (weights[name] - other_weights[name]).abs().max().item() == 0.0, name
    assert "eval_average_precision" in metrics and "train_loss" in metrics
    assert other_metrics == metrics
