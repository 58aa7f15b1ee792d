"""
Adapters (LoRA, through peft) on a Siamese model's encoder, as saving and export see them.

A model trained with adapters still saves as a plain Siamese checkpoint: the adapters merged into the encoder's
weights, under the ordinary `encoder.*` names, so that it loads with `AutoModel.from_pretrained(folder,
trust_remote_code=True)` where peft is not installed, and exports like any other. The adapters alone go beside it
in `adapter/` (peft's `adapter_config.json` and `adapter_model.safetensors`): `PeftModel.from_pretrained(base_encoder,
folder / "adapter")` puts them back on the base encoder, and a resumed run reloads them from there.

`hfsiamese.training.lora` puts the adapters on. This file travels with every checkpoint as remote code (the
modeling file imports it through `hub_sharing`), so it may not import peft: a peft model is told by its API.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

# The folder beside the weights that holds the adapters alone, and peft's file names in it.
ADAPTER_FOLDER = "adapter"
ADAPTER_WEIGHTS_FILE = "adapter_model.safetensors"
ADAPTER_CONFIG_FILE = "adapter_config.json"


def has_adapters(module: Any) -> bool:
    """Is `module` a peft model (adapters around a base model)? Told by its API: this file cannot import peft."""
    return module is not None and hasattr(module, "peft_config") and callable(getattr(module, "merge_and_unload", None))


def merged_copy(model: Any) -> Any:
    """
    `model` itself where its encoder has no adapters; else a copy whose encoder has them merged into its weights
    (peft's `merge_and_unload`): a plain `SiameseModel` to save or export.

    A copy, because the model in training keeps its adapters: merging in place and unmerging after would change the
    frozen weights by float rounding at every save. It costs one more copy of the weights while it lives (no
    gradients, no optimizer state). The tokenizer the model holds, if any, is shared, not copied.
    """
    if not has_adapters(getattr(model, "encoder", None)):
        return model
    tokenizer = getattr(model, "_tokenizer", None)
    merged = copy.deepcopy(model, memo={id(tokenizer): tokenizer} if tokenizer is not None else {})
    with torch.no_grad():
        merged.encoder = merged.encoder.merge_and_unload()
    for parameter in merged.parameters():
        parameter.grad = None
    return merged


__all__ = ["ADAPTER_CONFIG_FILE", "ADAPTER_FOLDER", "ADAPTER_WEIGHTS_FILE", "has_adapters", "merged_copy"]
