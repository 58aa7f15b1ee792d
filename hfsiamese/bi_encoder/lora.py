"""
LoRA on the encoder (`--lora_r`, the `lora` extra): low-rank adapters train, the encoder's own weights stay frozen.

Why: full fine-tuning keeps a gradient and two AdamW moments for every encoder weight, three times the weights
again; with adapters those exist for the adapters only, so a bigger encoder trains in the memory a smaller one
took (benchmarks/training/lora_memory.py). The Siamese head (Dense layers, projection, classification head) stays fully
trainable: it is small, and the projection and the head start random, so freezing them would freeze noise.

peft is imported only when `lora_r` is set. What is saved is a plain Siamese checkpoint with the adapters merged,
and the adapters alone in `adapter/` beside it (`hfsiamese.models.siamese.adapters`).
"""

from __future__ import annotations

import logging
import re
import warnings
from types import ModuleType
from typing import TYPE_CHECKING

from torch import nn

from hfsiamese.utils.extras import install_hint

if TYPE_CHECKING:
    from hfsiamese.base.model_arguments import ModelArguments
    from hfsiamese.models.siamese.modeling_siamese import SiameseModel

logger = logging.getLogger(__name__)

__all__ = ["add_lora", "default_target_modules", "refuse_lora", "require_peft"]


def require_peft() -> ModuleType:
    """peft, or an ImportError naming the `lora` extra."""
    try:
        import peft
    except ImportError as error:
        raise ImportError(f"--lora_r needs peft, which is not installed: {install_hint('lora')}") from error
    return peft


def refuse_lora(model_args: ModelArguments, start: str) -> None:
    """`lora_r` applies to a fresh model around a pretrained transformer encoder; say so for any other `start`."""
    if model_args.lora_r is not None:
        raise ValueError(f"lora_r applies when training from a pretrained transformer encoder, not from {start}")


def default_target_modules(encoder: nn.Module) -> list[str] | str:
    """
    peft's default layers for the encoder's architecture (BERT, RoBERTa: query and value); else every linear layer the
    embeddings pass through. That is all of them but a pooler (BERT's, MPNet's), whose output a Siamese model never
    uses: adapters there would count as trainable and never train. A pattern (peft matches it against the full module
    names) where one names exactly those layers, else their list.
    """
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING

    known = TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING.get(getattr(encoder.config, "model_type", None))
    if known:
        return list(known)
    names = [
        name
        for name, module in encoder.named_modules()
        if isinstance(module, nn.Linear) and name.split(".")[0] != "pooler"
    ]
    if not names:
        raise ValueError(f"{type(encoder).__name__} has no linear layers for LoRA: pass --lora_target_modules")
    leaves = sorted({name.rsplit(".", 1)[-1] for name in names})
    pattern = rf"(?!pooler\.)(?:.*\.)?(?:{'|'.join(map(re.escape, leaves))})"
    matched = [name for name, _ in encoder.named_modules() if re.fullmatch(pattern, name)]
    return pattern if matched == names else names


def add_lora(model: SiameseModel, model_args: ModelArguments) -> SiameseModel:
    """
    `model` with LoRA adapters (rank `lora_r`) on its transformer encoder, whose own weights are frozen; `model`
    unchanged when `lora_r` is unset. The encoder becomes a peft model in place (`model.encoder`).
    """
    if model_args.lora_r is None:
        return model
    peft = require_peft()
    if model.config.encoder_type != "transformer":
        raise ValueError(
            f"lora_r applies to transformer encoders; this model's encoder is {model.config.encoder_type!r}"
        )
    if model_args.lora_r < 1:
        raise ValueError(f"lora_r must be a positive rank, got {model_args.lora_r}")
    targets = model_args.lora_target_modules
    if not targets:
        targets = default_target_modules(model.encoder)
    elif list(targets) == ["all-linear"]:
        targets = "all-linear"  # peft's own name for every linear layer
    config = peft.LoraConfig(
        r=model_args.lora_r,
        lora_alpha=model_args.lora_alpha,
        lora_dropout=model_args.lora_dropout,
        target_modules=targets,
        bias="none",
    )
    with warnings.catch_warnings():  # peft asks the encoder the deprecated `is_gradient_checkpointing` (transformers 5)
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        model.encoder = peft.get_peft_model(model.encoder, config)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    logger.info(
        "LoRA r=%d, alpha=%d on %s: %d of %d parameters train (%.2f%%)",
        model_args.lora_r, model_args.lora_alpha, targets, trainable, total, 100 * trainable / total,
    )  # fmt: skip
    return model
