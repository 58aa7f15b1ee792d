"""The model card of a training run: what the trainer knows of the run, handed to `hfsiamese.model_card`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import datasets

from ..model_card import build_model_card, metrics_from_log_history


def write_model_card(
    trainer: Any,
    *,
    language: str | None = None,
    license: str | None = None,
    tags: str | list[str] | None = None,
    model_name: str | None = None,
    finetuned_from: str | None = None,
    dataset_tags: str | list[str] | None = None,
    dataset: str | list[str] | None = None,
    dataset_args: str | list[str] | None = None,
    arguments: dict[str, Any] | None = None,
    metrics: dict[str, float] | None = None,
    sentence_transformers_path: str | None = None,
) -> None:
    """
    Write the card of `trainer`'s model to `<output_dir>/README.md`, with the arguments of the
    Trainer's `create_model_card` (see `SiameseTrainer.create_model_card`).
    """
    args = trainer.args
    model = trainer.accelerator.unwrap_model(trainer.model)
    repo_id = getattr(trainer, "hub_model_id", None) or args.hub_model_id or args.output_dir
    if sentence_transformers_path and Path(sentence_transformers_path).resolve() == Path(args.output_dir).resolve():
        sentence_transformers_path = repo_id  # exported into this very folder: it loads from the same place
    card = build_model_card(
        model,
        model_name=model_name or Path(args.output_dir).name,
        metrics=metrics if metrics is not None else metrics_from_log_history(trainer.state.log_history),
        training_args=args,
        arguments=arguments,
        loss=trainer.loss_fn,
        tokenizer=trainer.processing_class,
        repo_id=repo_id,
        dataset_name=", ".join(dataset) if isinstance(dataset, list) else dataset,
        dataset_id=_first(dataset_tags),
        dataset_config=_first(dataset_args),
        train_rows=len(trainer.train_dataset) if isinstance(trainer.train_dataset, datasets.Dataset) else None,
        eval_pairs=len(trainer.eval_dataset) if isinstance(trainer.eval_dataset, datasets.Dataset) else None,
        global_step=trainer.state.global_step or None,
        base_model=finetuned_from,
        language=language,
        license=license,
        tags=[tags] if isinstance(tags, str) else tags,
        sentence_transformers_path=sentence_transformers_path,
    )
    os.makedirs(args.output_dir, exist_ok=True)
    card.save(os.path.join(args.output_dir, "README.md"))


def _first(value: str | list[str] | None) -> str | None:
    return value[0] if isinstance(value, list) and value else value or None


__all__ = ["write_model_card"]
