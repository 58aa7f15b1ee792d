"""
Embedding a corpus too large for one process or one sitting: in shards, by several processes or machines, resumably.

A corpus of millions of texts takes hours to embed; a crash, a preempted machine or a Ctrl-C then must not cost
the hours already spent, and several GPUs (or machines) should share the work without talking to each other.
So the corpus is cut into shards of `shard_size` consecutive rows, and each shard is one Parquet file in a
shards folder, written under a temporary name and moved into place whole (`os.replace`): a file named
`shard-00000.parquet` is complete, and whoever finds it there skips that shard. A rerun after a crash
redoes only the shards whose file is missing (at most the one each process had in progress).

    shards.json            format version, corpus fingerprint (count + sha256 of the texts), shard size,
                           embedding size, encoding settings, model fingerprint (probe embeddings)
    shard-00000.parquet    columns `row` (int64, corpus row numbers) and `embedding`
    shard-00001.parquet    (fixed_size_list<float32>[dim]), rows [i * shard_size, (i + 1) * shard_size)
    ...

The manifest is what makes resuming safe: shards of another corpus, shard size or model in the same folder
would be silently mixed into one matrix, so a rerun that differs is refused and told to use another folder.

Two ways to run it, writing the same files:
  * `encode_to_shards`: in this process, or in every process of `accelerate launch` (shard i goes to
    process i % num_processes; no communication beyond two barriers);
  * `encode_to_shards_ray`: Ray actors on this machine or on a cluster (the `ray` extra).
`EmbeddingShards` reads a finished folder back: by batches in row order, or assembled into one `.npy` file
(memory-mapped, written shard by shard, so the corpus never has to fit in memory).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hfsiamese.search.embedding_table import write_npy_rows
from hfsiamese.utils.extras import install_hint

if TYPE_CHECKING:
    from hfsiamese.models.siamese.modeling_siamese import SiameseModel

logger = logging.getLogger(__name__)

MANIFEST_NAME = "shards.json"
FORMAT_VERSION = 1
SHARD_PATTERN = "shard-*.parquet"
PARTIAL_SUFFIX = ".partial"
# Texts every run embeds with its model, saved in the manifest: a rerun with another model (or the same
# folder retrained in place) embeds them differently and is refused, while the same weights moved to another
# folder, machine or device pass. The same model on CPU and GPU agrees to ~1e-6; an int8 or bf16 variant
# (~0.97-0.999) does not pass, since its shards would not be comparable with the others at full precision.
PROBE_TEXTS = ("How do I learn Python?", "What is the capital of France?")
SAME_MODEL_MIN_COSINE = 0.9999
_MANIFEST_KEYS = ("format_version", "num_texts", "corpus_sha256", "shard_size", "embedding_dim", "encoding", "model")


# --------------------------------------------------------------------------------------------
# Reading a finished folder
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EmbeddingShards:
    """
    A complete shards folder (see the module docstring): its manifest checked and every shard present.

    `iter_batches` reads the embeddings in row order, shard by shard; `write_npy` assembles them into one
    `.npy` file without holding more than a shard in memory; `to_numpy` returns them all (small corpora).
    """

    shards_dir: Path
    num_texts: int
    shard_size: int
    embedding_dim: int
    manifest: dict[str, Any] = field(repr=False)

    @classmethod
    def open(cls, shards_dir: str | os.PathLike) -> EmbeddingShards:
        """The shards in `shards_dir`; an error if its manifest is missing or damaged, or any shard is missing."""
        path = Path(shards_dir)
        manifest = read_manifest(path)
        if manifest is None:
            raise FileNotFoundError(f"{path / MANIFEST_NAME} is missing: {path} is not a folder of embedding shards")
        shards = cls(path, manifest["num_texts"], manifest["shard_size"], manifest["embedding_dim"], manifest)
        missing = [index for index in range(shards.num_shards) if not shard_path(path, index).is_file()]
        if missing:
            names = ", ".join(shard_path(path, index).name for index in missing[:3]) + (
                ", ..." if len(missing) > 3 else ""
            )
            raise FileNotFoundError(
                f"{len(missing)} of {shards.num_shards} shards are missing in {path} ({names}): run the encoding again "
                "with the same texts, model and shard_size, it resumes and encodes only those"
            )
        return shards

    @property
    def num_shards(self) -> int:
        return num_shards(self.num_texts, self.shard_size)

    def shard_paths(self) -> list[Path]:
        return [shard_path(self.shards_dir, index) for index in range(self.num_shards)]

    def iter_batches(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """`(rows, embeddings)` of each shard in turn, in row order: int64 `(n,)` and float32 `(n, embedding_dim)`."""
        pool = pa.default_memory_pool()
        for index, path in enumerate(self.shard_paths()):
            yield read_shard(path, shard_rows(index, self.shard_size, self.num_texts), self.embedding_dim)
            # Arrow's allocator keeps freed shards for reuse: without this, reading 40 shards of a 10M corpus
            # one after the other had held ~15 GB (measured: 2 GB resident after 1M rows, 0.7 GB with it).
            pool.release_unused()

    def write_npy(self, path: str | os.PathLike) -> np.memmap:
        """
        All embeddings in row order as a float32 `(num_texts, embedding_dim)` `.npy` file at `path`, written
        shard by shard (under a temporary name, moved into place when complete), and returned opened
        read-only and memory-mapped.
        """
        path = Path(path)
        partial = _partial_name(path)
        try:
            # iter_batches checks that each shard holds its consecutive range of rows, in order.
            write_npy_rows(partial, (self.num_texts, self.embedding_dim), (batch for _, batch in self.iter_batches()))
            os.replace(partial, path)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        return np.load(path, mmap_mode="r")

    def to_numpy(self) -> np.ndarray:
        """All embeddings in row order, in memory: float32 `(num_texts, embedding_dim)`."""
        result = np.empty((self.num_texts, self.embedding_dim), dtype=np.float32)
        for rows, embeddings in self.iter_batches():
            result[rows[0] : rows[-1] + 1] = embeddings
        return result


# --------------------------------------------------------------------------------------------
# Encoding in this process, or in every process of `accelerate launch`
# --------------------------------------------------------------------------------------------
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
    Embed `texts` into shard files in `shards_dir` (see the module docstring), skipping shards already there.

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
    _check_options(shard_size, batch_size)
    state = _process_state()
    shards_dir = Path(shards_dir)
    model = _resolve_model(model, state.device)

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
            _prepare_folder(shards_dir, expected)
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
    progress = _progress_bar(shards_dir, total, show_progress_bar and state.is_main_process)
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


def _resolve_model(model: Any, device: Any) -> Any:
    if isinstance(model, (str, os.PathLike)):
        from hfsiamese.loading import load_siamese_model

        loaded = load_siamese_model(model)
        return loaded.to(device) if hasattr(loaded, "to") else loaded  # an ONNX model runs where its session does
    if not hasattr(model, "encode"):
        raise TypeError(f"model must be a SiameseModel (or its folder), got {type(model).__name__}")
    return model


def _progress_bar(shards_dir: Path, total: int, show: bool) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=len(present_shards(shards_dir, total)), desc="Encoding shards", unit="shard")


# --------------------------------------------------------------------------------------------
# Encoding with Ray actors
# --------------------------------------------------------------------------------------------
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
    _check_options(shard_size, batch_size)
    shards_dir = Path(shards_dir)
    model_name_or_path = str(model_name_or_path)
    options = {"num_cpus": 1, **(worker_options or {})}
    started = not ray.is_initialized()
    if started:
        if address is None:
            # As many CPUs as the actors ask for: with fewer, the ones that do not fit would wait forever.
            num_cpus = max(num_workers, math.ceil(num_workers * options["num_cpus"]))
            with _ray_usage_stats_off_unless_chosen():
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
        _prepare_folder(shards_dir, expected)
        check_manifest(shards_dir, expected)
        total = expected["num_shards"]
        done = present_shards(shards_dir, total)
        todo = [index for index in range(total) if index not in done]
        logger.info("%d of %d shards already in %s; encoding %d with %d Ray actors", len(done), total, shards_dir,
                    len(todo), num_workers)  # fmt: skip
        progress = _progress_bar(shards_dir, total, show_progress_bar)
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
        self.model = _resolve_model(model_name_or_path, device)
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


USAGE_STATS_VARIABLE = "RAY_USAGE_STATS_ENABLED"


@contextlib.contextmanager
def _ray_usage_stats_off_unless_chosen() -> Iterator[None]:
    """
    A local Ray started here sends no usage statistics over the network unless the user chose to
    (RAY_USAGE_STATS_ENABLED set, honoured as it is). Ray reads only its environment, which the processes it
    starts inherit, and `ray.init` takes no such argument: the variable is set for the start and removed
    after, so the caller's environment is as it was.
    """
    if USAGE_STATS_VARIABLE in os.environ:
        yield
        return
    os.environ[USAGE_STATS_VARIABLE] = "0"
    try:
        yield
    finally:
        os.environ.pop(USAGE_STATS_VARIABLE, None)


def import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise ImportError(
            f"encode_to_shards_ray needs Ray: {install_hint('ray')}; or use encode_to_shards, under accelerate launch "
            "for several processes"
        ) from err
    return ray


# --------------------------------------------------------------------------------------------
# Shards, the manifest and the fingerprints (shared by both ways)
# --------------------------------------------------------------------------------------------
def num_shards(num_texts: int, shard_size: int) -> int:
    return -(-num_texts // shard_size)


def shard_range(index: int, shard_size: int, num_texts: int) -> tuple[int, int]:
    """`(start, end)` rows of shard `index`."""
    return index * shard_size, min((index + 1) * shard_size, num_texts)


def shard_rows(index: int, shard_size: int, num_texts: int) -> range:
    return range(*shard_range(index, shard_size, num_texts))


def shard_path(shards_dir: Path, index: int) -> Path:
    return shards_dir / f"shard-{index:05d}.parquet"


def present_shards(shards_dir: Path, total: int) -> set[int]:
    """Indices (below `total`) of the shard files in `shards_dir`: each one is complete, as it was moved in whole."""
    names = {shard_path(shards_dir, index).name: index for index in range(total)}
    try:
        return {names[entry.name] for entry in os.scandir(shards_dir) if entry.name in names}
    except FileNotFoundError:
        return set()


def encode_texts(
    model: Any,
    tokenizer: Any | None,
    texts: Sequence[str],
    start: int,
    end: int,
    batch_size: int,
    max_length: int | None,
    truncate_dim: int | None,
    dtype: Any = None,
) -> np.ndarray:
    """float32 `(end - start, dim)` embeddings of `texts[start:end]`, encoded in `dtype` (see `encoding_dtype`)."""
    embeddings = model.encode(list(texts[start:end]), tokenizer, batch_size=batch_size, max_length=max_length,
                              truncate_dim=truncate_dim, **_dtype_kwargs(dtype))  # fmt: skip
    return np.ascontiguousarray(embeddings.float().cpu().numpy(), dtype=np.float32)


def write_shard(shards_dir: Path, index: int, start: int, embeddings: np.ndarray) -> Path:
    """
    Write shard `index` (rows `start`, `start + 1`, ...) under a temporary name beside its final one, flushed to
    disk, and move it into place: a process killed while writing leaves a `.partial` file that never counts.
    """
    count, dim = embeddings.shape
    table = pa.table(
        {
            "row": pa.array(np.arange(start, start + count, dtype=np.int64)),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(embeddings.reshape(-1), type=pa.float32()), dim),
        }
    )
    final = shard_path(shards_dir, index)
    partial = _partial_name(final)
    try:
        with open(partial, "wb") as handle:
            pq.write_table(table, handle, compression="none")  # embeddings hardly compress; spare the CPU
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, final)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return final


def read_shard(path: Path, rows: range, embedding_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """`(rows, embeddings)` of a shard file, checked to hold exactly `rows` at `embedding_dim`."""
    remedy = "delete it and run the encoding again, which re-encodes it"
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as err:
        raise ValueError(f"{path} is corrupted (cannot be read as Parquet: {err}); {remedy}") from err
    column_type = table.schema.field("embedding").type if "embedding" in table.schema.names else None
    expected_type = pa.list_(pa.float32(), embedding_dim)
    if "row" not in table.schema.names or column_type != expected_type:
        raise ValueError(
            f"{path} should have the columns 'row' and 'embedding' ({expected_type}), found {table.schema}; {remedy}"
        )
    found = table.column("row").to_numpy()
    if len(found) != len(rows) or (len(found) and (found[0] != rows.start or np.any(np.diff(found) != 1))):
        raise ValueError(f"{path} should hold rows {rows.start} to {rows.stop - 1}; {remedy}")
    embeddings = table.column("embedding").combine_chunks().flatten().to_numpy().reshape(len(found), embedding_dim)
    return found.astype(np.int64, copy=False), embeddings


def corpus_fingerprint(texts: Sequence[str]) -> str:
    """sha256 over the texts in order (each one's UTF-8 length, then its bytes): streamed, one text at a time."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, not a single string: wrap it in a list")
    digest = hashlib.sha256()
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{position}] is {type(text).__name__}, not a string")
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


# The manifest's names of the precisions (`EncodePrecision.name`), and the autocast type of each.
PRECISIONS = {"fp32": "float32", "bf16 autocast": "bfloat16"}


def encoding_dtype(model: Any, shards_dir: Path, dtype: Any = None) -> Any:
    """
    The dtype every `encode` call of a sharded encoding passes: `dtype` where given, else the precision fixed on the
    model (`set_encode_precision`), else the one recorded in the folder's manifest (written by the first process
    that encoded into it: a restart reuses it rather than deciding, or measuring, again), else what `encode` uses
    by default here. A torch dtype (float32 for float32), or None for a model without PyTorch precisions (ONNX).
    """
    if not hasattr(model, "resolve_encode_dtype"):
        return None
    import torch

    fixed = model.fixed_encode_precision() if hasattr(model, "fixed_encode_precision") else None
    if dtype is None and fixed is None and not _exported_precision(model):
        try:
            saved = read_manifest(shards_dir)
        except (OSError, ValueError):
            saved = None  # the main process reports a damaged manifest
        if saved is not None:
            recorded = saved["model"].get("precision", "fp32")  # folders written before it was recorded: fp32
            if recorded in PRECISIONS:
                return getattr(torch, PRECISIONS[recorded])
    resolved = model.resolve_encode_dtype(dtype)
    return torch.float32 if resolved is None else resolved


def _exported_precision(model: Any) -> bool:
    """An ONNX model: its precision was fixed at export, `encode` takes no autocast type."""
    return getattr(getattr(model, "config", None), "onnx", None) is not None


def _dtype_kwargs(dtype: Any) -> dict[str, Any]:
    return {} if dtype is None else {"dtype": dtype}


def model_fingerprint(
    model: Any, tokenizer: Any | None, max_length: int | None, truncate_dim: int | None, *, dtype: Any = None
) -> dict[str, Any]:
    """The model's name, the precision it encodes in, and its embeddings of `PROBE_TEXTS` under these encoding settings."""
    probes = model.encode(list(PROBE_TEXTS), tokenizer, max_length=max_length, truncate_dim=truncate_dim,
                          **_dtype_kwargs(dtype)).float().cpu()  # fmt: skip
    resolved = model.resolve_encode_dtype(dtype) if hasattr(model, "resolve_encode_dtype") else None
    precision = (
        "fp32" if resolved is None else "bf16 autocast" if str(resolved) == "torch.bfloat16" else f"{resolved} autocast"
    )
    return {
        "name_or_path": str(getattr(model, "name_or_path", "") or ""),
        "precision": precision,  # what this encoding runs in (`encoding_dtype`)
        "embedding_dim": int(probes.shape[1]),
        "probe_texts": list(PROBE_TEXTS),
        "probe_embeddings": [[round(value, 7) for value in row] for row in probes.tolist()],
    }


def expected_manifest(
    texts: Sequence[str],
    shard_size: int,
    fingerprint: dict[str, Any],
    *,
    max_length: int | None,
    truncate_dim: int | None,
) -> dict[str, Any]:
    """The manifest of encoding `texts` with the fingerprinted model."""
    sha256 = corpus_fingerprint(texts)  # also refuses a single string and non-strings, naming the position
    if len(texts) == 0:
        raise ValueError("texts is empty: there is nothing to encode")
    return {
        "format_version": FORMAT_VERSION,
        "num_texts": len(texts),
        "corpus_sha256": sha256,
        "shard_size": shard_size,
        "num_shards": num_shards(len(texts), shard_size),
        "embedding_dim": fingerprint["embedding_dim"],
        "encoding": {"max_length": max_length, "truncate_dim": truncate_dim},
        "model": {key: value for key, value in fingerprint.items() if key != "embedding_dim"},
    }


def read_manifest(shards_dir: Path) -> dict[str, Any] | None:
    """The manifest in `shards_dir`, or None where there is none; an error for a damaged one."""
    file = shards_dir / MANIFEST_NAME
    if not file.is_file():
        return None
    remedy = f"delete {shards_dir} to start over, or encode into another folder"
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{file} is corrupted (not valid JSON: {err}); {remedy}") from err
    if not isinstance(manifest, dict) or any(key not in manifest for key in _MANIFEST_KEYS):
        missing = [key for key in _MANIFEST_KEYS if not isinstance(manifest, dict) or key not in manifest]
        raise ValueError(f"{file} is not an embedding shards manifest: missing {missing}; {remedy}")
    if manifest["format_version"] != FORMAT_VERSION:
        raise ValueError(
            f"{file} has format version {manifest['format_version']}; this hfsiamese reads version {FORMAT_VERSION}: {remedy}"
        )
    return manifest


def check_manifest(shards_dir: Path, expected: dict[str, Any]) -> None:
    """Refuse a folder whose manifest differs from `expected` (another corpus, shard size, model or setting)."""
    saved = read_manifest(shards_dir)
    if saved is None:
        raise FileNotFoundError(
            f"{shards_dir / MANIFEST_NAME} is missing: the main process writes it before any shard (see its error)"
        )
    difference = manifest_difference(saved, expected)
    if difference:
        raise ValueError(
            f"{shards_dir} holds shards of {difference}: encode into another folder, or delete {shards_dir} to start over"
        )


def manifest_difference(saved: dict[str, Any], expected: dict[str, Any]) -> str | None:
    """What differs between a saved manifest and this run's, in words; None where they agree."""
    if saved["num_texts"] != expected["num_texts"] or saved["corpus_sha256"] != expected["corpus_sha256"]:
        return (
            f"another corpus ({saved['num_texts']} texts, sha256 {saved['corpus_sha256'][:12]}; these are "
            f"{expected['num_texts']} texts, sha256 {expected['corpus_sha256'][:12]})"
        )
    if saved["shard_size"] != expected["shard_size"]:
        return f"shard_size={saved['shard_size']}, not {expected['shard_size']} (pass shard_size={saved['shard_size']} to resume)"
    if saved["encoding"] != expected["encoding"]:
        return f"another encoding ({_settings(saved['encoding'])}; this run: {_settings(expected['encoding'])})"
    before, now = saved["model"], expected["model"]
    names = f"{before.get('name_or_path')!r}, not this model {now.get('name_or_path')!r}"
    if saved["embedding_dim"] != expected["embedding_dim"]:
        return f"another model ({names}: {saved['embedding_dim']} dimensions, not {expected['embedding_dim']})"
    if before.get("precision", "fp32") != now.get("precision", "fp32"):  # folders written before it was recorded: fp32
        return (
            f"another precision ({before.get('precision', 'fp32')}; this process encodes in {now.get('precision')}, as "
            "given by dtype= or model.set_encode_precision(...)): leave both unset to resume in the folder's precision"
        )
    agreement = _probe_agreement(before, now)
    if agreement < SAME_MODEL_MIN_COSINE:
        return f"another model ({names}: it embeds the probe texts differently, cosine {agreement:.4f} < {SAME_MODEL_MIN_COSINE})"
    return None


def _settings(values: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in values.items())


def _probe_agreement(before: dict[str, Any], now: dict[str, Any]) -> float:
    """The lowest cosine between the saved and the current embeddings of the probe texts (-1 if the probes differ)."""
    if before.get("probe_texts") != now["probe_texts"]:
        return -1.0
    saved, current = (
        np.asarray(before["probe_embeddings"], dtype=np.float64),
        np.asarray(now["probe_embeddings"], dtype=np.float64),
    )
    if saved.shape != current.shape:
        return -1.0
    norms = np.linalg.norm(saved, axis=1) * np.linalg.norm(current, axis=1)
    return float(np.min(np.sum(saved * current, axis=1) / np.maximum(norms, 1e-12)))


def _prepare_folder(shards_dir: Path, expected: dict[str, Any]) -> None:
    """
    Create the folder and write the manifest where there is none (atomically); leave a folder whose manifest
    differs alone (`check_manifest` then says how). Shard files without a manifest are refused: nothing says
    what they hold.
    """
    if shards_dir.exists() and not shards_dir.is_dir():
        raise FileExistsError(f"{shards_dir} exists and is not a folder")
    shards_dir.mkdir(parents=True, exist_ok=True)
    if read_manifest(shards_dir) is not None:
        return
    if any(shards_dir.glob(SHARD_PATTERN)):
        raise FileExistsError(
            f"{shards_dir} holds shard files but no {MANIFEST_NAME}, so nothing says which corpus and model they are of: "
            "delete them, or encode into another folder"
        )
    file = shards_dir / MANIFEST_NAME
    partial = _partial_name(file)
    try:
        partial.write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
        os.replace(partial, file)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def remove_partial_files(shards_dir: Path) -> None:
    """Remove the temporary files of writers killed in an earlier run (call it only when no writer is running)."""
    for leftover in shards_dir.glob(f".*{PARTIAL_SUFFIX}"):
        leftover.unlink(missing_ok=True)


def _partial_name(path: Path) -> Path:
    """A temporary name beside `path`, unique to this writer (two writers of one shard never share a file)."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}{PARTIAL_SUFFIX}")


def _check_options(shard_size: int, batch_size: int) -> None:
    for name, value in (("shard_size", shard_size), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


__all__ = [
    "MANIFEST_NAME",
    "EmbeddingShards",
    "encode_to_shards",
    "encode_to_shards_ray",
    "read_manifest",
]
