"""Building the model whole under DeepSpeed ZeRO-3, as `zero3_init_flag: false` in accelerate's config asks.

Under `accelerate launch` with a ZeRO-3 config, `TrainingArguments` registers DeepSpeed's config with
transformers at once, so every later `from_pretrained`/`from_config` partitions the weights it builds
(`deepspeed.zero.Init`) whatever `zero3_init_flag` says. `SiameseModel` builds its transformer encoder
inside its own `__init__`, then initialises its weights: on partitioned (empty) tensors that fails
(`IndexError: index 0 is out of bounds for dimension 0 with size 0`). With `zero3_init_flag` false the
model is built whole on the CPU instead, and DeepSpeed partitions it when the Trainer starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def built_whole_under_zero3(training_args: Any) -> Iterator[None]:
    """Within it transformers does not partition new models, when DeepSpeed ZeRO-3 runs with `zero3_init_flag` false."""
    plugin = getattr(training_args, "deepspeed_plugin", None)
    if plugin is None or plugin.zero3_init_flag or not plugin.hf_ds_config.is_zero3():
        yield
        return
    from transformers.integrations import deepspeed as hf_deepspeed

    # The registered config, which transformers' `is_deepspeed_zero3_enabled()` reads; put back afterwards.
    registered = hf_deepspeed._hf_deepspeed_config_weak_ref
    hf_deepspeed.unset_hf_deepspeed_config()
    try:
        yield
    finally:
        hf_deepspeed._hf_deepspeed_config_weak_ref = registered


__all__ = ["built_whole_under_zero3"]
