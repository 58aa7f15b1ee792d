"""What `SiameseTrainer` adapts when FSDP or DeepSpeed shard the parameters over the processes.

Sharding splits parameters, gradients and optimizer state, never activations: the in-batch losses
gather the embeddings of all processes (`hfsiamese.losses.distributed`) exactly as under DDP, and
the sharded wrapper reduces the parameter gradients itself. What does not carry over is code that
calls the model or touches `.grad` outside the wrapper's own forward and backward: GradCache (its
extra embedding passes and hand-made gradient averaging), and the gradient average a skipped
batch performs after earlier accumulated batches. Those are refused here with one-line errors.
Two FSDP2 details are handled too: which layer classes become units, and the class a save names.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torch import nn


def is_sharded(trainer: Any) -> bool:
    """True under FSDP or DeepSpeed (accelerate's config), where the wrapper owns the gradients."""
    return bool(getattr(trainer, "is_fsdp_enabled", False) or getattr(trainer, "is_deepspeed_enabled", False))


def check_sharded_training(trainer: Any) -> None:
    """Refuse, before any work, the options whose code bypasses the FSDP/DeepSpeed wrapper."""
    if not is_sharded(trainer):
        return
    launcher = "FSDP" if trainer.is_fsdp_enabled else "DeepSpeed"
    args = trainer.args
    if args.gradient_cache_mini_batch_size:
        raise ValueError(
            f"--gradient_cache_mini_batch_size does not work under {launcher}: its extra embedding passes run outside "
            "the wrapper's forward; use DDP (the multi_gpu launcher config: hfsiamese configs --path multi_gpu) or a smaller "
            "per_device_train_batch_size"
        )
    if args.nan_policy == "skip" and args.gradient_accumulation_steps > 1:
        raise ValueError(
            f"--nan_policy skip with gradient_accumulation_steps > 1 does not work under {launcher}: a skipped last "
            "batch leaves the wrapper's accumulated gradients unreduced; use --nan_policy raise or no accumulation"
        )


def use_fsdp2_layers_without_input_embeddings(trainer: Any) -> None:
    """
    Under FSDP2 with the transformer-based wrap policy and no class named in the config, name the
    classes to wrap ourselves: accelerate would take the model's `_no_split_modules` (SiameseModel
    collects its encoder's: `BertEmbeddings`, `BertLayer` for MiniLM), shard those units, then shard
    `get_input_embeddings()` as a unit of its own, which fails ("Invariant encountered: value was
    None") when an enclosing unit such as `BertEmbeddings` has sharded that table already. So the
    classes that hold the input embeddings are left out; the table still gets its own unit.
    """
    plugin = getattr(trainer.accelerator.state, "fsdp_plugin", None)
    if plugin is None or getattr(plugin, "fsdp_version", 1) != 2 or plugin.transformer_cls_names_to_wrap is not None:
        return
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

    if getattr(plugin.auto_wrap_policy, "func", plugin.auto_wrap_policy) is not transformer_auto_wrap_policy:
        return
    names = fsdp2_layer_classes(trainer.model)
    if names is not None:
        plugin.transformer_cls_names_to_wrap = names


def fsdp2_layer_classes(model: nn.Module) -> list[str] | None:
    """`model._no_split_modules` less the classes holding its input embedding module; None when that changes nothing."""
    names = sorted(getattr(model, "_no_split_modules", None) or ())
    get_embeddings = getattr(model, "get_input_embeddings", None)
    embeddings = get_embeddings() if callable(get_embeddings) else None
    if not names or not isinstance(embeddings, nn.Module):
        return None
    holders = {
        type(module).__name__
        for module in model.modules()
        if module is not embeddings and any(child is embeddings for child in module.modules())
    }
    if not holders.intersection(names):
        return None
    return [name for name in names if name not in holders]


@contextmanager
def saved_as_its_own_class(model: nn.Module) -> Iterator[None]:
    """
    While saving, give an FSDP2 model its own class back. `fully_shard` swaps the class for a generated
    `FSDPSiameseModel(FSDPModule, SiameseModel)` defined in torch's files, and `save_pretrained` copies the
    modeling code of the model's class into the checkpoint and names it in `auto_map`: the folder would
    get torch's `_fsdp_*.py` and `"AutoModel": "_fsdp_init.FSDPSiameseModel"`. FSDP's hooks stay registered
    on the module; only the class's methods change for the duration of the save (no forward runs in it).
    """
    from torch.distributed.fsdp import FSDPModule

    sharded_class = type(model)
    if not isinstance(model, FSDPModule):
        yield
        return
    model.__class__ = next(base for base in sharded_class.__bases__ if not issubclass(base, FSDPModule))
    try:
        yield
    finally:
        model.__class__ = sharded_class


__all__ = [
    "check_sharded_training",
    "fsdp2_layer_classes",
    "is_sharded",
    "saved_as_its_own_class",
    "use_fsdp2_layers_without_input_embeddings",
]
