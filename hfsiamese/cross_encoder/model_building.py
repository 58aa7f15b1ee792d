"""Building the cross-encoder a training run starts from, as `ModelArguments` describe it.

Two starts: a saved cross-encoder (a one-logit sequence-classification folder) to continue training, or a
new one-logit head on a pretrained encoder (all-MiniLM-L6-v2 by default). Bi-encoder options (pooling,
prompts, LoRA, an LSTM's vocabulary) have no meaning here and are refused by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from transformers import AutoConfig

from hfsiamese.cross_encoder.model import PAIR_ORDERS, CrossEncoder, is_cross_encoder_config
from hfsiamese.models.siamese.modeling_siamese import with_dropout
from hfsiamese.utils.hub_access import require_local_or_cached
from hfsiamese.utils.minilm import resolve_minilm_path

if TYPE_CHECKING:
    from hfsiamese.base.model_arguments import ModelArguments

__all__ = ["build_cross_encoder"]

# Bi-encoder options of `ModelArguments` a cross-encoder refuses when set: (field, its unset value).
BI_ENCODER_ONLY = (
    ("pooling", None), ("prompt_name", None), ("prompt", None), ("projection_dim", None), ("classifier_head", None),
    ("lora_r", None), ("export_sentence_transformers", None), ("sub_batch_size", None),
)  # fmt: skip


def build_cross_encoder(model_args: ModelArguments) -> CrossEncoder:
    """
    The cross-encoder to train: `model_args.model_name_or_path` if it is a saved cross-encoder, else a new one-logit
    head on that encoder (default all-MiniLM-L6-v2), cutting pairs at `max_length` tokens (both questions together).
    """
    if model_args.encoder_type != "transformer":
        raise ValueError(f"a cross-encoder is a transformer: encoder_type {model_args.encoder_type!r} does not apply")
    if model_args.pair_order not in PAIR_ORDERS:
        raise ValueError(f"pair_order must be one of {PAIR_ORDERS}, got {model_args.pair_order!r}")
    given = [name for name, unset in BI_ENCODER_ONLY if getattr(model_args, name) != unset]
    if given:
        raise ValueError(
            f"{', '.join(given)}: bi-encoder options, which a cross-encoder (architecture cross_encoder) does not take"
        )
    path = model_args.model_name_or_path or resolve_minilm_path()
    require_local_or_cached(path)  # offline, a Hub id that is not cached fails here, saying so
    kwargs = {"attn_implementation": model_args.attn_implementation} if model_args.attn_implementation else {}
    config = AutoConfig.from_pretrained(path)
    if model_args.encoder_dropout is not None:
        kwargs["config"] = with_dropout(config, model_args.encoder_dropout)
    if is_cross_encoder_config(config):
        cross_encoder = CrossEncoder.from_pretrained(path, **kwargs)
        cross_encoder.config.pair_order = model_args.pair_order
        if model_args.max_length is not None:
            cross_encoder.config.max_seq_length = model_args.max_length
        return cross_encoder
    return CrossEncoder.from_base_model(
        path, pair_order=model_args.pair_order, max_seq_length=model_args.max_length, **kwargs
    )
