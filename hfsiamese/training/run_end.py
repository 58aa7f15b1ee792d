"""The end of a training run, the same for every training recipe: what is saved, and what the console says."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from hfsiamese.training.run_summary import run_summary


def save_run(trainer: Any, metrics: Mapping[str, float], card: Mapping[str, Any]) -> None:
    """
    Save the model (with the threshold its last evaluation calibrated), `all_results.json`, the trainer
    state and the model card (`card`: `create_model_card`'s keyword arguments); with `--push_to_hub` the
    card is written and the folder uploaded.
    """
    trainer.save_model()
    trainer.save_metrics("all", dict(metrics))
    trainer.save_state()
    if trainer.args.push_to_hub:
        trainer.push_to_hub(**card)
    else:
        trainer.create_model_card(**card)


def end_run(
    trainer: Any,
    metrics: Mapping[str, float],
    *,
    corpus_file: str | os.PathLike | None,
    reranker: bool = False,
    split_command: str | None = None,
) -> None:
    """
    Print the run's summary on the main process (where the model went, its validation metrics, the
    commands to evaluate and search (a cross-encoder, `reranker`: rerank) with it, and `split_command`, which writes
    the pairs it held out), then tear the process group down: under several
    processes gloo aborts at exit otherwise.
    """
    if trainer.is_world_process_zero():
        summary = run_summary(
            trainer.args.output_dir, metrics, corpus_file=corpus_file, reranker=reranker, split_command=split_command
        )
        print(summary, flush=True)
    trainer.accelerator.end_training()


__all__ = ["end_run", "save_run"]
