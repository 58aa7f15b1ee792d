"""Tiny data, arguments and trainers shared by several test modules (no test module imports another)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
import numpy as np

from tests.conftest import TEXTS

# Question pairs scored by the pipeline and push-to-Hub tests.
PAIRS = [
    ("how do i learn python ?", "what is the best way to learn python ?"),
    ("why is the sky blue ?", "how do i cook rice ?"),
    ("how can i lose weight fast ?", "what is the fastest way to lose weight ?"),
    # Longer than the test tokenizer's 16 tokens: the pipeline truncates where encode does.
    ("how do i learn python ? " * 5, "what is the capital of france ?"),
]


def expected_scores(model: Any, tokenizer: Any, pairs: list[tuple[str, str]] = PAIRS) -> list[float]:
    """The model's own scores of `pairs`, which every other way of scoring them must reproduce."""
    a, b = zip(*pairs)
    return model.eval().score_pairs(list(a), list(b), tokenizer).tolist()


def saved_tiny_lstm(path: Path, tokenizer: Any, **config: Any) -> Path:
    """A random LSTM of 8-dimensional embeddings and 6 hidden units (seed 0), saved with `tokenizer` to `path`: the
    model folder the command tests hand their commands (`config`: more `SiameseConfig` fields)."""
    import torch

    from hfsiamese import SiameseConfig, SiameseModel

    torch.manual_seed(0)
    model_config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(tokenizer), embedding_dim=8, hidden_size=6, pad_token_id=0, **config
    )
    SiameseModel(model_config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def tiny_pairs(n_groups: int = 12, label: int = 1) -> datasets.Dataset:
    """Training pairs in `n_groups` duplicate groups of 1 to 3 pairs each, shuffled."""
    rng = np.random.default_rng(0)
    q1, q2, groups = [], [], []
    for g in range(n_groups):
        for k in range(1 + g % 3):  # groups of 1..3 pairs
            q1.append(f"{TEXTS[g % len(TEXTS)]} {g} {k}")
            q2.append(f"{TEXTS[(g + 1) % len(TEXTS)]} {g} {k + 1}")
            groups.append(g)
    order = rng.permutation(len(q1))
    return datasets.Dataset.from_dict(
        {
            "question1": [q1[i] for i in order],
            "question2": [q2[i] for i in order],
            "label": [label] * len(q1),
            "group_id": [groups[i] for i in order],
        }
    )


def tiny_eval_pairs() -> datasets.Dataset:
    """Eight labelled validation pairs, duplicates and not."""
    return datasets.Dataset.from_dict(
        {"question1": TEXTS[0::2] * 2, "question2": TEXTS[1::2] + TEXTS[1::2][::-1], "label": [1, 1, 1, 0, 0, 0, 1, 0]}
    )


def tiny_training_args(tmp_path: Path, arguments_class: type | None = None, **overrides: Any) -> Any:
    """Training arguments (`arguments_class`, default SiameseTrainingArguments) of a few CPU steps writing under
    `tmp_path`; `overrides` replace any value."""
    from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments

    values = dict(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        max_steps=6,
        learning_rate=1e-2,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    values.update(overrides)
    return (arguments_class or SiameseTrainingArguments)(**values)


def trainer_on_tiny_pairs(model: Any, tokenizer: Any, args: Any) -> Any:
    """A SiameseTrainer on the tiny training and evaluation pairs."""
    from hfsiamese.bi_encoder.trainer import SiameseTrainer
    from hfsiamese.data import tokenize_pairs

    return SiameseTrainer(
        model=model,
        args=args,
        train_dataset=tokenize_pairs(tiny_pairs(), tokenizer),
        eval_dataset=tokenize_pairs(tiny_eval_pairs(), tokenizer),
        processing_class=tokenizer,
    )


def random_rows(
    seed: int, n_pairs: int = 300, n_questions: int = 200, p_dup: float = 0.4
) -> list[tuple[str, str, int]]:
    """Random (question, question, label) rows over `n_questions` questions, spelled two ways (case, spaces)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n_questions, n_pairs)
    b = rng.integers(0, n_questions, n_pairs)
    y = (rng.random(n_pairs) < p_dup).astype(int)
    return [(f"question {i}", f"Question  {j} ", int(v)) for i, j, v in zip(a, b, y)]


def write_scored_rows(path: Path, train_pairs: datasets.Dataset, count: int = 40) -> Path:
    """
    `count` teacher-scored rows of training questions only, as JSON lines at `path`: a training pair (query,
    positive), two other pairs' second questions as negatives, and fixed teacher scores preferring the positive.
    """
    import json

    first, second = list(train_pairs["question1"])[:count], list(train_pairs["question2"])[:count]
    rows = [
        {"question1": first[i], "question2": second[i], "negative": [second[(i + 1) % count], second[(i + 2) % count]],
         "teacher_scores": [0.9, 0.2, 0.1]}
        for i in range(count)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
