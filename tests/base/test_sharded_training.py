"""What the trainer adapts under FSDP/DeepSpeed, without launching processes (test_sharded_launchers.py launches them)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from transformers import BertConfig

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.base.sharded_training import check_sharded_training, fsdp2_layer_classes, is_sharded


def tiny_bert_siamese() -> SiameseModel:
    encoder = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)
    return SiameseModel(SiameseConfig(encoder_type="transformer", encoder_config=encoder.to_dict()))


def test_fsdp2_wraps_the_encoder_layers_but_not_the_class_holding_the_input_embeddings(tiny_lstm):
    model = tiny_bert_siamese()
    assert set(model._no_split_modules) == {"BertEmbeddings", "BertLayer"}  # what accelerate would wrap
    assert fsdp2_layer_classes(model) == ["BertLayer"]
    assert fsdp2_layer_classes(tiny_lstm) is None  # no layer classes: accelerate's own choice stands


def trainer(fsdp: bool = False, deepspeed: bool = False, **args) -> SimpleNamespace:
    defaults = dict(gradient_cache_mini_batch_size=None, nan_policy="raise", gradient_accumulation_steps=1)
    return SimpleNamespace(
        is_fsdp_enabled=fsdp, is_deepspeed_enabled=deepspeed, args=SimpleNamespace(**{**defaults, **args})
    )


@pytest.mark.parametrize("launcher", ["FSDP", "DeepSpeed"])
def test_options_that_bypass_the_sharded_wrapper_are_refused(launcher):
    sharded = dict(fsdp=launcher == "FSDP", deepspeed=launcher == "DeepSpeed")
    assert is_sharded(trainer(**sharded)) and not is_sharded(trainer())
    with pytest.raises(ValueError, match=f"gradient_cache_mini_batch_size does not work under {launcher}"):
        check_sharded_training(trainer(**sharded, gradient_cache_mini_batch_size=4))
    with pytest.raises(ValueError, match=f"--nan_policy skip with gradient_accumulation_steps > 1 .* {launcher}"):
        check_sharded_training(trainer(**sharded, nan_policy="skip", gradient_accumulation_steps=2))
    check_sharded_training(trainer(**sharded, nan_policy="skip"))  # without accumulation no gradient is left over
    check_sharded_training(trainer(gradient_cache_mini_batch_size=4, nan_policy="skip", gradient_accumulation_steps=2))
