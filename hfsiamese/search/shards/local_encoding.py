"""
`encode_to_shards`: a corpus encoded into a shards folder in this process, or in every process of
`accelerate launch` (shard i goes to process i % num_processes; no communication beyond two barriers).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hfsiamese.search.shards.manifest import check_manifest, expected_manifest, prepare_folder
from hfsiamese.search.shards.model_encoding import encode_texts, encoding_dtype, model_fingerprint, resolve_model
from hfsiamese.search.shards.reader import EmbeddingShards
from hfsiamese.search.shards.shard_files import (
    present_shards,
    remove_partial_files,
    shard_path,
    shard_range,
    write_shard,
)

if TYPE_CHECKING:
    from hfsiamese.models.siamese.modeling_siamese import SiameseModel

logger = logging.getLogger(__name__)


def encode_to_shards(
    texts: Sequence[str],
    shards_dir: str | os.PathLike,
    model: SiameseModel | str,
    tokenizer: Any | None = None,
    *,
    shard_size: int = 100_000,
    batch_size: int = 256,
    max_length: int | None = None,
    truncate_dim: int | None = None,
    dtype: Any = None,
    show_progress_bar: bool = False,
) -> EmbeddingShards:
    """
    Embed `texts` into shard files in `shards_dir` (see `hfsiamese.search.shards`), skipping shards already there.

    Run it in one process, or in every process of `accelerate launch` with the same texts: shard i is
    encoded by process i % num_processes, each process on its own device (a model given as a path is
    loaded and moved to `accelerate.PartialState().device`; a model object is used where it is). Every
    process checks the folder's manifest against its own texts and model, so a process given other texts
    (an unseeded shuffle) fails instead of writing wrong shards. After an interruption, run it again
    with the same arguments: only the missing shards are encoded. On CPUs, the launched processes join as
    CPU processes; a script that sets up accelerate's state itself before this call must do so with
    `PartialState(cpu=True)` (or `Accelerator(cpu=True)`) there, else each process runs alone and this
    raises `ProcessGroupError`.

    Args:
        texts: the corpus; row numbers in the shards are positions in it.
        shards_dir: the folder of the shards (created if needed); reused only for the same corpus,
            shard size, model and encoding settings.
        model: a `SiameseModel` (or `OnnxSiameseModel`), or its folder / Hub id (`load_siamese_model`).
        tokenizer: the model's tokenizer; by default the one saved beside the model.
        shard_size: rows per shard: the work a crash can lose per process, and the memory one shard takes.
        batch_size, max_length, truncate_dim: as in `model.encode`.
        dtype: as in `model.encode`; None (default): the precision recorded in the folder's manifest where there
            is one, so a restart in another process encodes as the first did instead of deciding again (`encode`'s
            "auto" measures, and may flip between processes), else the model's (`set_encode_precision`) or the
            process's default. A dtype given, or fixed on the model, that differs from the folder's is refused.
        show_progress_bar: a tqdm bar of finished shards, on the main process.

    Returns:
        the finished shards, on every process.
    """
    check_options(shard_size, batch_size, max_length)
    state = _process_state()
    shards_dir = Path(shards_dir)
    model = resolve_model(model, state.device)

    def expected_here() -> tuple[dict[str, Any], Any]:
        chosen = encoding_dtype(model, shards_dir, dtype)
        fingerprint = model_fingerprint(model, tokenizer, max_length, truncate_dim, dtype=chosen)
        return expected_manifest(
            texts, shard_size, fingerprint, max_length=max_length, truncate_dim=truncate_dim
        ), chosen

    # The main process writes the manifest (or finds a mismatch, and leaves the folder alone); every process
    # then compares it with its own, so all of them raise rather than some waiting forever at a barrier. The
    # others decide their precision after it is written, from it: they encode as the main process does.
    failure = None
    if state.is_main_process:
        try:
            expected, chosen = expected_here()
            prepare_folder(shards_dir, expected)
        except Exception as err:  # noqa: BLE001  raised after the barrier, which the other processes are waiting at
            failure = err
    state.wait_for_everyone()
    if failure is not None:
        raise failure
    if not state.is_main_process:
        expected, chosen = expected_here()
    check_manifest(shards_dir, expected)

    total = expected["num_shards"]
    mine = [index for index in range(total) if index % state.num_processes == state.process_index]
    progress = progress_bar(shards_dir, total, show_progress_bar and state.is_main_process)
    skipped = 0
    try:
        for index in mine:
            if shard_path(shards_dir, index).is_file():
                skipped += 1
                continue
            start, end = shard_range(index, shard_size, len(texts))
            embeddings = encode_texts(model, tokenizer, texts, start, end, batch_size, max_length, truncate_dim, chosen)
            write_shard(shards_dir, index, start, embeddings)
            if progress is not None:
                progress.n = len(present_shards(shards_dir, total))  # all processes' shards, polled from the folder
                progress.refresh()
        if skipped:
            logger.info(
                "process %d: %d of its %d shards were already in %s",
                state.process_index,
                skipped,
                len(mine),
                shards_dir,
            )
        state.wait_for_everyone()
        if progress is not None:
            progress.n = total
            progress.refresh()
    finally:
        if progress is not None:
            progress.close()
    if state.is_main_process:
        remove_partial_files(shards_dir)  # of processes killed in an earlier run: nobody is writing now
    state.wait_for_everyone()
    return EmbeddingShards.open(shards_dir)


def _process_state() -> Any:
    """
    accelerate's state of this process, checked to be one of the group the launcher started. Without GPUs the
    processes of `accelerate launch` join as CPU processes (accelerate itself does so only with
    ACCELERATE_USE_CPU=1, and each process would otherwise run alone and encode every shard).
    """
    import torch
    from accelerate import PartialState

    from hfsiamese.utils.process_group import check_process_group

    cpu = os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes") or not torch.cuda.is_available()
    state = PartialState(cpu=cpu)
    check_process_group(state.num_processes)
    return state


def progress_bar(shards_dir: Path, total: int, show: bool) -> Any:
    """A tqdm bar of the finished shards (those already in the folder counted in), or None where not `show`."""
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=len(present_shards(shards_dir, total)), desc="Encoding shards", unit="shard")


def check_options(shard_size: int, batch_size: int, max_length: int | None = None) -> None:
    """A one-line error for a `shard_size`, `batch_size` or `max_length` (None: the model's) that is not a positive
    integer, before the folder is made."""
    for name, value in (("shard_size", shard_size), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1):
        raise ValueError(f"max_length must be a positive integer or None, got {max_length!r}")
