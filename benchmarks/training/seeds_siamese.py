#!/usr/bin/env python
"""The seeds' Siamese LSTM (Coursera NLP "Question duplicates" in Trax), re-implemented in PyTorch.

Kept here as the baseline hfsiamese's LSTM path must beat, so it stays faithful to the original
rather than good: every choice below mirrors the Trax model, including the ones hfsiamese does
differently on purpose.

- Vocabulary: every token of the training duplicate pairs, in first-seen order; `<PAD>` = 1,
  unknown tokens = 0. Tokens come from `nltk.word_tokenize`; nltk is not a dependency, so a regex
  that splits words and punctuation the same way on ordinary questions stands in for it.
- Batches: shuffled duplicate pairs only; both sides padded with `<PAD>` to the next power of two
  of the longest question in the batch (Trax's `data_generator`).
- Model: `Embedding(V, 128) → LSTM(128) → mean over ALL positions (padding included) → L2-normalise`,
  the same network for both sides.
- Loss (`TripletLossFn`): with `s = v1 · v2ᵀ`,
  `mean(max(0, α − s_ii + closest_neg_i) + max(0, α − s_ii + mean_neg_i))`, α = 0.25, where the
  closest negative is the largest off-diagonal score of row i (the diagonal pushed down by 2) and the
  mean negative the mean of the off-diagonal scores.
- Optimiser: Adam, learning rate `0.01 · min(1, step / 400) / sqrt(max(step, 400))` (Trax's
  `warmup_and_rsqrt_decay(400, 0.01)`), batch 256.
- Decision: duplicate when the cosine is above 0.7 (the seeds' protocol).

    python benchmarks/training/seeds_siamese.py --epochs 10
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

PAD, UNKNOWN = 1, 0
_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Words and punctuation marks, as `nltk.word_tokenize` splits ordinary questions."""
    return _TOKEN.findall(text)


def build_vocab(questions: Sequence[str]) -> dict[str, int]:
    vocab = {"<PAD>": PAD}
    for question in questions:
        for token in tokenize(question):
            if token not in vocab:
                vocab[token] = len(vocab) + 1  # ids start at 2: 0 is "unknown", 1 is padding
    return vocab


def encode_ids(question: str, vocab: dict[str, int]) -> list[int]:
    return [vocab.get(token, UNKNOWN) for token in tokenize(question)] or [UNKNOWN]


def pad_batch(sequences: Sequence[list[int]], length: int) -> torch.Tensor:
    return torch.tensor([s[:length] + [PAD] * (length - len(s[:length])) for s in sequences])


def power_of_two_length(*sides: Sequence[list[int]]) -> int:
    longest = max(len(s) for side in sides for s in side)
    return 2 ** math.ceil(math.log2(max(longest, 1)))


class SeedsSiamese(nn.Module):
    def __init__(self, vocab_size: int, d_model: int = 128) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        states, _ = self.lstm(self.embedding(ids))
        return F.normalize(states.mean(dim=1), dim=-1)  # the mean runs over the padding too


def seeds_triplet_loss(v1: torch.Tensor, v2: torch.Tensor, margin: float = 0.25) -> torch.Tensor:
    batch = v1.shape[0]
    scores = v2 @ v1.T
    positive = scores.diagonal()
    eye = torch.eye(batch, device=scores.device)
    closest_negative = (scores - 2.0 * eye).max(dim=1).values
    mean_negative = ((1.0 - eye) * scores).sum(dim=1) / (batch - 1)
    loss_closest = (margin - positive + closest_negative).clamp(min=0)
    loss_mean = (margin - positive + mean_negative).clamp(min=0)
    return (loss_closest + loss_mean).mean()


def warmup_rsqrt(step: int, warmup: int = 400, max_value: float = 0.01) -> float:
    step = max(step, 1)
    return max_value * min(1.0, step / warmup) / math.sqrt(max(step, warmup))


def train(
    q1: Sequence[str], q2: Sequence[str], *, epochs: int = 10, batch_size: int = 256, seed: int = 42
) -> tuple[SeedsSiamese, dict[str, int], dict[str, float]]:
    """Train on duplicate pairs (q1[i], q2[i]); returns the model, its vocabulary and timing figures."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    vocab = build_vocab([*q1, *q2])
    ids1 = [encode_ids(q, vocab) for q in q1]
    ids2 = [encode_ids(q, vocab) for q in q2]
    model = SeedsSiamese(len(vocab) + 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0)  # the schedule below sets the actual rate
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_rsqrt)
    order = list(range(len(ids1)))
    steps = pairs = 0
    start = time.perf_counter()
    model.train()
    for _ in range(epochs):
        rng.shuffle(order)
        for begin in range(0, len(order) - batch_size + 1, batch_size):  # Trax drops the last partial batch
            batch = order[begin : begin + batch_size]
            side1, side2 = [ids1[i] for i in batch], [ids2[i] for i in batch]
            length = power_of_two_length(side1, side2)
            loss = seeds_triplet_loss(model(pad_batch(side1, length)), model(pad_batch(side2, length)))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            steps += 1
            pairs += len(batch)
    seconds = time.perf_counter() - start
    return model, vocab, {"train_s": seconds, "steps": steps, "train_pairs_per_s": pairs / seconds}


@torch.inference_mode()
def similarities(
    model: SeedsSiamese, vocab: dict[str, int], q1: Sequence[str], q2: Sequence[str], batch_size: int = 512
) -> torch.Tensor:
    model.eval()
    scores = []
    for begin in range(0, len(q1), batch_size):
        side1 = [encode_ids(q, vocab) for q in q1[begin : begin + batch_size]]
        side2 = [encode_ids(q, vocab) for q in q2[begin : begin + batch_size]]
        length = power_of_two_length(side1, side2)
        scores.append((model(pad_batch(side1, length)) * model(pad_batch(side2, length))).sum(dim=-1))
    return torch.cat(scores)


def main() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
    from benchmarks.common.harness import argument_parser, emit
    from benchmarks.common.qqp_slices import qqp_train_and_validation
    from hfsiamese.metrics import pair_classification_metrics

    parser = argument_parser(__doc__)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    train_pairs, validation = qqp_train_and_validation()
    duplicates = train_pairs.filter(lambda label: label == 1, input_columns="label")
    model, vocab, timing = train(
        duplicates["question1"], duplicates["question2"], epochs=args.epochs, batch_size=args.batch_size, seed=args.seed
    )
    scores = similarities(model, vocab, validation["question1"], validation["question2"]).numpy()
    at_seeds_threshold = pair_classification_metrics(scores, validation["label"], threshold=0.7)
    calibrated = pair_classification_metrics(scores, validation["label"])
    emit(
        {
            "model": "seeds_siamese",
            **{k: round(v, 4) for k, v in timing.items()},
            "vocab_size": len(vocab) + 1,
            "eval_average_precision": round(calibrated["average_precision"], 4),
            "eval_roc_auc": round(calibrated["roc_auc"], 4),
            "eval_accuracy_at_0.7": round(at_seeds_threshold["accuracy"], 4),
            "eval_accuracy_calibrated": round(calibrated["accuracy"], 4),
            "eval_f1_calibrated": round(calibrated["f1"], 4),
            "eval_threshold": round(calibrated["threshold"], 4),
        }
    )


if __name__ == "__main__":
    main()
