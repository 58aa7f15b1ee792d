"""Did the launched processes form one group? A launch whose processes each run alone loses the model.

`accelerate launch --multi_gpu --num_processes 2` on a machine without GPUs (and without
ACCELERATE_USE_CPU=1) starts two processes that each set up as "process 0 of 1": two independent
trainings that race on one output folder and both exit 0. The launcher's environment (WORLD_SIZE,
set by torchrun for every process it starts) says how many processes there should be; accelerate's
state says how many joined. They must agree before anything is trained or written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


class ProcessGroupError(RuntimeError):
    """The launcher started several processes, but they did not join one process group."""


def launched_world_size(env: Mapping[str, str] | None = None) -> int:
    """How many processes the launcher started (torchrun's WORLD_SIZE; 1 without a launcher)."""
    env = os.environ if env is None else env
    value = env.get("WORLD_SIZE", "").strip()
    return int(value) if value.isdigit() else 1


def check_process_group(num_processes: int, env: Mapping[str, str] | None = None) -> None:
    """
    Raise `ProcessGroupError` when the launcher started more processes than joined accelerate's
    group (`num_processes`, e.g. `PartialState().num_processes` or `TrainingArguments.world_size`).
    """
    launched = launched_world_size(env)
    if launched <= 1 or num_processes == launched:
        return
    env = os.environ if env is None else env
    if num_processes == 1:
        problem = "each of them runs alone as process 0 of 1 and they would overwrite each other's output"
    else:
        problem = f"only {num_processes} joined one process group"
    hint = (
        "on a machine without GPUs set ACCELERATE_USE_CPU=1 (ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu "
        f"--num_processes {launched} ...); with GPUs give each process one (--num_processes at most the GPU count)"
    )
    if env.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes"):
        hint = "check that every process can reach MASTER_ADDR:MASTER_PORT"
    raise ProcessGroupError(f"the launcher started {launched} processes (WORLD_SIZE={launched}) but {problem}: {hint}")


__all__ = ["ProcessGroupError", "check_process_group", "launched_world_size"]
