"""The shipped accelerate configs parse with accelerate's own loader and say what they promise."""

import pytest
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.utils import DistributedType

from tests.conftest import REPO_ROOT

CONFIGS = REPO_ROOT / "recipes" / "accelerate"


@pytest.mark.parametrize(
    "name,kind,machines",
    [
        ("single_gpu", DistributedType.NO, 1),
        ("multi_gpu", DistributedType.MULTI_GPU, 1),
        ("multi_node", DistributedType.MULTI_GPU, 2),
        ("fsdp", DistributedType.FSDP, 1),
        ("deepspeed_zero2", DistributedType.DEEPSPEED, 1),
        ("deepspeed_zero3", DistributedType.DEEPSPEED, 1),
    ],
)
def test_config_loads(name, kind, machines):
    config = load_config_from_file(str(CONFIGS / f"{name}.yaml"))
    assert config.distributed_type == kind and config.num_machines == machines
    assert config.num_processes % machines == 0
    # Documented where launches are: the several-GPUs guide names each shipped launcher config.
    assert f"hfsiamese configs --path {name})" in (REPO_ROOT / "docs" / "guides" / "several-gpus.md").read_text()


def test_sharded_configs_shard_as_documented():
    """FSDP2 wrapping what the encoder declares and saving full weights; the ZeRO stages; bf16 everywhere."""
    fsdp = load_config_from_file(str(CONFIGS / "fsdp.yaml"))
    assert fsdp.mixed_precision == "bf16" and fsdp.fsdp_config["fsdp_version"] == 2
    assert fsdp.fsdp_config["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
    assert "fsdp_transformer_layer_cls_to_wrap" not in fsdp.fsdp_config  # taken from the model's encoder
    assert fsdp.fsdp_config["fsdp_state_dict_type"] == "FULL_STATE_DICT"  # a plain model.safetensors
    for stage in (2, 3):
        config = load_config_from_file(str(CONFIGS / f"deepspeed_zero{stage}.yaml"))
        assert config.mixed_precision == "bf16" and config.deepspeed_config["zero_stage"] == stage
        # Left to the Trainer's arguments (DeepSpeed's "auto"): a value here would have to match them.
        assert not {"gradient_accumulation_steps", "gradient_clipping"} & set(config.deepspeed_config)
    zero3 = load_config_from_file(str(CONFIGS / "deepspeed_zero3.yaml")).deepspeed_config
    assert zero3["zero3_save_16bit_model"] is True and zero3["zero3_init_flag"] is False
