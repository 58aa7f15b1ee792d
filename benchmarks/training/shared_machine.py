#!/usr/bin/env python
"""Two training runs on one machine: each run's wall time alone and started together, per environment setting.

    python benchmarks/training/shared_machine.py                                   # the default LSTM recipe, 60 steps
    python benchmarks/training/shared_machine.py --setting "passive=OMP_WAIT_POLICY=PASSIVE" --setting "shipped="
    python benchmarks/training/shared_machine.py --recipe_args recipes/configs/minilm_qqp.yaml --max_steps 20

Each run is the user's command, `python recipes/train.py [RECIPE_ARGS] --max_steps N --eval_strategy no
--save_strategy no` (with `--max_steps 0`, the whole recipe as shipped), in a fresh temporary output folder (nothing of the user's is touched). For every
setting (`NAME=VAR=VALUE,VAR=VALUE`; empty: the environment as it is, i.e. what the recipes ship), one
run alone, then two started together; the ratio together/alone is what sharing the machine costs each
run (2 means the cores are simply shared; far above 2 means the runs fight over them). Settings are
measured in turn within one invocation, so their ratios compare. Prints a markdown table and one JSON line.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import REPO, TRAIN_SCRIPT, argument_parser, emit, machine, markdown_table

DEFAULT_SETTINGS = [
    "shipped=",  # what the recipes do by themselves (hfsiamese.utils.openmp_defaults)
    "runtime=HFSIAMESE_OMP_DEFAULTS=0",  # OpenMP as the runtime ships it: the recipes' own choice off
    "passive=OMP_WAIT_POLICY=PASSIVE",
]


def parse_setting(text: str) -> tuple[str, dict[str, str]]:
    name, _, assignments = text.partition("=")
    env = {}
    for assignment in filter(None, assignments.split(",")):
        key, _, value = assignment.partition("=")
        env[key] = value
    return name, env


def run_together(
    count: int, command: list[str], env: dict[str, str], root: Path, timeout: float, output_flag: bool = True
) -> list[float]:
    """Start `count` runs at once (each with its own `--output_dir` under `root` when `output_flag`); each one's wall time (seconds)."""
    root.mkdir(parents=True, exist_ok=True)
    processes = []
    for index in range(count):
        output = root / f"run{index}"
        log = open(root / f"run{index}.log", "w")  # noqa: SIM115 - closed below
        started = time.perf_counter()
        argv = [*command, "--output_dir", str(output)] if output_flag else command
        process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        processes.append((process, started, log))
    times = []
    for process, started, log in processes:
        code = process.wait(timeout=timeout)
        times.append(time.perf_counter() - started)
        log.close()
        if code != 0:
            raise SystemExit(f"a run failed (exit {code}); see {log.name}")
    return times


def main(argv: list[str] | None = None) -> dict:
    parser = argument_parser(__doc__)
    parser.add_argument(
        "--setting", action="append", help="NAME=VAR=VALUE[,VAR=VALUE] (repeat); default: " + " ".join(DEFAULT_SETTINGS)
    )
    parser.add_argument("--max_steps", type=int, default=60, help="Steps per run; 0: the whole recipe as shipped.")
    parser.add_argument(
        "--recipe_args", nargs="*", default=[], help="Config and flags given to recipes/train.py first."
    )
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument(
        "--command",
        default=None,
        help="Time this command instead of recipes/train.py (split as a shell would; run from the repository root, no --output_dir added), "
        'e.g. an encoding job: "python recipes/search.py --model_name_or_path M --corpus C --query Q".',
    )
    parser.add_argument("--keep_logs", default=None, help="Keep each run's log (and output) under this new folder.")
    args = parser.parse_args(argv)
    if args.keep_logs and Path(args.keep_logs).exists():
        raise SystemExit(f"--keep_logs {args.keep_logs} exists already: name a new folder")
    command = [sys.executable, str(TRAIN_SCRIPT), *args.recipe_args, "--disable_tqdm", "true"]
    if args.max_steps > 0:  # 0: the recipe's whole run as shipped (its epochs, evaluations and saves)
        command += ["--max_steps", str(args.max_steps), "--eval_strategy", "no", "--save_strategy", "no"]
    if args.command:
        command = [sys.executable if word == "python" else word for word in shlex.split(args.command)]
    rows = []
    for text in args.setting or DEFAULT_SETTINGS:
        name, extra = parse_setting(text)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **extra}
        with tempfile.TemporaryDirectory(prefix="shared_machine_") as scratch:
            root = Path(args.keep_logs) / name if args.keep_logs else Path(scratch)
            alone = run_together(1, command, env, root / "alone", args.timeout, not args.command)[0]
            together = run_together(2, command, env, root / "together", args.timeout, not args.command)
        rows.append({"setting": name, "env": extra, "alone_s": round(alone, 1), "together_s": [round(t, 1) for t in together],
                     "ratio": round(max(together) / alone, 2)})  # fmt: skip
        print(
            f"{name}: alone {alone:.1f} s, together {together[0]:.1f} / {together[1]:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    table = markdown_table(
        ("setting", "environment", "alone", "two together (each)", "together / alone"),
        (
            (
                row["setting"],
                ", ".join(f"`{k}={v}`" for k, v in row["env"].items()) or "as shipped",
                f"{row['alone_s']:.1f} s",
                " / ".join(f"{t:.1f} s" for t in row["together_s"]),
                f"{row['ratio']:.2f}×",
            )
            for row in rows
        ),
    )
    print("\n".join(table))
    result = {"machine": machine(), "command": " ".join(command[1:]), "rows": rows}
    emit(result)
    return result


if __name__ == "__main__":
    main()
