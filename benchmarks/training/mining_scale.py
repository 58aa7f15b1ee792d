#!/usr/bin/env python
"""Mining hard negatives at scale with `hfsiamese mine`: time and peak memory, without and with cross-encoder rescoring.

    python benchmarks/training/mining_scale.py --model_name_or_path outputs/minilm_qqp \\
        --cross_encoder outputs/cross_minilm_qqp [--num_pairs 115000] [--num_negatives 10] [--max_rank 10] [--bf16]
    python benchmarks/training/mining_scale.py --model_name_or_path M --cross_encoder C --num_pairs 5000  # quick

The issue-38 row: about 100k questions, each query's 10 nearest candidates rescored by a cross-encoder. The pairs:
`make_pairs_file.py`'s synthetic QQP-like pairs (`--num_pairs`, seeded; 100,000 pairs hold 87,061 distinct questions,
37% of the pairs duplicates, so the default 115,000 gives about 100k questions and 42k queries, the question1 of each
duplicate pair). Each run is the documented command, `hfsiamese mine ... --format groups-with-scores`, in a process of
its own started by a stage process that runs nothing else, so the peak RSS (`RUSAGE_CHILDREN`) is that command's alone,
imports and model loading included; the seconds are its wall clock, loading included. Two runs: the bi-encoder alone
(`plain`) and the same with `--cross_encoder` (`rescored`: every candidate in the rank window and each query's
positive scored by it, candidates it calls duplicates dropped). Results go to `--output_dir`
(mining_scale.json/.md); the pairs and mined files live in a temporary folder inside it, removed at the end.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, command_line, machine, markdown_table, today, write_results
from benchmarks.search.stage_processes import emit, run_stage

SCRIPT = str(Path(__file__).resolve())
RUNS = ("plain", "rescored")
HFSIAMESE = [sys.executable, "-m", "hfsiamese.cli.main"]  # the `hfsiamese` command of this interpreter


def mine_argv(args, workdir: Path, run: str) -> list[str]:
    """The `hfsiamese mine` command line of `run`."""
    argv = [*HFSIAMESE, "mine", "--pairs", str(workdir / "pairs.tsv"), "--model_name_or_path", args.model_name_or_path]
    argv += ["--output_path", str(workdir / f"{run}.parquet"), "--overwrite_output", "--format", "groups-with-scores"]
    argv += ["--num_negatives", str(args.num_negatives), "--max_rank", str(args.max_rank)]
    argv += ["--store", args.store, "--batch_size", str(args.batch_size)]
    if run == "rescored":
        argv += ["--cross_encoder", args.cross_encoder, *(["--bf16"] if args.bf16 else [])]
        if args.cross_encoder_threshold is not None:
            argv += ["--cross_encoder_threshold", str(args.cross_encoder_threshold)]
    return argv


def stage_pairs(args, workdir: Path) -> None:
    """The synthetic pair file, written once per `--num_pairs`."""
    path = workdir / "pairs.tsv"
    generator = Path(__file__).resolve().parents[1] / "search" / "make_pairs_file.py"
    command = [sys.executable, str(generator), str(path), "--pairs", str(args.num_pairs), "--seed", str(args.seed)]
    subprocess.run(command, check=True, capture_output=True, text=True)
    questions = set()
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            questions.update(text for text in fields[1:3] if text.strip())  # the miner drops blank questions
    emit("stage", "pairs", pairs=args.num_pairs, questions=len(questions))


def stage_mine(args, workdir: Path, run: str) -> None:
    """One `hfsiamese mine` run: its counts, wall seconds and peak RSS (this stage process only waits for it)."""
    start = time.perf_counter()
    result = subprocess.run(mine_argv(args, workdir, run), capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"hfsiamese mine ({run}) failed:\n{result.stderr[-4000:]}")
    (counts,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    child_peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    emit("stage", f"mine {run}", seconds=round(seconds, 1), command_peak_rss_mib=round(child_peak_mib, 1), **counts)


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--model_name_or_path", required=True, help="The bi-encoder that searches.")
    parser.add_argument("--cross_encoder", required=True, help="The cross-encoder that rescores.")
    parser.add_argument("--cross_encoder_threshold", type=float, help="Default: the cross-encoder's own.")
    parser.add_argument("--num_pairs", type=int, default=115_000)
    parser.add_argument("--num_negatives", type=int, default=10)
    parser.add_argument("--max_rank", type=int, default=10)
    parser.add_argument("--store", default="exact", choices=("exact", "faiss"))
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--bf16", action="store_true", help="hfsiamese mine --bf16: the cross-encoder in bfloat16.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output_dir", default="outputs/mining_scale")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--run", choices=RUNS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage == "pairs":
        return stage_pairs(args, Path(args.workdir))
    if args.stage == "mine":
        return stage_mine(args, Path(args.workdir), args.run)

    output = Path(args.output_dir).resolve()
    output.mkdir(parents=True, exist_ok=True)
    # The pairs and mined files (regenerated by a rerun) in a folder of this run's own, removed at the end.
    with tempfile.TemporaryDirectory(dir=output, prefix="work-") as work:
        corpus, rows = runs(args, Path(work))
    table = markdown_table(
        ["run", "questions", "queries", "negatives kept", "seconds", "peak RSS (GB)"],
        [
            [
                run
                if run == "plain"
                else f"rescored by {Path(args.cross_encoder).name}" + (" (bf16)" if args.bf16 else ""),
                f"{corpus['questions']:,}",
                f"{row['queries']:,}",
                f"{row['negatives']:,}",
                row["seconds"],
                round(row["command_peak_rss_mib"] / 1024, 2),
            ]
            for run, row in rows.items()
        ],
    )
    result = {"command": command_line(SCRIPT), "machine": machine(), "date": today(), "pairs": corpus, "runs": rows}
    note = f"{machine()}, {today()}; {args.num_negatives} negatives from the top {args.max_rank}"
    write_results(output, "mining_scale", result, table, note)


def runs(args, workdir: Path) -> tuple[dict, dict]:
    """The pairs stage's row, then each run's row (`RUNS`), every stage a process of its own in `workdir`."""
    # The stages run from the repository root: the models' paths as absolute ones.
    flags = ["--model_name_or_path", absolute(args.model_name_or_path), "--cross_encoder", absolute(args.cross_encoder)]
    for name in ("num_pairs", "num_negatives", "max_rank", "store", "batch_size", "seed"):
        flags += [f"--{name}", str(getattr(args, name))]
    flags += ["--bf16"] if args.bf16 else []
    if args.cross_encoder_threshold is not None:
        flags += ["--cross_encoder_threshold", str(args.cross_encoder_threshold)]
    corpus = run_stage(SCRIPT, "pairs", workdir, flags)
    return corpus, {run: run_stage(SCRIPT, "mine", workdir, flags, "--run", run) for run in RUNS}


def absolute(name_or_path: str) -> str:
    """A local folder as an absolute path; a Hub id as it is."""
    return str(Path(name_or_path).resolve()) if Path(name_or_path).exists() else name_or_path


if __name__ == "__main__":
    main()
