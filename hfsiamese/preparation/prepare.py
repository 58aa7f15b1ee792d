"""
`prepare_pairs`: a pair file made into a prepared folder, in stages that each keep their result, so that a run
killed at any point resumes where it stopped:

1. read (`load_pairs`, memory-mapped Arrow in the datasets cache; empty rows dropped there);
2. hash each question's identity (ids, else folded text) to 64 bits, in parallel (`datasets.map(num_proc=...)`);
3. on those compact arrays only (no Python object per question or pair): collapse repeats, split by question
   component, draw the duplicate groups, with the same functions as the in-memory path (`repeated_pairs`,
   `split_codes`, `groups_of_questions`), saved as `assignment.npz`;
4. write each split as Arrow shards of `shard_pairs` rows, one at a time (a finished shard is kept);
5. write `manifest.json` last: its presence says the folder is complete.

The shards hold what the in-memory path's splits hold, column for column and row for row: a 64-bit hash collision
between two different questions (odds about 1e-4 at 80 million distinct questions) would merge them, and is the
only way the two could differ.
"""

from __future__ import annotations

import logging
import multiprocessing
import shutil
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
from datasets.table import MemoryMappedTable
from tqdm.auto import tqdm

from hfsiamese.data.arrow_columns import column_numpy
from hfsiamese.data.deduplication import DeduplicationReport, repeated_pairs
from hfsiamese.data.groups import groups_of_questions
from hfsiamese.data.loading import load_pairs
from hfsiamese.data.question_ids import ID_COLUMNS, KEY_COLUMNS, QuestionCodes, fold_text
from hfsiamese.data.splits import check_split_fractions, split_codes
from hfsiamese.preparation.options import SCHEMA_VERSION, PreparationOptions, preparation_key, source_fingerprint
from hfsiamese.preparation.shards import (
    check_shard,
    read_json,
    remove_partial_files,
    write_json_atomically,
    write_shard,
)

__all__ = ["MANIFEST", "prepare_pairs", "prepared_cache_folder"]

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"  # written last: a folder with it is complete
STARTED = "preparation.json"  # written first: what this folder is a preparation of (to resume only the same one)
ASSIGNMENT = "assignment.npz"  # stage 3's arrays: kept rows, their split, the training rows' groups
SPLIT_NAMES = ("train", "validation", "test")
DEFAULT_SHARD_PAIRS = 250_000


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
) -> dict[str, Any]:
    """
    Prepare `train_file` into `output_dir` (see the module) and return its manifest.

    An `output_dir` that holds this same preparation (same file fingerprint and options) is resumed, or returned as
    it is when complete; one that holds anything else is refused unless `overwrite_output_dir`, before anything is
    written. `num_proc` processes hash the questions and write the shards.
    """
    options = options or PreparationOptions()
    check_split_fractions(options.validation_fraction, options.test_fraction)
    if shard_pairs < 1:
        raise ValueError(f"shard_pairs must be at least 1, got {shard_pairs}")
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
    manifest, replace = _claim(folder, started, overwrite_output_dir)
    if manifest is not None:
        logger.info("%s already holds this preparation of %s: nothing to do", folder, source)
        return manifest
    pairs = load_pairs(
        str(source),
        format=options.data_format,
        question1_column=options.question1_column,
        question2_column=options.question2_column,
        label_column=options.label_column,
        id1_column=options.id1_column,
        id2_column=options.id2_column,
        deduplicate=False,
    )  # a file it cannot read is refused here, before the folder is made (or emptied, when replacing it)
    if replace:
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    remove_partial_files(folder)
    write_json_atomically(started, folder / STARTED)
    assignment = _load_or_assign(folder, pairs, options, num_proc, str(train_file))
    shards = _write_splits(folder, pairs, assignment, options, shard_pairs, num_proc)
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
    folder: Path, pairs: datasets.Dataset, options: PreparationOptions, num_proc: int | None, source: str
) -> _Assignment:
    path = folder / ASSIGNMENT
    if path.is_file():
        with np.load(path) as saved:
            counts = {str(k): int(v) for k, v in zip(saved["count_names"], saved["count_values"])}
            return _Assignment(saved["rows"], saved["split"], saved["group_id"], counts)
    assignment = _assign(pairs, options, num_proc, source)
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


def _assign(pairs: datasets.Dataset, options: PreparationOptions, num_proc: int | None, source: str) -> _Assignment:
    """Stage 2 and 3: hashes, then repeats, split and groups on integer arrays only."""
    hashes = pairs.with_format("arrow").map(
        _hash_batch,
        batched=True,
        batch_size=10_000,
        num_proc=num_proc if num_proc and num_proc > 1 else None,
        remove_columns=pairs.column_names,
        features=datasets.Features({"hash1": datasets.Value("uint64"), "hash2": datasets.Value("uint64")}),
        desc="Hashing questions",
    )
    hash1, hash2 = column_numpy(hashes, "hash1"), column_numpy(hashes, "hash2")
    labels = column_numpy(pairs, "label")
    identity = "question ids" if set(ID_COLUMNS) <= set(pairs.column_names) else "normalised text"

    repeat, first_row, pair_codes = repeated_pairs(_codes(hash1, hash2))
    collapsed = int(repeat.sum())
    conflicting = int((repeat & (labels != labels[first_row[pair_codes]])).sum())
    del first_row, pair_codes
    if collapsed:
        report = DeduplicationReport(rows=len(pairs), collapsed=collapsed, conflicting=conflicting, identity=identity)
        warnings.warn(report.message(source), UserWarning, stacklevel=4)
    rows = np.flatnonzero(~repeat)
    del repeat
    hash1, hash2, labels = hash1[rows], hash2[rows], labels[rows]
    logger.info("splitting %d pairs by question component", len(rows))
    kept_codes = _codes(hash1, hash2)
    questions = kept_codes.count
    split = split_codes(
        kept_codes,
        validation_fraction=options.validation_fraction,
        test_fraction=options.test_fraction,
        seed=options.split_seed,
    )
    del kept_codes
    train = split == 0
    codes = _codes(hash1[train], hash2[train])
    group_id = groups_of_questions(codes, labels[train] == 1)[codes.codes1]
    counts = {
        "read_pairs": len(pairs),
        "collapsed_repeats": collapsed,
        "conflicting_repeats": conflicting,
        "questions": questions,
        "duplicate_groups": int(group_id.max()) + 1 if len(group_id) else 0,
    }
    return _Assignment(rows, split, group_id, counts)


def _codes(hash1: np.ndarray, hash2: np.ndarray) -> QuestionCodes:
    """Questions numbered by their hash in order of first appearance over [question1, question2], as
    `question_codes` numbers their keys (same order, so the same codes)."""
    codes, uniques = pd.factorize(np.concatenate([hash1, hash2]))
    n = len(hash1)
    return QuestionCodes(codes[:n].astype(np.int64, copy=False), codes[n:].astype(np.int64, copy=False), len(uniques))


def _hash_batch(batch: pa.Table) -> pa.Table:
    """The 64-bit hash of each question's identity (`question_ids.question_keys`: ids, else folded text)."""
    return pa.table({f"hash{side}": _hashes(key) for side, key in zip((1, 2), _keys(batch))})


def _keys(table: pa.Table) -> tuple[pa.ChunkedArray | pa.Array, pa.ChunkedArray | pa.Array]:
    """The identity columns of a batch of read pairs, as `question_ids.question_keys` gives them."""
    if set(ID_COLUMNS) <= set(table.column_names):
        return table.column("qid1").cast(pa.string()), table.column("qid2").cast(pa.string())
    return fold_text(table.column("question1")), fold_text(table.column("question2"))


def _hashes(keys: pa.ChunkedArray | pa.Array) -> np.ndarray:
    # pandas' hash of strings: SipHash with a fixed key, the same in every process and on every machine.
    return pd.util.hash_array(np.asarray(keys.to_numpy(zero_copy_only=False), dtype=object))


def _write_splits(
    folder: Path,
    pairs: datasets.Dataset,
    assignment: _Assignment,
    options: PreparationOptions,
    shard_pairs: int,
    num_proc: int | None,
) -> dict[str, list[dict[str, Any]]]:
    """
    Stage 4: each split's rows, in the read order, as shards; existing finished shards are checked and kept. With
    `num_proc` > 1 the shards are written by that many processes, each reading the pairs' memory-mapped Arrow files
    itself.
    """
    names = SPLIT_NAMES[: 3 if options.test_fraction > 0 else 2]
    plan = []
    for code, name in enumerate(names):
        rows = assignment.rows[assignment.split == code]
        for index, start in enumerate(range(0, len(rows), shard_pairs)):
            groups = assignment.group_id[start : start + shard_pairs] if name == "train" else None
            plan.append((name, folder / f"{name}-{index:05d}.arrow", rows[start : start + shard_pairs], groups))
    todo = [(path, rows, groups) for _, path, rows, groups in plan if not path.is_file()]
    files = [entry["filename"] for entry in pairs.cache_files]
    written: dict[Path, dict[str, Any]] = {}
    progress = tqdm(total=len(plan), desc="Writing prepared shards", unit="shard")
    progress.update(len(plan) - len(todo))
    if num_proc and num_proc > 1 and len(todo) > 1 and files:
        # fork where there is one, as `datasets.map(num_proc=...)` does (Arrow re-creates its thread pools in a
        # child); spawn would leave a resource tracker process running beside the caller's.
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        with ProcessPoolExecutor(min(num_proc, len(todo)), mp_context=context) as pool:
            futures = [pool.submit(_write_shard_of_files, files, rows, groups, path) for path, rows, groups in todo]
            for future in as_completed(futures):
                record = future.result()
                written[folder / record["file"]] = record
                progress.update()
    else:
        for path, rows, groups in todo:
            written[path] = write_shard(_shard_table(pairs.data.table, rows, groups), path)
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


def _shard_table(table: pa.Table, rows: np.ndarray, groups: np.ndarray | None) -> pa.Table:
    """The rows of one shard, with their question keys (and, for training rows, their groups)."""
    shard = table.take(pa.array(rows))
    for key_name, key in zip(KEY_COLUMNS, _keys(shard)):
        shard = shard.append_column(key_name, key)
    if groups is not None:
        shard = shard.append_column("group_id", pa.array(groups, type=pa.int64()))
    return shard.combine_chunks()


def _write_shard_of_files(files: list[str], rows: np.ndarray, groups: np.ndarray | None, path: Path) -> dict[str, Any]:
    """A worker's shard: the pairs read from their memory-mapped Arrow files (the ones `load_pairs` wrote)."""
    table = pa.concat_tables([MemoryMappedTable.from_file(name).table for name in files])
    return write_shard(_shard_table(table, rows, groups), path)
