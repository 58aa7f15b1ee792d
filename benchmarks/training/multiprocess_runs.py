#!/usr/bin/env python
"""Launch the training recipe on several CPU processes N times and count the clean exits.

    python benchmarks/training/multiprocess_runs.py                      # 10 runs of 2 processes, tiny settings
    python benchmarks/training/multiprocess_runs.py --runs 3 --num_processes 2 -- --max_steps 12

Each run is `ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu --num_processes P recipes/train.py`
with a tiny LSTM that saves checkpoints and evaluates during training, in a fresh temporary output
folder (nothing of the user's is touched). A run counts as clean when the launcher exits 0 within
the time limit and the output folder is what one process alone would have written: one final
model, results and trainer state; complete checkpoints holding every process's RNG state; no
staging folders left over; the vocabulary built by one process only.

Prints one JSON line: runs, clean exits, and for each unclean run why.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import TRAIN_SCRIPT, argument_parser, emit, machine

TINY = dict(
    embedding_dim=16,
    hidden_size=16,
    vocab_size=2000,
    max_length=32,
    max_train_pairs=600,
    max_eval_pairs=200,
    per_device_train_batch_size=16,
    max_steps=6,
    warmup_steps=1,
    eval_strategy="steps",
    eval_steps=3,
    save_strategy="steps",
    save_steps=3,
    save_total_limit=2,
    logging_steps=3,
    disable_tqdm=True,
)
FINAL_FILES = {"config.json", "model.safetensors", "tokenizer.json", "all_results.json", "trainer_state.json"}


def launch_command(num_processes: int, output_dir: Path, extra: list[str]) -> list[str]:
    flags = [f"--{k}={v}" for k, v in TINY.items()]
    return [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(num_processes),
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "0",
        str(TRAIN_SCRIPT), *flags, *extra, "--output_dir", str(output_dir),
    ]  # fmt: skip


def problems(result: subprocess.CompletedProcess, output_dir: Path, num_processes: int) -> list[str]:
    """Why a finished run is not clean (empty when it is)."""
    found = []
    if result.returncode != 0:
        found.append(f"exit status {result.returncode}: {result.stderr.strip().splitlines()[-1:] or ''}")
        return found
    names = {p.name for p in output_dir.iterdir()} if output_dir.is_dir() else set()
    if missing := FINAL_FILES - names:
        found.append(f"missing {sorted(missing)}")
    if leftovers := sorted(n for n in names if n.startswith("tmp-")):
        found.append(f"staging folders left: {leftovers}")
    checkpoints = sorted(output_dir.glob("checkpoint-*"))
    if not checkpoints:
        found.append("no checkpoint saved")
    for checkpoint in checkpoints:
        inside = {p.name for p in checkpoint.iterdir()}
        expected = {"model.safetensors", "optimizer.pt", "trainer_state.json"} | {
            f"rng_state_{i}.pth" for i in range(num_processes)
        }
        if missing := expected - inside:
            found.append(f"{checkpoint.name} lacks {sorted(missing)}")
    builds = result.stderr.count("building the tokenizer on process")
    if builds != 1:
        found.append(f"the tokenizer was built {builds} times")
    if "Traceback" in result.stderr:
        found.append("a traceback was printed")
    return found


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--runs", type=int, default=10, help="how many launches (default 10)")
    parser.add_argument("--num_processes", type=int, default=2, help="processes per launch (default 2)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a launch may take before it counts as hung")
    args, extra = parser.parse_known_args()
    extra = [f for f in extra if f != "--"]
    env = dict(
        os.environ, ACCELERATE_USE_CPU="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false"
    )
    failures, walls = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            output_dir = Path(tmp) / f"run{run}"
            start = time.perf_counter()
            try:
                result = subprocess.run(
                    launch_command(args.num_processes, output_dir, extra),
                    cwd=tmp, env=env, capture_output=True, text=True, timeout=args.timeout,
                )  # fmt: skip
                found = problems(result, output_dir, args.num_processes)
            except subprocess.TimeoutExpired:
                found = [f"no exit within {args.timeout:.0f}s"]
            walls.append(time.perf_counter() - start)
            if found:
                failures[run] = found
            print(
                f"run {run}: {'clean' if not found else '; '.join(found)} ({walls[-1]:.1f}s)",
                file=sys.stderr,
                flush=True,
            )
    emit(
        {
            "machine": machine(),
            "runs": args.runs,
            "num_processes": args.num_processes,
            "clean_exits": args.runs - len(failures),
            "median_wall_s": round(statistics.median(walls), 1),
            "failures": failures,
            "extra_flags": " ".join(extra),
        }
    )
    sys.exit(0 if not failures else 1)


if __name__ == "__main__":
    main()
