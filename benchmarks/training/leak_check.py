#!/usr/bin/env python
"""
How many questions the splits of a prepared folder share, counted without any of hfsiamese's code (issue 47: "the
split is leak-free at 40M, counted by a check that does not share code with the splitter").

    python benchmarks/training/leak_check.py PREPARED_FOLDER [--processes 2]

The splitter identifies a question by its folded text through Arrow kernels and SipHash (`pandas.util.hash_array`) and
splits by connected components of codes numbered from those hashes. This check shares none of it: it reads the
shards' raw `question1`/`question2` text straight from the Arrow files (`pyarrow.ipc`, not `datasets`, not the key
columns preparation wrote), folds each text with Python's own `str.split`/`str.lower`, hashes it with a keyed BLAKE2b
(another function than the splitter's), and intersects the splits' sorted distinct hashes with numpy. It prints, per
split, its pairs and distinct questions, and per two splits the questions they share (0: no leak), as JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

SPLITS = ("train", "validation", "test")


def shard_hashes(path: str) -> np.ndarray:
    """A 64-bit keyed BLAKE2b of each question's folded text, both columns of one shard."""
    with pa.memory_map(path) as source:
        table = pa.ipc.open_stream(source).read_all()
    hashes = np.empty(2 * table.num_rows, dtype=np.uint64)
    at = 0
    for column in ("question1", "question2"):
        for chunk in table.column(column).chunks:
            for text in chunk.to_pylist():
                folded = " ".join(text.split()).lower().encode("utf-8")
                digest = hashlib.blake2b(folded, digest_size=8, key=b"leak-check").digest()
                hashes[at] = int.from_bytes(digest, "little")
                at += 1
    return hashes


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a folder written by `hfsiamese prepare`")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    distinct: dict[str, np.ndarray] = {}
    report: dict[str, object] = {}
    with multiprocessing.Pool(args.processes) as pool:
        for split in SPLITS:
            files = sorted(str(path) for path in args.folder.glob(f"{split}-*.arrow"))
            if not files:
                continue
            hashes = np.concatenate(pool.map(shard_hashes, files, chunksize=1))
            hashes.sort()
            keep = np.ones(len(hashes), dtype=bool)
            np.not_equal(hashes[1:], hashes[:-1], out=keep[1:])
            distinct[split] = hashes[keep]
            report[split] = {"shards": len(files), "pairs": len(hashes) // 2, "questions": int(keep.sum())}
            del hashes, keep
    names = list(distinct)
    report["shared_questions"] = {
        f"{a}/{b}": len(np.intersect1d(distinct[a], distinct[b], assume_unique=True))
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    }
    report["seconds"] = round(time.perf_counter() - start, 1)
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
