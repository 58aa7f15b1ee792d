"""
`prepare_pairs`: a pair file made into a prepared folder, in stages that each keep their result, so that a run
killed at any point resumes where it stopped:

1. read (`load_pairs`, memory-mapped Arrow in the datasets cache; empty rows dropped there);
2. hash each question's identity (ids, else folded text) to 64 bits, in parallel (`local_engine`: `datasets.map(num_proc=...)`;
   `ray_engine`: Ray tasks over row ranges, on this machine or a cluster);
3. on those compact arrays only (no Python object per question or pair): collapse repeats, split by question
   component, draw the duplicate groups, with the same functions as the in-memory path (`repeated_pairs`,
   `split_codes`, `groups_of_questions`), saved as `assignment.npz`;
4. write each split as Arrow shards of `shard_pairs` rows, in parallel by the same engine (a finished shard is kept);
5. write `manifest.json` last: its presence says the folder is complete.

The shards hold what the in-memory path's splits hold, column for column and row for row: a 64-bit hash collision
between two different questions (odds about 1e-4 at 80 million distinct questions) would merge them, and is the
only way the two could differ. Both engines call the same row functions (`pair_rows`), so they write the same
shards byte for byte and the same manifest.
"""

from __future__ import annotations

import logging
import shutil
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import datasets
import numpy as np
from tqdm.auto import tqdm

from hfsiamese.data.first_appearance import first_appearance_codes, ranks_among
from hfsiamese.data.pair_loading import load_pairs
from hfsiamese.data.question_identity import (
    ID_COLUMNS,
    KEY_COLUMNS,
    DeduplicationReport,
    QuestionCodes,
    column_numpy,
    groups_of_questions,
    repeated_pairs,
)
from hfsiamese.data.splits import check_split_fractions, split_codes
from hfsiamese.preparation.local_engine import LocalPreparation
from hfsiamese.preparation.options import SCHEMA_VERSION, PreparationOptions, preparation_key, source_fingerprint
from hfsiamese.preparation.ray_engine import RayPreparation, import_ray
from hfsiamese.preparation.shards import check_shard, read_json, remove_partial_files, write_json_atomically

__all__ = ["ENGINES", "MANIFEST", "prepare_pairs", "prepared_cache_folder"]

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"  # written last: a folder with it is complete
STARTED = "preparation.json"  # written first: what this folder is a preparation of (to resume only the same one)
ASSIGNMENT = "assignment.npz"  # stage 3's arrays: kept rows, their split, the training rows' groups
SPLIT_NAMES = ("train", "validation", "test")
DEFAULT_SHARD_PAIRS = 250_000
_RENUMBER_BLOCK = 1 << 22  # codes renumbered at a time (a block's temporaries, not every code's)
ENGINES = ("local", "ray")  # where stages 2 and 4 run: this machine's processes, or Ray tasks


class _Engine(Protocol):
    """What `LocalPreparation` and `RayPreparation` both do: the row-parallel stages."""

    def hash_questions(self, pairs: datasets.Dataset) -> tuple[np.ndarray, np.ndarray]: ...

    def write_shards(
        self, pairs: datasets.Dataset, todo: list[tuple[Path, np.ndarray, np.ndarray | None]]
    ) -> Iterator[dict[str, Any]]: ...


@dataclass(frozen=True)
class _Assignment:
    """Per kept row (rows of the read pairs, in order): its split code and, for training rows, its group id."""

    rows: np.ndarray  # int64 positions in the read pairs
    split: np.ndarray  # int8: 0 train, 1 validation, 2 test
    group_id: np.ndarray  # int64 per training row, in order
    counts: dict[str, int]


def prepared_cache_folder(
    train_file: str | Path, options: PreparationOptions, cache_dir: str | Path | None = None
) -> Path:
    """The folder `--prepare_data` keeps the preparation of (`train_file`, `options`) in: under `cache_dir`, by default
    the datasets cache (`HF_DATASETS_CACHE`), named by the file's fingerprint and the options."""
    root = Path(cache_dir) if cache_dir is not None else Path(datasets.config.HF_DATASETS_CACHE) / "hfsiamese_prepared"
    return root / preparation_key(source_fingerprint(train_file), options)


def prepare_pairs(
    train_file: str | Path,
    output_dir: str | Path,
    options: PreparationOptions | None = None,
    *,
    num_proc: int | None = None,
    shard_pairs: int = DEFAULT_SHARD_PAIRS,
    overwrite_output_dir: bool = False,
    engine: str = "local",
    ray_address: str | None = None,
) -> dict[str, Any]:
    """
    Prepare `train_file` into `output_dir` (see the module) and return its manifest.

    An `output_dir` that holds this same preparation (same file fingerprint and options) is resumed, or returned as
    it is when complete; one that holds anything else is refused unless `overwrite_output_dir`, before anything is
    written. `num_proc` processes hash the questions and write the shards.

    With `engine="ray"` (the `ray` extra) Ray tasks do that instead, the reading and the assignment staying in this
    process, and the folder is the same, byte for byte: on a local Ray started for the call (`num_proc` CPUs, all of
    them when None) and stopped after, on the Ray this process already runs, or on the cluster at `ray_address`
    (`"auto"`, `"ray://head:10001"`), whose nodes must all see `output_dir` at the same path (the tasks write the
    shards; a task on a node that does not see it refuses, naming the node).
    """
    options = options or PreparationOptions()
    check_split_fractions(options.validation_fraction, options.test_fraction)
    if isinstance(options.split_seed, bool) or not isinstance(options.split_seed, int):  # numpy's refusal came late
        raise ValueError(f"split_seed must be an integer, got {options.split_seed!r}")
    if shard_pairs < 1:
        raise ValueError(f"shard_pairs must be at least 1, got {shard_pairs}")
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if ray_address is not None and engine != "ray":
        raise ValueError(
            f"ray_address ({ray_address}) is a Ray cluster's: pass engine='ray' (--engine ray) with it, not {engine!r}"
        )
    if engine == "ray":
        import_ray()  # without it: an ImportError naming the extra, before anything is written
    source = Path(train_file).expanduser()
    if not source.is_file():
        raise FileNotFoundError(
            f"pair file not found: {train_file}" if not source.exists() else f"{train_file} is not a file"
        )
    started = {
        "schema_version": SCHEMA_VERSION,
        "source": {"path": str(source.resolve()), **source_fingerprint(source)},
        "options": options.to_dict(),
    }
    folder = Path(output_dir)
    if folder.is_dir() and source.resolve().is_relative_to(folder.resolve()):  # replacing the folder would remove it
        raise ValueError(f"--output_dir {folder} holds the pair file {train_file}: choose another --output_dir")
    manifest, replace = _claim(folder, started, overwrite_output_dir)
    if manifest is not None:
        logger.info("%s already holds this preparation of %s: nothing to do", folder, source)
        return manifest
    pairs = load_pairs(
        str(source), **options.reading_options(), deduplicate=False
    )  # a file it cannot read is refused here, before the folder is made (or emptied, when replacing it)
    if replace:
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    remove_partial_files(folder)
    write_json_atomically(started, folder / STARTED)
    session: AbstractContextManager[_Engine] = (
        RayPreparation(folder / STARTED, ray_address, num_proc)
        if engine == "ray"
        else nullcontext(LocalPreparation(num_proc))
    )
    with session as workers:
        assignment = _load_or_assign(folder, pairs, options, workers, str(train_file))
        shards = _write_splits(folder, pairs, assignment, options, shard_pairs, workers)
    manifest = {
        **started,
        "counts": {
            **assignment.counts,
            **{f"{name}_pairs": sum(s["rows"] for s in records) for name, records in shards.items()},
        },
        "columns": pairs.column_names + list(KEY_COLUMNS),
        "shards": shards,
    }
    write_json_atomically(manifest, folder / MANIFEST)
    (folder / ASSIGNMENT).unlink()  # its content is in the shards now
    return manifest


def _claim(folder: Path, started: dict[str, Any], overwrite: bool) -> tuple[dict[str, Any] | None, bool]:
    """(the manifest when `folder` already holds this complete preparation, else None; whether what it holds is to be
    replaced); an error when it holds something else and `overwrite` was not given. Nothing is removed here: the
    caller replaces the folder only once the file was read."""
    if not folder.exists():
        return None, False
    if not folder.is_dir():
        raise ValueError(f"--output_dir {folder} is a file, not a folder")
    if not any(folder.iterdir()):
        return None, False
    same = (folder / STARTED).is_file() and _identity(read_json(folder / STARTED)) == _identity(started)
    if same:
        if (folder / MANIFEST).is_file():
            manifest = read_json(folder / MANIFEST)
            records = [record for split in manifest["shards"].values() for record in split]
            for record in records:  # a damaged shard is refused, naming it; a deleted one is written again
                if (folder / record["file"]).is_file():
                    check_shard(folder, record)
            if all((folder / record["file"]).is_file() for record in records):
                return manifest, False
            (folder / MANIFEST).unlink()
        return None, False  # resumed
    if not overwrite:
        raise FileExistsError(
            f"--output_dir {folder} holds something else than this preparation (another file, another version of it, "
            "or other options): pass --overwrite_output_dir to replace it, or another --output_dir"
        )
    return None, True


def _identity(started: dict[str, Any]) -> dict[str, Any]:
    """What makes two preparations the same: the file's content fingerprint and the options, not where it lies (the
    cache of `--prepare_data` is named by the fingerprint, so a copy of the file elsewhere finds it)."""
    source = {key: value for key, value in started.get("source", {}).items() if key != "path"}
    return {**started, "source": source}


def _load_or_assign(
    folder: Path, pairs: datasets.Dataset, options: PreparationOptions, workers: _Engine, source: str
) -> _Assignment:
    path = folder / ASSIGNMENT
    if path.is_file():
        with np.load(path) as saved:
            counts = {str(k): int(v) for k, v in zip(saved["count_names"], saved["count_values"])}
            return _Assignment(saved["rows"], saved["split"], saved["group_id"], counts)
    assignment = _assign(pairs, options, workers, source)
    temporary = path.with_name(path.name + ".partial")  # removed by `remove_partial_files` when a kill left it
    with temporary.open("wb") as handle:
        np.savez(
            handle,
            rows=assignment.rows,
            split=assignment.split,
            group_id=assignment.group_id,
            count_names=np.array(list(assignment.counts)),
            count_values=np.array(list(assignment.counts.values()), dtype=np.int64),
        )
    temporary.replace(path)
    return assignment


def _assign(pairs: datasets.Dataset, options: PreparationOptions, workers: _Engine, source: str) -> _Assignment:
    """Stage 2 (by the engine's workers) and 3 (here): hashes, then repeats, split and groups on integer arrays only."""
    hash1, hash2 = workers.hash_questions(pairs)
    labels = column_numpy(pairs, "label").astype(np.int8)  # 0/1: a byte a pair (tens of millions of pairs)
    identity = "question ids" if set(ID_COLUMNS) <= set(pairs.column_names) else "normalised text"
    both, n = np.concatenate([hash1, hash2]), len(hash1)
    del hash1, hash2  # from here on a question is its code: the hashes are freed before their hash table is built
    all_codes = _codes(both, n)
    del both

    repeat, first_row, pair_codes = repeated_pairs(all_codes)
    collapsed = int(repeat.sum())
    conflicting = int((repeat & (labels != labels[first_row[pair_codes]])).sum())
    del first_row, pair_codes
    if collapsed:
        report = DeduplicationReport(rows=len(pairs), collapsed=collapsed, conflicting=conflicting, identity=identity)
        warnings.warn(report.message(source), UserWarning, stacklevel=4)
    rows = np.flatnonzero(~repeat)
    del repeat
    labels = labels[rows]
    logger.info("splitting %d pairs by question component", len(rows))
    kept_codes = _renumbered(all_codes, rows)
    del all_codes
    questions = kept_codes.count
    split = split_codes(
        kept_codes,
        validation_fraction=options.validation_fraction,
        test_fraction=options.test_fraction,
        seed=options.split_seed,
    )
    train = split == 0
    codes = _renumbered(kept_codes, np.flatnonzero(train))
    del kept_codes
    group_id = groups_of_questions(codes, labels[train] == 1)[codes.codes1]
    counts = {
        "read_pairs": len(pairs),
        "collapsed_repeats": collapsed,
        "conflicting_repeats": conflicting,
        "questions": questions,
        "duplicate_groups": int(group_id.max()) + 1 if len(group_id) else 0,
    }
    return _Assignment(rows, split, group_id, counts)


def _codes(hashes: np.ndarray, n: int) -> QuestionCodes:
    """Questions numbered by their hash in order of first appearance over `hashes` ([question1's, question2's] of `n`
    pairs), as `question_codes` numbers their keys (same order, so the same codes); int32 where the count allows."""
    codes, count = first_appearance_codes(hashes)  # pandas.factorize's codes, a part at a time (its peak memory)
    codes = codes.astype(_code_type(count, len(codes)), copy=False)
    return QuestionCodes(codes[:n], codes[n:], count)


def _renumbered(codes: QuestionCodes, rows: np.ndarray) -> QuestionCodes:
    """
    The codes of the pairs `rows` (ascending) numbered again by first appearance over [question1, question2] of those
    pairs alone: what `_codes` gives those pairs' hashes, from the codes, with arrays the size of the codes instead of
    a second hash table over tens of millions of hashes (the stage's peak memory). Dropping rows can move a question's
    first appearance (a repeat's mirror held its only question1 place), so the numbering is made again, not kept.
    """
    n = len(rows)
    kind = _code_type(codes.count, 2 * n)
    both = np.empty(2 * n, dtype=kind)
    if n == 0:
        return QuestionCodes(both, both, 0)
    both[:n], both[n:] = codes.codes1[rows], codes.codes2[rows]
    first = np.full(codes.count, len(both), dtype=kind)  # each old code's first position among `both`
    for start in range(0, len(both), _RENUMBER_BLOCK):
        stop = min(start + _RENUMBER_BLOCK, len(both))
        np.minimum.at(first, both[start:stop], np.arange(start, stop, dtype=kind))
    count = int(np.count_nonzero(first < len(both)))
    # An old code's new one is the rank of its first position among the first positions of the codes still present.
    new = ranks_among(first, len(both)).astype(kind, copy=False)
    del first
    for start in range(0, len(both), _RENUMBER_BLOCK):  # in place: no second array of every question's code
        both[start : start + _RENUMBER_BLOCK] = new[both[start : start + _RENUMBER_BLOCK]]
    return QuestionCodes(both[:n], both[n:], count)


def _code_type(count: int, positions: int) -> type[np.signedinteger]:
    """int32 for codes and positions where they fit (half the memory of tens of millions of them), else int64."""
    return np.int32 if max(count, positions) < np.iinfo(np.int32).max else np.int64


def _write_splits(
    folder: Path,
    pairs: datasets.Dataset,
    assignment: _Assignment,
    options: PreparationOptions,
    shard_pairs: int,
    workers: _Engine,
) -> dict[str, list[dict[str, Any]]]:
    """Stage 4: each split's rows, in the read order, as shards written by the engine's workers; existing finished
    shards are checked and kept."""
    names = SPLIT_NAMES[: 3 if options.test_fraction > 0 else 2]
    plan = []
    for code, name in enumerate(names):
        rows = assignment.rows[assignment.split == code]
        for index, start in enumerate(range(0, len(rows), shard_pairs)):
            groups = assignment.group_id[start : start + shard_pairs] if name == "train" else None
            plan.append((name, folder / f"{name}-{index:05d}.arrow", rows[start : start + shard_pairs], groups))
    todo = [(path, rows, groups) for _, path, rows, groups in plan if not path.is_file()]
    written: dict[Path, dict[str, Any]] = {}
    progress = tqdm(total=len(plan), desc="Writing prepared shards", unit="shard")
    progress.update(len(plan) - len(todo))
    for record in workers.write_shards(pairs, todo):
        written[folder / record["file"]] = record
        progress.update()
    progress.close()
    shards: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for name, path, rows, _ in plan:
        if path in written:
            record = written[path]
        else:  # finished before a kill: kept, once checked
            record = {"file": path.name, "rows": len(rows), "bytes": path.stat().st_size}
            check_shard(folder, record)
        shards[name].append(record)
    return shards
