"""
`encode_to_shards_ray`: a corpus encoded into a shards folder by Ray actors, on this machine or on a cluster
(the `ray` extra). It writes the same files and manifest as `encode_to_shards`, so a folder begun one way
can be finished the other.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hfsiamese.search.shards.local_encoding import check_options, progress_bar
from hfsiamese.search.shards.manifest import check_manifest, expected_manifest, prepare_folder
from hfsiamese.search.shards.model_encoding import encode_texts, encoding_dtype, model_fingerprint, resolve_model
from hfsiamese.search.shards.reader import EmbeddingShards
from hfsiamese.search.shards.shard_files import present_shards, remove_partial_files, shard_range, write_shard
from hfsiamese.utils.extras import install_hint
from hfsiamese.utils.ray_usage_stats import ray_usage_stats_off_unless_chosen

logger = logging.getLogger(__name__)


def encode_to_shards_ray(
    texts: Sequence[str],
    shards_dir: str | os.PathLike,
    model_name_or_path: str | os.PathLike,
    *,
    num_workers: int = 2,
    address: str | None = None,
    worker_options: dict[str, Any] | None = None,
    shard_size: int = 100_000,
    batch_size: int = 256,
    max_length: int | None = None,
    truncate_dim: int | None = None,
    dtype: Any = None,
    show_progress_bar: bool = False,
) -> EmbeddingShards:
    """
    `encode_to_shards` with Ray: `num_workers` actors each load the model once and encode whole shards,
    the next missing shard going to whichever actor is free. The files and the manifest are the same, so
    a folder begun by one way can be finished by the other.

    With `address=None` a local Ray is started for the call (`num_workers` CPUs) and shut down after;
    with Ray already initialised in this process, that one is used and left running. With an address
    (`"auto"`, `"ray://head:10001"`), the actors run on that cluster: then `shards_dir` must be on
    storage every machine sees at the same path (NFS, a shared volume), and `model_name_or_path` a Hub id
    or a folder every machine has, since the actors write the shards and load the model themselves.
    The driver sends each actor only the texts of its shard.

    `worker_options` go to each actor's `.options()`: `{"num_gpus": 1}` gives each actor a GPU (it then
    encodes there), `{"num_cpus": 4}` more CPU threads; the default is one CPU per actor. The tokenizer
    is the one saved beside the model. The other arguments are `encode_to_shards`'.
    """
    ray = import_ray()
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"num_workers must be a positive integer, got {num_workers!r}")
    check_options(shard_size, batch_size, max_length)
    shards_dir = Path(shards_dir)
    model_name_or_path = str(model_name_or_path)
    options = {"num_cpus": 1, **(worker_options or {})}
    started = not ray.is_initialized()
    if started:
        if address is None:
            # As many CPUs as the actors ask for: with fewer, the ones that do not fit would wait forever.
            num_cpus = max(num_workers, math.ceil(num_workers * options["num_cpus"]))
            with ray_usage_stats_off_unless_chosen():
                ray.init(num_cpus=num_cpus, include_dashboard=False, logging_level=logging.WARNING)
        else:
            ray.init(address=address, logging_level=logging.WARNING)
    try:
        return _run_ray_actors(ray, texts, shards_dir, model_name_or_path, num_workers, options,
                               shard_size, batch_size, max_length, truncate_dim, dtype, show_progress_bar)  # fmt: skip
    finally:
        if started:
            ray.shutdown()


def _run_ray_actors(
    ray: Any,
    texts: Sequence[str],
    shards_dir: Path,
    model_name_or_path: str,
    num_workers: int,
    worker_options: dict[str, Any],
    shard_size: int,
    batch_size: int,
    max_length: int | None,
    truncate_dim: int | None,
    dtype: Any,
    show_progress_bar: bool,
) -> EmbeddingShards:
    # Plain actors rather than Ray Data: the unit of work is a whole shard whose result is a file written as a
    # side effect, which an ActorPool expresses directly (one model load per actor, the next shard to whichever
    # actor is free, an actor's exception raised here as it is). Ray Data's `map_batches` would cut the shard
    # descriptors into blocks, stream their (empty) outputs back and budget resources of its own, none of
    # which this needs. A shard write is atomic and idempotent, so an actor lost with its machine is
    # restarted and its shard redone (`max_restarts`, `max_task_retries`); an error raised by the encoding
    # itself is not retried.
    from ray.util import ActorPool

    options = {"max_restarts": 3, "max_task_retries": 3, **worker_options}
    actor_class = ray.remote(ShardEncoder).options(**options)
    # Every actor encodes in one precision: the folder's recorded one, else the first actor's (decided once, there).
    first = actor_class.remote(model_name_or_path, batch_size, max_length, truncate_dim, str(shards_dir), dtype)
    try:
        chosen = ray.get(first.chosen_dtype.remote())
    except BaseException:
        ray.kill(first)
        raise
    actors = [first] + [actor_class.remote(model_name_or_path, batch_size, max_length, truncate_dim, str(shards_dir), chosen)
                        for _ in range(num_workers - 1)]  # fmt: skip
    try:
        fingerprint = ray.get(actors[0].fingerprint.remote())
        expected = expected_manifest(texts, shard_size, fingerprint, max_length=max_length, truncate_dim=truncate_dim)
        prepare_folder(shards_dir, expected)
        check_manifest(shards_dir, expected)
        total = expected["num_shards"]
        done = present_shards(shards_dir, total)
        todo = [index for index in range(total) if index not in done]
        logger.info("%d of %d shards already in %s; encoding %d with %d Ray actors", len(done), total, shards_dir,
                    len(todo), num_workers)  # fmt: skip
        progress = progress_bar(shards_dir, total, show_progress_bar)
        pool = ActorPool(actors)
        try:

            def submit(actor: Any, index: int) -> Any:
                # Called when an actor is free: only the texts of shards in flight are copied to Ray's object store.
                start, end = shard_range(index, shard_size, len(texts))
                return actor.encode_shard.remote(str(shards_dir), index, start, list(texts[start:end]))

            for index in todo:
                pool.submit(submit, index)
            while pool.has_next():
                pool.get_next_unordered()
                if progress is not None:
                    progress.update(1)
        finally:
            if progress is not None:
                progress.close()
    finally:
        for actor in actors:
            ray.kill(actor)
    remove_partial_files(shards_dir)
    return EmbeddingShards.open(shards_dir)


class ShardEncoder:
    """A Ray actor (made one by `ray.remote` in `encode_to_shards_ray`): loads the model once, encodes and writes shards."""

    def __init__(
        self,
        model_name_or_path: str,
        batch_size: int,
        max_length: int | None,
        truncate_dim: int | None,
        shards_dir: str,
        dtype: Any = None,
    ) -> None:
        import ray

        device = "cuda" if ray.get_gpu_ids() else "cpu"  # Ray sets CUDA_VISIBLE_DEVICES to the actor's GPUs
        self.model = resolve_model(model_name_or_path, device)
        self.batch_size, self.max_length, self.truncate_dim = batch_size, max_length, truncate_dim
        self.dtype = encoding_dtype(self.model, Path(shards_dir), dtype)

    def chosen_dtype(self) -> Any:
        return self.dtype

    def fingerprint(self) -> dict[str, Any]:
        return model_fingerprint(self.model, None, self.max_length, self.truncate_dim, dtype=self.dtype)

    def encode_shard(self, shards_dir: str, index: int, start: int, texts: list[str]) -> int:
        embeddings = encode_texts(
            self.model, None, texts, 0, len(texts), self.batch_size, self.max_length, self.truncate_dim, self.dtype
        )
        write_shard(Path(shards_dir), index, start, embeddings)
        return index


def import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise ImportError(
            f"encode_to_shards_ray needs Ray: {install_hint('ray')}; or use encode_to_shards, under accelerate launch "
            "for several processes"
        ) from err
    return ray
