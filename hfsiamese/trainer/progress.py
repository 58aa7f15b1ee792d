"""One progress bar: the Trainer's training bar, without the evaluation bar it nests inside it.

transformers' `ProgressCallback` opens a second bar for every evaluation; nested inside the training
bar it leaves cursor-movement debris in logs and terminals. Evaluating the validation pairs takes
seconds, and its metrics are printed when it ends, so the training bar alone says how far the run is.
"""

from __future__ import annotations

from typing import Any

from transformers.trainer_callback import ProgressCallback


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


__all__ = ["TrainingProgressCallback", "use_single_progress_bar"]
