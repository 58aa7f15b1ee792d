"""
Two CPU processes with gathering give the single-process loss and gradient of the concatenated batch.

What is equal (and checked): with the same encoder weight, the mean over the 2 processes of their
loss values equals the loss of one process on all 2B pairs, and the gradient DDP leaves on every
process (the average of the 2 local gradients) equals that process's gradient. The per-process
values themselves are not the single-process loss.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from hfsiamese.losses import get_loss
from hfsiamese.losses.distributed import gather, gather_with_grad, global_mean, rank_offset, world_size
from tests.helpers import accelerate_launch, retry_teardown_abort

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

WORKER = Path(__file__).with_name("gather_worker.py")
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory) -> dict:
    output = tmp_path_factory.mktemp("gather") / "gather.json"
    command = [*accelerate_launch(2), str(WORKER), str(output)]
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}
    # Rank 0 rewrites the whole file, so a run made again after a teardown abort starts from a clean slate.
    result = retry_teardown_abort(
        lambda: subprocess.run(
            command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180, check=False
        ),
        "two-process gathering",
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(output.read_text())


def single_process(run: dict, config: dict) -> tuple[float, torch.Tensor]:
    """Loss and weight gradient of one process on all 2B pairs, with the worker's encoder."""
    weight = torch.tensor(run["initial_weight"], dtype=torch.float64, requires_grad=True)
    a, b, n = (
        F.normalize(torch.tensor(run[key], dtype=torch.float64) @ weight.T, dim=-1)
        for key in ("inputs_a", "inputs_b", "inputs_n")
    )
    loss_fn = get_loss(config["loss"], **config["kwargs"])
    loss = loss_fn(a, b, group_ids=torch.tensor(run["group_ids"]), negatives=n if config["with_negatives"] else None)
    loss.backward()
    return loss.item(), weight.grad


GATHERED = [
    "hard_negative_triplet",
    "hard_negative_triplet_hard_negatives",
    "hard_negative_triplet_semi_hard",
    "multiple_negatives_ranking",
    "multiple_negatives_ranking_symmetric",
    "triplet_in_batch",
    "matryoshka_multiple_negatives_ranking",
]


@pytest.mark.parametrize("name", GATHERED)
def test_two_processes_equal_one_process_on_the_concatenated_batch(two_process_run, name):
    config = next(r for r in two_process_run["results"] if r["name"] == name)
    loss, gradient = single_process(two_process_run, config)
    process_losses = config["process_losses"]
    assert sum(process_losses) / len(process_losses) == pytest.approx(loss, abs=1e-5)
    torch.testing.assert_close(torch.tensor(config["gradient"], dtype=torch.float64), gradient, atol=1e-5, rtol=0)
    assert gradient.abs().max() > 1e-3  # a gradient worth comparing


def test_without_gathering_the_result_differs(two_process_run):
    """Control: the comparison above can fail — local in-batch negatives give another loss and gradient."""
    config = next(r for r in two_process_run["results"] if r["name"] == "multiple_negatives_ranking_local")
    loss, gradient = single_process(two_process_run, {**config, "kwargs": {"temperature": 0.1}})
    assert abs(sum(config["process_losses"]) / 2 - loss) > 1e-3
    assert (torch.tensor(config["gradient"], dtype=torch.float64) - gradient).abs().max() > 1e-3


def test_single_process_helpers_are_identities():
    x = torch.randn(3, 2, requires_grad=True)
    assert world_size() == 1 and rank_offset(5) == 0
    assert gather_with_grad(x) is x and gather(x) is x
    total = (x * 2).sum()
    assert global_mean(total, torch.tensor(4), gathered=True).item() == pytest.approx(total.item() / 4)
    empty = global_mean(x.sum() * 0, torch.tensor(0), gathered=True)
    assert empty.item() == 0.0 and empty.requires_grad
