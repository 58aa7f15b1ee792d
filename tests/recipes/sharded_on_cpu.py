"""
Run recipes/train.py under accelerate's FSDP or DeepSpeed state on CPU processes (test_sharded_launchers.py).

accelerate runs FSDP and DeepSpeed on GPUs only: with ACCELERATE_USE_CPU=1 its state is MULTI_CPU, and the
FSDP/DeepSpeed settings the launcher read from `--config_file` are ignored (the run is plain DDP). Started
by `accelerate launch --config_file recipes/accelerate/<config>.yaml`, this script changes one thing: right
after accelerate builds its state from those settings, it sets the distributed type accelerate sets on GPUs
(FSDP with the launcher's FSDP plugin, or DEEPSPEED with DeepSpeed's communication over gloo). Everything
else is the real code: the plugins built from the config, accelerate's `prepare` (`fully_shard` or
`deepspeed.initialize`), the Trainer's step and save. Then it runs the recipe script unchanged, and prints
on process 0 one line naming the prepared model and one of its parameters, so the test sees the sharding.
"""

from __future__ import annotations

import hfsiamese  # noqa: F401  first, as in the recipe (which applies the commands' defaults when run below)

# isort: split
import runpy
import sys
from pathlib import Path

from accelerate.state import AcceleratorState, PartialState
from accelerate.utils import DistributedType

TRAIN = Path(__file__).resolve().parents[2] / "recipes" / "train.py"
_state_init = AcceleratorState.__init__


def _init_as_on_gpus(self, *args, deepspeed_plugin=None, fsdp_plugin=None, **kwargs):
    _state_init(self, *args, deepspeed_plugin=deepspeed_plugin, fsdp_plugin=fsdp_plugin, **kwargs)
    if self.distributed_type != DistributedType.MULTI_CPU:
        return
    if fsdp_plugin is not None:
        self.distributed_type = DistributedType.FSDP
        self.fsdp_plugin = fsdp_plugin
    elif deepspeed_plugin is not None:
        import deepspeed
        import deepspeed.ops

        # DeepSpeed's CPU backend would first build its shared-memory all-reduce with the C++ compiler (about 50 s
        # on 2 cores, once per environment). It serves inference's all-reduce only: training reduces through
        # torch.distributed (gloo here), the path these runs compare, with or without it.
        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
        deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)  # joins the gloo group formed
        self.distributed_type = DistributedType.DEEPSPEED
        deepspeed_plugin.set_mixed_precision(self._mixed_precision)
        deepspeed_plugin.select(_from_accelerator_state=True)
        self.deepspeed_plugins = deepspeed_plugin
    else:
        return
    PartialState._shared_state["distributed_type"] = self.distributed_type  # as accelerate's own init does


def _report_prepared_model() -> None:
    from hfsiamese.bi_encoder.trainer import SiameseTrainer

    step = SiameseTrainer.training_step

    def training_step(self, model, inputs, num_items_in_batch=None):
        if not getattr(self, "_reported_model", False) and self.is_world_process_zero():
            self._reported_model = True
            parameter = next(model.parameters())
            print(f"prepared: {type(model).__name__} {type(parameter).__name__} {tuple(parameter.shape)}", flush=True)
        return step(self, model, inputs, num_items_in_batch)

    SiameseTrainer.training_step = training_step


if __name__ == "__main__":
    AcceleratorState.__init__ = _init_as_on_gpus
    _report_prepared_model()
    sys.argv = [str(TRAIN), *sys.argv[1:]]
    try:
        runpy.run_path(str(TRAIN), run_name="__main__")
    finally:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():  # torn down here, not by interpreter exit's order
            dist.destroy_process_group()
