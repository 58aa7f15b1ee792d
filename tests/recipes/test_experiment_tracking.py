"""`hfsiamese train --report_to tensorboard` (docs/guides/experiment-tracking.md): the run's losses and validation
figures land in TensorBoard event files under the output folder's `runs/`."""

from __future__ import annotations

from tests.helpers import load_recipe


def test_report_to_tensorboard_logs_training_and_evaluation(tmp_path, monkeypatch):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    train = load_recipe(monkeypatch, "train")
    output = tmp_path / "lstm_tb"
    train.main(
        [
            "--report_to", "tensorboard", "--eval_strategy", "steps", "--eval_steps", "2", "--logging_steps", "1",
            "--max_steps", "2", "--max_train_pairs", "300", "--max_eval_pairs", "100",
            "--per_device_train_batch_size", "16", "--save_strategy", "no", "--disable_tqdm", "true",
            "--output_dir", str(output),
        ]
    )  # fmt: skip
    (run,) = {path.parent for path in (output / "runs").rglob("events.out.tfevents.*")}
    scalars = EventAccumulator(str(run)).Reload().Tags()["scalars"]
    assert {"train/loss", "eval/average_precision"} <= set(scalars), scalars
