"""Training arguments of `CrossEncoderTrainer`: every pair model's (`PairTrainingArguments`), and no loss options.

A cross-encoder trains with binary cross-entropy on its one logit: the bi-encoder's loss, its options, batch
sampling by duplicate group and the gradient cache are not arguments here, so a config or flag naming one is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from hfsiamese.base.training_args import PairTrainingArguments


@dataclass
class CrossEncoderTrainingArguments(PairTrainingArguments):
    """[`PairTrainingArguments`] for [`CrossEncoderTrainer`]: calibration, `--bf16 auto`, core sharing, `nan_policy`."""

    _argument_group_name = "training: the Trainer's arguments"  # a --help section


__all__ = ["CrossEncoderTrainingArguments"]
