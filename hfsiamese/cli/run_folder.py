"""The output folder of a training run, claimed before anything is read or written: named, checked and locked.

Both training recipes (`hfsiamese train`, `hfsiamese distill`) start this way, so a run that was not
given `--output_dir` gets a folder named after it (`hfsiamese.utils.output_dirs.run_name`), a folder that
holds another run's files is refused unless the user asked to overwrite or resume, and a second run
on a folder that a live run holds stops at once (`hfsiamese.utils.run_lock`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hfsiamese.cli.config_and_flags import config_file_of, read_config_file, value_given
from hfsiamese.utils.output_dirs import ensure_writable_output_dir, run_name, run_output_dir
from hfsiamese.utils.process_group import check_process_group
from hfsiamese.utils.run_lock import RunLock


def claim_output_dir(
    training_args: Any,
    data_args: Any,
    argv: Sequence[str],
    default_config: str | Path | None,
    *,
    trained_with: str | None = None,
) -> RunLock:
    """
    Check that the launched processes formed one group, set `training_args.output_dir` when the user
    gave none (in place), check it on the process that writes it, and return its lock — acquired there;
    release it when the run ends (`RunLock` is a context manager too). `trained_with` names what trains
    instead of `--loss` (a cross-encoder run: "cross_encoder"): a config of that kind is named alone
    (`outputs/cross_minilm_qqp`), a data file with it (`outputs/pairs-cross_encoder`).
    """
    # Processes that did not join one group would race on the output folder.
    check_process_group(training_args.world_size)
    resuming = training_args.resume_from_checkpoint is not None
    config_file = config_file_of(argv, default_config)
    if not value_given("output_dir", argv, config_file):
        loss = trained_with or training_args.loss
        name = run_name(
            config_file,
            data_args.train_file or data_args.dataset_source,
            loss,
            config_loss=read_config_file(config_file).get("loss", trained_with) if config_file else None,
        )
        training_args.output_dir = str(run_output_dir(name, reuse=resuming or training_args.overwrite_output_dir))
    lock = RunLock(training_args.output_dir, enabled=training_args.should_save)
    if training_args.should_save:  # the one process that writes the folder checks and locks it
        ensure_writable_output_dir(
            training_args.output_dir, overwrite=training_args.overwrite_output_dir, resuming=resuming
        )
        lock.acquire()
    return lock


__all__ = ["claim_output_dir"]
