"""What a training run's console shows: INFO lines, warnings, and one progress bar.

transformers' `ProgressCallback` opens a second bar for every evaluation; nested inside the training
bar it leaves cursor-movement debris in logs and terminals. Evaluating the validation pairs takes
seconds, and its metrics are printed when it ends, so the training bar alone says how far the run is.
The bars of loading weights, writing shards and `datasets` maps say nothing a user can act on.
"""

from __future__ import annotations

import logging
from typing import Any

import datasets
import transformers
from transformers.trainer_callback import ProgressCallback


def configure_training_console(should_log: bool) -> None:
    """
    The console of a training recipe: INFO lines (the split report, the rows trained on), transformers'
    and (on the logging process) datasets' warnings, and no progress bar but the training one.
    """
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    transformers.utils.logging.set_verbosity_warning()
    transformers.utils.logging.disable_progress_bar()  # "Writing model shards", "Loading weights"
    datasets.disable_progress_bars()
    if should_log:
        datasets.utils.logging.set_verbosity_warning()


class TrainingProgressCallback(ProgressCallback):
    """The Trainer's progress bar over training steps, with no bar for evaluation or prediction."""

    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        return None


def use_single_progress_bar(trainer: Any) -> None:
    """Swap the trainer's `ProgressCallback` (present unless `disable_tqdm`) for `TrainingProgressCallback`."""
    handler = trainer.callback_handler
    if any(type(callback) is ProgressCallback for callback in handler.callbacks):
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(TrainingProgressCallback)


__all__ = ["TrainingProgressCallback", "configure_training_console", "use_single_progress_bar"]
