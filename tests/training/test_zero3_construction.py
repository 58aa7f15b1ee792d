"""Under DeepSpeed ZeRO-3 with zero3_init_flag false, the model is built whole (DeepSpeed shards it later)."""

from __future__ import annotations

from types import SimpleNamespace

from transformers.integrations import deepspeed as hf_deepspeed

from hfsiamese.training.zero3_construction import built_whole_under_zero3


class Zero3Config:
    """Stands for transformers' HfDeepSpeedConfig of a ZeRO-3 run (deepspeed itself is not needed here)."""

    def is_zero3(self) -> bool:
        return True


def test_transformers_sees_no_zero3_while_the_model_is_built_then_sees_it_again():
    config = Zero3Config()
    hf_deepspeed.set_hf_deepspeed_config(config)
    try:
        for init_flag, partitioned_while_building in ((False, False), (True, True)):
            plugin = SimpleNamespace(zero3_init_flag=init_flag, hf_ds_config=config)
            with built_whole_under_zero3(SimpleNamespace(deepspeed_plugin=plugin)):
                assert hf_deepspeed.is_deepspeed_zero3_enabled() is partitioned_while_building
            assert hf_deepspeed.is_deepspeed_zero3_enabled()
        with built_whole_under_zero3(SimpleNamespace(deepspeed_plugin=None)):  # no DeepSpeed: nothing changes
            assert hf_deepspeed.is_deepspeed_zero3_enabled()
    finally:
        hf_deepspeed.unset_hf_deepspeed_config()
