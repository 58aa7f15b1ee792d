"""Resuming (and `load_best_model_at_end`) for a run that trains LoRA adapters.

Its checkpoints hold the merged weights (a plain Siamese model: `hfsiamese.models.siamese.adapters`), which the
Trainer's own loading cannot put into the adapter-wrapped model in training: the names differ, and merged weights
cannot be split back into frozen base and adapters. The run's model is rebuilt from the same base encoder with fresh
adapters, so a checkpoint gives it back what trained: the adapters from `adapter/`, the head (Dense layers,
projection, classification head) from `model.safetensors`. Then the model's merged weights must equal the
checkpoint's: otherwise the run was rebuilt from another base encoder, and resuming would train a different model.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import nn
from transformers.utils import SAFE_WEIGHTS_NAME

from hfsiamese.models.siamese.adapters import ADAPTER_FOLDER, ADAPTER_WEIGHTS_FILE, has_adapters, merged_copy

__all__ = ["load_lora_checkpoint"]

ENCODER_PREFIX = "encoder."


def load_lora_checkpoint(model: nn.Module, folder: str | Path) -> bool:
    """
    Load a LoRA run's checkpoint `folder` into `model` (adapters, then head) and check the base encoder; False, loading
    nothing, when neither the model nor the checkpoint has adapters (the Trainer's own loading applies). A checkpoint
    with adapters for a model without them, or the reverse, is refused in one line.
    """
    folder = Path(folder)
    adapter_file = folder / ADAPTER_FOLDER / ADAPTER_WEIGHTS_FILE
    wrapped = has_adapters(getattr(model, "encoder", None))
    if not wrapped and not adapter_file.is_file():
        return False
    if not wrapped:
        raise ValueError(
            f"{folder} was saved by a LoRA run ({ADAPTER_FOLDER}/ holds its adapters): resume it with the same --lora_r"
        )
    if not adapter_file.is_file():
        raise ValueError(
            f"{folder} holds no {ADAPTER_FOLDER}/{ADAPTER_WEIGHTS_FILE}: it was not saved by a LoRA run; resume it without --lora_r"
        )
    from peft import set_peft_model_state_dict  # installed: the model has peft adapters

    loaded = set_peft_model_state_dict(model.encoder, load_file(str(adapter_file)))
    unexpected = loaded.unexpected_keys  # type: ignore[attr-defined]  # peft annotates it as a bare namedtuple
    if unexpected:
        raise ValueError(
            f"{adapter_file} holds adapters this model lacks ({', '.join(unexpected[:3])}): another --lora_r or --lora_target_modules?"
        )
    saved = load_file(str(folder / SAFE_WEIGHTS_NAME))
    head = {name: tensor for name, tensor in saved.items() if not name.startswith(ENCODER_PREFIX)}
    missing, unexpected = model.load_state_dict(head, strict=False)
    missing = [name for name in missing if not name.startswith(ENCODER_PREFIX)]
    if missing or unexpected:
        raise ValueError(
            f"{folder / SAFE_WEIGHTS_NAME}: its head differs from this model's (missing {missing}, unexpected {unexpected})"
        )
    _check_same_base(model, saved, folder)
    return True


def _check_same_base(model: nn.Module, saved: dict[str, torch.Tensor], folder: Path) -> None:
    """The merged weights of the model, now holding the checkpoint's adapters, are the checkpoint's own."""
    merged = merged_copy(model).state_dict()
    for name, tensor in saved.items():
        if name.startswith(ENCODER_PREFIX):
            ours = merged.get(name)
            if (
                ours is None
                or ours.shape != tensor.shape
                or not torch.allclose(ours.cpu(), tensor, rtol=1e-5, atol=1e-6)
            ):
                raise ValueError(
                    f"{folder}: the merged weight {name} differs from this run's base encoder with the saved adapters: "
                    "the run being resumed started from another model (resume with its --model_name_or_path)"
                )
