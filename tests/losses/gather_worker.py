"""
Worker of test_gather_two_processes.py, run with `accelerate launch --multi_gpu --num_processes 2`.

Both ranks build the same batch of 2B pairs (same seed) and the same tiny linear encoder, wrapped by
`accelerator.prepare` (DDP, gradients averaged over processes as in training). Rank r takes pairs
[r·B, (r+1)·B), computes each in-batch loss with gathering, and backpropagates. Rank 0 writes the
whole batch, the initial weight, every rank's loss value and the DDP-averaged gradient to JSON; the
test recomputes loss and gradient in one process on all 2B pairs.
"""

from __future__ import annotations

import json
import sys

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from torch import nn

from hfsiamese.losses import get_loss

PAIRS_PER_PROCESS = 6
INPUT_DIM, EMBEDDING_DIM = 12, 6
# Pairs 0 and 6 (and 2 and 8) share a group across the two processes; 3 and 4 within process 0.
GROUP_IDS = [0, 1, 2, 3, 3, 5, 0, 6, 2, 7, 8, 9]

# (config name, loss name, loss kwargs, pass explicit negatives)
CONFIGS = [
    ("hard_negative_triplet", "hard_negative_triplet", {}, False),
    (
        "hard_negative_triplet_hard_negatives",
        "hard_negative_triplet",
        {"negative_selection": "hard", "margin": 0.3},
        True,
    ),
    (
        "hard_negative_triplet_semi_hard",
        "hard_negative_triplet",
        {"negative_selection": "semi_hard", "margin": 0.4},
        False,
    ),
    ("multiple_negatives_ranking", "multiple_negatives_ranking", {"temperature": 0.1}, False),
    (
        "multiple_negatives_ranking_symmetric",
        "multiple_negatives_ranking",
        {"temperature": 0.1, "symmetric": True},
        True,
    ),
    ("triplet_in_batch", "triplet", {"in_batch_negatives": True, "margin": 0.5}, True),
    # Every size's term gathers the other process's cut candidates.
    (
        "matryoshka_multiple_negatives_ranking",
        "matryoshka",
        {"matryoshka_loss": "multiple_negatives_ranking", "matryoshka_dims": [6, 4, 2], "temperature": 0.1},
        True,
    ),
    # Control: without gathering the 2-process result must differ from the single-process one.
    (
        "multiple_negatives_ranking_local",
        "multiple_negatives_ranking",
        {"temperature": 0.1, "gather_across_devices": False},
        False,
    ),
]


class PairEncoder(nn.Module):
    """One shared linear map + L2 norm, applied to every side in a single forward (as SiameseModel does)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(INPUT_DIM, EMBEDDING_DIM, bias=False)

    def forward(self, *sides: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(F.normalize(self.linear(side), dim=-1) for side in sides)


def make_batch() -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    size = 2 * PAIRS_PER_PROCESS
    inputs_a = torch.randn(size, INPUT_DIM, generator=generator, dtype=torch.float64)
    inputs_b = inputs_a + 0.7 * torch.randn(size, INPUT_DIM, generator=generator, dtype=torch.float64)
    inputs_n = torch.randn(size, INPUT_DIM, generator=generator, dtype=torch.float64)
    return {"inputs_a": inputs_a, "inputs_b": inputs_b, "inputs_n": inputs_n, "group_ids": torch.tensor(GROUP_IDS)}


def main(output_path: str) -> None:
    accelerator = Accelerator()
    assert accelerator.num_processes == 2, accelerator.num_processes
    torch.manual_seed(0)
    model = PairEncoder().double()
    initial_weight = model.linear.weight.detach().clone()
    model = accelerator.prepare(model)

    batch = make_batch()
    local = slice(accelerator.process_index * PAIRS_PER_PROCESS, (accelerator.process_index + 1) * PAIRS_PER_PROCESS)
    results = []
    for config_name, loss_name, kwargs, with_negatives in CONFIGS:
        loss_fn = get_loss(loss_name, **kwargs)
        model.zero_grad()
        embeddings_a, embeddings_b, negatives = model(
            batch["inputs_a"][local], batch["inputs_b"][local], batch["inputs_n"][local]
        )
        loss = loss_fn(
            embeddings_a,
            embeddings_b,
            group_ids=batch["group_ids"][local],
            negatives=negatives if with_negatives else None,
        )
        accelerator.backward(loss)
        losses = accelerator.gather(loss.detach().reshape(1))
        gradient = accelerator.unwrap_model(model).linear.weight.grad
        results.append(
            {
                "name": config_name,
                "loss": loss_name,
                "kwargs": kwargs,
                "with_negatives": with_negatives,
                "process_losses": losses.tolist(),
                "gradient": gradient.tolist(),
            }
        )

    if accelerator.is_main_process:
        payload = {key: value.tolist() for key, value in batch.items()}
        payload.update(initial_weight=initial_weight.tolist(), pairs_per_process=PAIRS_PER_PROCESS, results=results)
        with open(output_path, "w", encoding="utf-8") as handle:
            json.dump(payload, handle)
    accelerator.wait_for_everyone()
    del model
    accelerator.end_training()


if __name__ == "__main__":
    main(sys.argv[1])
