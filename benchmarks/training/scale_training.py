#!/usr/bin/env python
"""Training on millions of pairs, as a user runs it: preparation, time to the first step, memory, pairs/s.

    python benchmarks/training/scale_training.py --pairs 4000000 --work_dir /tmp/scale

For each size: a synthetic pair file (`benchmarks/search/make_pairs_file.py`, seeded), then, one after another with
nothing else running, each a fresh process of the documented command:

1. `hfsiamese prepare --train_file FILE --output_dir PREPARED` (a fresh folder and datasets cache), then the same
   command again (the folder is complete: it returns);
2. `hfsiamese train lstm_qqp --train_file PREPARED --max_steps N` twice (the first run builds the vocabulary and
   the derived files kept in the folder; the second reads them), and `hfsiamese train minilm_qqp` once;
3. sentence-transformers' trainer on the same file (all-MiniLM-L6-v2, MultipleNegativesRankingLoss on the duplicate
   pairs, NO_DUPLICATES batches, the same batch size), read as its documentation reads a CSV: `load_dataset("csv")`.

Per run: wall time, time from the start of the process to the first optimiser step (the moment the Trainer's
progress bar shows step 1), steady pairs/s (from the progress bar between step 5 and the last), peak resident memory
of the process and its children (sampled every 0.2 s), and of it the private part (resident less the pages of files
it maps: the memory-mapped Arrow files' pages count as resident once read, but the kernel drops them under pressure),
and the anonymous memory with shared pages counted once (`anonymous_share`: forked preparation workers share their
parent's pages, which the resident and private sums count once per process). Results: WORK_DIR/scale_training.json and .md (a table).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, command_line, machine, markdown_table, today, write_results

REPO = Path(__file__).resolve().parents[2]
STEP = re.compile(rb"(\d+)/(\d+) \[")
# The command as installed beside this interpreter (a virtual environment need not be activated).
HFSIAMESE = (
    str(Path(sys.executable).with_name("hfsiamese"))
    if Path(sys.executable).with_name("hfsiamese").exists()
    else "hfsiamese"
)


def anonymous_share(pid: int) -> int:
    """
    Bytes of anonymous memory `pid` holds, each page shared with other processes counted in proportion (Linux's
    `Pss_Anon`): summed over a process tree, a page a forked worker still shares with its parent counts once, where
    the resident and private sums count it in every process. The memory the tree needs beyond the page cache. 0 where
    the kernel does not say (not Linux, or before 5.8).
    """
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Pss_Anon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# Reading a process's smaps_rollup walks its page tables: 39 ms of kernel time for a training run that maps a 40M
# prepared folder (3 GB resident), against 0.01 ms for statm. Read every 0.2 s it took a fifth of a core from the run
# it measured, and from the large runs only, so the anonymous share is read every 25th sample (5 s).
ANONYMOUS_EVERY = 25


def measured(
    argv: list[str], env: dict[str, str], max_steps: int | None, batch_size: int, *, sample_memory: bool = True
) -> dict[str, Any]:
    """Run `argv` to its end; its wall time, first step, steady pairs/s and (with `sample_memory`) peak resident memory
    (tree). Without `sample_memory` nothing reads the process while it runs."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=REPO)
    steps: dict[int, float] = {}
    tail: list[bytes] = []

    def read() -> None:
        assert process.stdout is not None
        buffer = b""
        while chunk := process.stdout.read1(65536):
            now = time.perf_counter() - start
            buffer += chunk
            *segments, buffer = re.split(rb"[\r\n]", buffer)
            for segment in segments:
                tail.append(segment)
                del tail[:-40]
                for done, total in STEP.findall(segment):
                    if max_steps is not None and int(total) == max_steps and int(done) not in steps:
                        steps[int(done)] = now

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peak = peak_private = peak_anonymous = 0
    parent = psutil.Process(process.pid)
    samples = 0
    while sample_memory and process.poll() is None:
        try:
            tree = [parent, *parent.children(recursive=True)]
            memory = [p.memory_info() for p in tree if p.is_running()]
            peak = max(peak, sum(m.rss for m in memory))
            # private: resident less file-backed pages (the memory-mapped Arrow files' pages the kernel can drop)
            peak_private = max(peak_private, sum(m.rss - m.shared for m in memory))
            if samples % ANONYMOUS_EVERY == 0:
                peak_anonymous = max(peak_anonymous, sum(anonymous_share(p.pid) for p in tree))
        except psutil.Error:
            pass
        samples += 1
        time.sleep(0.2)
    process.wait()
    reader.join()
    wall = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv)} failed ({process.returncode}):\n" + b"\n".join(tail).decode(errors="replace")
        )
    row: dict[str, Any] = {"wall_s": round(wall, 1)}
    if sample_memory:
        row.update(
            peak_rss_gb=round(peak / 2**30, 2),
            peak_private_gb=round(peak_private / 2**30, 2),
            peak_anonymous_gb=round(peak_anonymous / 2**30, 2),
        )
    if steps:
        row["first_step_s"] = round(steps[min(steps)], 1)
        last = max(steps)
        if last > 5 and 5 in steps:
            row["pairs_per_s"] = round((last - 5) * batch_size / (steps[last] - steps[5]), 1)
    return row


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--pairs", type=int, nargs="+", default=[4_000_000])
    parser.add_argument("--work_dir", default="/tmp/hfsiamese_scale")
    parser.add_argument("--max_steps", type=int, default=30)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--skip", nargs="*", default=[], help="runs to leave out: bundled, minilm, st")
    args = parser.parse_args()
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    if "bundled" not in args.skip:  # the steady pairs/s to keep: the recipe on the bundled 10,000 pairs
        steps = ["--max_steps", str(args.max_steps), "--per_device_train_batch_size", str(args.batch_size)]
        argv = [HFSIAMESE, "train", "lstm_qqp", "--output_dir", str(work / "lstm_bundled"), *steps]
        argv += [
            "--logging_steps",
            "1",
            "--save_strategy",
            "no",
            "--eval_strategy",
            "no",
            "--overwrite_output_dir",
            "true",
        ]
        env = {**os.environ, "HF_DATASETS_CACHE": str(work / "cache_bundled"), "HF_HUB_OFFLINE": "1"}
        shutil.rmtree(work / "cache_bundled", ignore_errors=True)
        rows.append({"pairs": 10_000, "run": "train lstm_qqp (bundled pairs)",
                     **measured(argv, env, args.max_steps, args.batch_size)})  # fmt: skip
        print(rows[-1], flush=True)
    for pairs in args.pairs:
        rows.extend(one_size(pairs, work, args))
    table = markdown_table(
        ["pairs", "run", "wall s", "first step s", "pairs/s", "peak GB", "of it private GB", "anonymous GB"],
        [[r["pairs"], r["run"], r["wall_s"], r.get("first_step_s"), r.get("pairs_per_s"), r["peak_rss_gb"],
          r.get("peak_private_gb"), r.get("peak_anonymous_gb")] for r in rows],
    )  # fmt: skip
    result = {"machine": machine(), "date": today(), "command": command_line(__file__), "rows": rows}
    write_results(work, "scale_training", result, table, f"{machine()}, {today()}")


def one_size(pairs: int, work: Path, args: Any) -> list[dict[str, Any]]:
    """The runs of one file size, each a fresh process, one after another."""
    source = work / f"pairs_{pairs}.tsv"
    if not source.is_file():
        subprocess.run(
            [sys.executable, str(REPO / "benchmarks/search/make_pairs_file.py"), str(source), "--pairs", str(pairs)],
            check=True,
        )
    prepared, cache = work / f"prepared_{pairs}", work / f"cache_{pairs}"
    for folder in (prepared, cache):
        shutil.rmtree(folder, ignore_errors=True)
    env = {**os.environ, "HF_DATASETS_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    steps = ["--max_steps", str(args.max_steps), "--per_device_train_batch_size", str(args.batch_size)]
    common = [*steps, "--logging_steps", "1", "--save_strategy", "no", "--eval_strategy", "no"]
    runs: list[tuple[str, list[str], int | None]] = [
        ("prepare", [HFSIAMESE, "prepare", "--train_file", str(source), "--output_dir", str(prepared)], None),
        ("prepare again", [HFSIAMESE, "prepare", "--train_file", str(source), "--output_dir", str(prepared)], None),
    ]
    for name in ("first", "second"):
        out = str(work / f"lstm_{pairs}_{name}")
        argv = [HFSIAMESE, "train", "lstm_qqp", "--train_file", str(prepared), "--output_dir", out, *common]
        runs.append((f"train lstm_qqp ({name} run)", [*argv, "--overwrite_output_dir", "true"], args.max_steps))
    if "minilm" not in args.skip:
        out = str(work / f"minilm_{pairs}")
        argv = [HFSIAMESE, "train", "minilm_qqp", "--train_file", str(prepared), "--output_dir", out, *common]
        runs.append(("train minilm_qqp", [*argv, "--overwrite_output_dir", "true"], args.max_steps))
    if "st" not in args.skip:
        st = [sys.executable, str(REPO / "benchmarks/training/st_scale_run.py"), str(source), str(work / f"st_{pairs}")]
        runs.append(("sentence-transformers MNRL", [*st, *steps], args.max_steps))
    rows = []
    for name, argv, max_steps in runs:
        row = {"pairs": pairs, "run": name, **measured(argv, env, max_steps, args.batch_size)}
        print(row, flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
