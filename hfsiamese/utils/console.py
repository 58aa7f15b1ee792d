"""What a recipe's console shows: warnings in one format (`warning: <message>`, from `warnings.warn` and
from loggers alike), a training run's INFO lines and its progress bar (and a long evaluation's), and no other bar.

transformers' `ProgressCallback` opens a second bar for every evaluation; nested inside the training
bar it leaves cursor-movement debris in logs and terminals. Evaluating a few thousand validation pairs
takes seconds, and its metrics are printed when it ends, so the training bar alone says how far the run
is; an evaluation of many batches (a sample of a large validation set: minutes on a CPU) gets its bar.
The bars of loading weights, writing shards and `datasets` maps say nothing a user can act on.
"""

from __future__ import annotations

import logging
from typing import Any

import datasets
import transformers
from transformers.trainer_callback import ProgressCallback
from transformers.trainer_utils import has_length


class RecipeLogFormatter(logging.Formatter):
    """
    INFO lines with their time and logger (a training run's progress: the split, the threads); warnings
    and errors as `warning: <message>` on one line, as `run_recipe` prints `warnings.warn`'s.
    """

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno >= logging.WARNING:
            return "warning: " + " ".join(record.getMessage().split())
        return super().format(record)


def configure_recipe_logging(level: int) -> None:
    """The root logger prints through `RecipeLogFormatter` at `level` (set once; later calls change the level)."""
    root = logging.getLogger()
    if not any(isinstance(handler.formatter, RecipeLogFormatter) for handler in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(RecipeLogFormatter())
        root.handlers = [handler]
    root.setLevel(level)


def configure_training_console(should_log: bool) -> None:
    """
    The console of a training recipe: INFO lines (the split report, the rows trained on), transformers'
    and (on the logging process) datasets' warnings, and no progress bar but the training one.
    """
    configure_recipe_logging(logging.INFO)
    transformers.utils.logging.set_verbosity_warning()
    transformers.utils.logging.disable_progress_bar()  # "Writing model shards", "Loading weights"
    datasets.disable_progress_bars()
    if should_log:
        datasets.utils.logging.set_verbosity_warning()


def configure_quiet_console() -> None:
    """
    The console of a recipe that prints one result (evaluation, search, calibration, export, the app):
    its own warnings, transformers' errors only, and no progress bar (reading pairs, loading weights).
    """
    configure_recipe_logging(logging.WARNING)
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()


# Evaluations of at least this many batches show a bar (the default sample of 20,000 pairs at the recipes' eval
# batch sizes does; the bundled recipes' ~1,000 validation pairs do not).
EVALUATION_BAR_MIN_BATCHES = 20


class TrainingProgressCallback(ProgressCallback):
    """The Trainer's progress bar over training steps, and one over an evaluation's batches only when it is long
    (`EVALUATION_BAR_MIN_BATCHES`); none at all with `disable_tqdm`, which leaves this callback out."""

    def on_prediction_step(
        self, args: Any, state: Any, control: Any, eval_dataloader: Any = None, **kwargs: Any
    ) -> None:
        if has_length(eval_dataloader) and len(eval_dataloader) >= EVALUATION_BAR_MIN_BATCHES:
            super().on_prediction_step(args, state, control, eval_dataloader=eval_dataloader, **kwargs)


def use_single_progress_bar(trainer: Any) -> None:
    """Swap the trainer's `ProgressCallback` (present unless `disable_tqdm`) for `TrainingProgressCallback`."""
    handler = trainer.callback_handler
    if any(type(callback) is ProgressCallback for callback in handler.callbacks):
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(TrainingProgressCallback)


__all__ = [
    "EVALUATION_BAR_MIN_BATCHES",
    "RecipeLogFormatter",
    "TrainingProgressCallback",
    "configure_quiet_console",
    "configure_recipe_logging",
    "configure_training_console",
    "use_single_progress_bar",
]
