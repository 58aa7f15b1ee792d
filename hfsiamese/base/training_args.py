"""`PairTrainingArguments`: the Trainer's arguments plus what every pair model's training run shares.

Each family adds its own on top (`SiameseTrainingArguments`: the loss and its options, batch sampling, the gradient
cache; `CrossEncoderTrainingArguments`: nothing yet), so that an option a family does not use is not one of its
arguments: a config or flag naming it is refused as unknown, not silently ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch
from transformers import TrainingArguments

from hfsiamese.base.cpu_precision import choose_bf16
from hfsiamese.base.nonfinite_loss import NAN_POLICIES
from hfsiamese.metrics.thresholds import check_calibration_options


@dataclass
class PairTrainingArguments(TrainingArguments):
    """
    [`TrainingArguments`] for a [`PairTrainer`]: `--bf16 auto`, threshold calibration on the validation pairs,
    CPU core sharing and threads, and the NaN/inf loss policy.

    Differences from the Trainer's defaults: `remove_unused_columns=False`, because the columns a pair batch
    needs beside the model's inputs (labels, duplicate group ids) are not arguments of the model's `forward`.
    """

    _argument_group_name = "training: the Trainer's arguments"  # a --help section

    bf16: str = field(
        default="false",
        metadata={
            "help": "bfloat16 autocast: 'true', 'false', or 'auto': where the device computes in bf16 natively and, on a CPU, a "
            "measured training step runs at least 1.2x as fast as in fp32 (hfsiamese.base.cpu_precision; the choice and "
            "its reason are logged). The MiniLM and pretrained recipes default to auto."
        },
    )
    calibrate_threshold: bool = field(
        default=True,
        metadata={
            "help": "At each evaluation, choose the threshold that is best for `calibrate_for` on the evaluation "
            "pairs and store it in model.config.threshold."
        },
    )
    calibrate_for: str = field(
        default="accuracy",
        metadata={
            "help": "What threshold calibration optimises: 'accuracy' or 'f1' (maximised), or 'precision': the "
            "lowest threshold whose precision reaches target_precision (the most recall at that precision).",
            "choices": ["accuracy", "f1", "precision"],
        },
    )
    target_precision: float | None = field(
        default=None,
        metadata={"help": "calibrate_for='precision': the precision the threshold must reach, in (0, 1]."},
    )
    share_cores: bool | None = field(
        default=None,
        metadata={
            "help": "On a CPU, use fewer threads while other processes keep this run's cores busy, all of them again "
            "once the cores are free (hfsiamese.utils.core_sharing: two runs sharing a machine then split "
            "the cores instead of fighting over them). Unset: the process's policy, on in the recipes and commands, "
            "off in your own script unless hfsiamese.set_cpu_policy(share_cores=True). Off when you choose the thread "
            "count (--num_threads, OMP_NUM_THREADS) or full_determinism, or with HFSIAMESE_SHARE_CORES=0.",
            "nargs": "?",  # `--share_cores` alone means true, as for the other switches
            "const": True,
        },
    )
    num_threads: int | None = field(
        default=None,
        metadata={
            "help": "CPU threads per process, set by the recipes (in your own script: "
            "hfsiamese.utils.cpu_threads.apply_cpu_threads(args.num_threads)). Unset: your OMP_NUM_THREADS if you set it, "
            "else the cores this process owns divided by the processes of the job on this machine (`accelerate "
            "launch` would otherwise leave one thread per process)."
        },
    )
    nan_policy: str = field(
        default="raise",
        metadata={
            "help": "What a NaN or infinite training loss does: 'raise' stops training with an error naming the step "
            "and the batch; 'skip' drops the batch (no backward pass, no update from it) and counts it in the logs "
            "as `skipped_batches`.",
            "choices": ["raise", "skip"],
        },
    )
    overwrite_output_dir: bool = field(
        default=False, metadata={"help": "Allow writing into a non-empty output_dir (the recipes refuse otherwise)."}
    )
    remove_unused_columns: bool = field(
        default=False,
        metadata={"help": "Kept False: a pair batch's labels and group ids are not arguments of the model's forward."},
    )

    def __post_init__(self) -> None:
        # `--bf16 auto` is settled before the Trainer's own checks, which take a bool (and bf16 on a CPU needs use_cpu).
        on_cpu = (
            self.use_cpu
            or os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true")
            or not torch.cuda.is_available()
        )
        choice = choose_bf16(self.bf16, device_type="cpu" if on_cpu else "cuda")
        self.bf16, self.precision_reason = choice.bf16, choice.reason
        if choice.bf16 and on_cpu and not torch.cuda.is_available():
            self.use_cpu = True
        super().__post_init__()
        # The Trainer takes both and then trains nothing (a model saved as if trained) or fails at its first step,
        # after the data and the model are loaded.
        if self.max_steps <= 0 and self.num_train_epochs <= 0:
            raise ValueError(
                f"num_train_epochs must be above 0 (or set max_steps), got {self.num_train_epochs}: nothing would be trained"
            )
        if self.learning_rate < 0:
            raise ValueError(f"learning_rate must be at least 0, got {self.learning_rate}")
        if self.gradient_accumulation_steps < 1:  # the Trainer divided by it, once the data and the model were loaded
            raise ValueError(f"gradient_accumulation_steps must be at least 1, got {self.gradient_accumulation_steps}")
        if self.weight_decay < 0:  # AdamW would grow the weights instead of shrinking them
            raise ValueError(f"weight_decay must be at least 0, got {self.weight_decay}")
        if self.nan_policy not in NAN_POLICIES:
            raise ValueError(f"nan_policy must be 'raise' or 'skip', got {self.nan_policy!r}")
        check_calibration_options(self.calibrate_for, self.target_precision)


__all__ = ["PairTrainingArguments"]
