"""The NaN/inf policy: a non-finite training loss stops training with a clear error, or drops the batch."""

from __future__ import annotations

from typing import Any

import torch
from transformers.utils import logging

logger = logging.get_logger(__name__)

NAN_POLICIES = ("raise", "skip")


class NonFiniteLossError(RuntimeError):
    """The training loss was NaN or infinite (with `nan_policy="raise"`)."""


class SkippedBatch(Exception):
    """Unwinds a training step whose loss is not finite, before any backward pass (`nan_policy="skip"`)."""

    def __init__(self, loss: torch.Tensor) -> None:
        super().__init__("non-finite loss")
        self.loss = loss


class NonFiniteLossGuard:
    """
    Never train on silently after a NaN/inf loss (the Trainer would: its `logging_nan_inf_filter`
    only hides it from the logs). `check` runs before the backward pass, so that a skipped batch
    leaves no trace in the gradients. All processes agree on the verdict (one small all-reduce), so
    that none stops or skips alone while the others wait for it in a collective.
    """

    def __init__(self, policy: str) -> None:
        self.policy = policy  # one of NAN_POLICIES, checked by SiameseTrainingArguments
        self.skipped_batches = 0

    def check(self, loss: torch.Tensor, inputs: dict[str, torch.Tensor], trainer: Any) -> None:
        """Return if the loss is finite on every process; else raise `NonFiniteLossError` or `SkippedBatch`."""
        local_bad = ~torch.isfinite(loss.detach()).all()
        bad = local_bad.to(torch.float32)
        if trainer.accelerator.num_processes > 1:
            bad = trainer.accelerator.reduce(bad.reshape(1), reduction="sum")
        if not bool(bad.sum() > 0):
            return
        step = trainer.state.global_step + 1  # the step being computed (global_step counts finished ones)
        epoch = trainer.state.epoch or 0
        if bool(local_bad):
            value = loss.detach().float().reshape(-1)[0].item()
            what = f"the training loss is {value} at global step {step} (epoch {epoch:.2f}) {describe_batch(inputs, trainer.processing_class)}"
        else:
            what = f"the training loss is not finite on another process at global step {step} (epoch {epoch:.2f})"
        if self.policy == "skip":
            self.skipped_batches += 1
            logger.warning(f"skipping the batch: {what} ({self.skipped_batches} batches skipped so far)")
            raise SkippedBatch(loss.detach())
        raise NonFiniteLossError(
            f"{what}. Lower the learning rate, check these pairs, or pass --nan_policy skip to drop such batches."
        )

    def add_to_logs(self, logs: dict[str, float]) -> None:
        """With `skip`, the number of batches skipped since training (re)started, in step logs and final metrics."""
        if self.policy != "skip":
            return
        if "loss" in logs:
            logs["skipped_batches"] = self.skipped_batches
        elif "train_loss" in logs:  # the end of training: also lands in the returned metrics
            logs["train_skipped_batches"] = self.skipped_batches


def describe_batch(inputs: dict[str, torch.Tensor], tokenizer: Any, rows: int = 2) -> str:
    """The batch in words: its size, first duplicate groups and first pairs of texts (a bi-encoder's batch has
    each side's tokens, `input_ids_a`/`input_ids_b`; a cross-encoder's one sequence a pair, `input_ids`)."""
    paired = "input_ids_a" in inputs
    size = (inputs["input_ids_a"] if paired else inputs["input_ids"]).shape[0]
    parts = []
    if inputs.get("group_ids") is not None:
        parts.append(f"group ids {inputs['group_ids'][:rows].tolist()}")
    if hasattr(tokenizer, "batch_decode"):
        if paired:
            sides = [tokenizer.batch_decode(inputs[f"input_ids_{s}"][:rows], skip_special_tokens=True) for s in "ab"]
            parts.append("pairs " + "; ".join(f"{a!r} / {b!r}" for a, b in zip(*sides)))
        else:
            texts = tokenizer.batch_decode(inputs["input_ids"][:rows], skip_special_tokens=True)
            parts.append("pairs " + "; ".join(repr(text) for text in texts))
    return f"in a batch of {size} pairs (first {rows}: {', '.join(parts) or 'no detail available'})"


__all__ = ["NAN_POLICIES", "NonFiniteLossError", "NonFiniteLossGuard", "SkippedBatch", "describe_batch"]
