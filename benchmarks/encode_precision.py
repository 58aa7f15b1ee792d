#!/usr/bin/env python
"""encode's precision on trained models: what `dtype="auto"` picks here, bf16 autocast against fp32 on the validation slice.

    python benchmarks/encode_precision.py --model outputs/minilm_qqp --config recipes/configs/minilm_qqp.yaml \\
        --model outputs/lstm_qqp --config recipes/configs/lstm_qqp.yaml

For each model (with the recipe config whose split it was trained on, so its validation pairs were never
trained on): the distinct validation questions encoded with `dtype=torch.float32` and `dtype=torch.bfloat16`,
timed in turn (`--repeats`, best of), then per precision the pair AP and accuracy at the model's calibrated
threshold, retrieval MRR@10 among the slice's questions, and the lowest / mean cosine between a question's
fp32 and bf16 embeddings; and what `encode(dtype="auto")` chose on this machine, with its reason. Prints a
markdown table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import average_precision_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import machine
from qqp_slices import recipe_splits

import hfsiamese  # noqa: F401  (registers the Auto classes, sets OpenMP's wait policy before torch's pool starts)
from hfsiamese.evaluation import question_corpus, retrieval_of_embeddings

PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16}


def measure(model_dir: str, config: str, repeats: int, batch_size: int) -> dict:
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    validation = recipe_splits(config)["validation"]
    questions, groups = question_corpus(validation)
    labels = np.asarray(validation["label"])
    embeddings, seconds = {}, {name: [] for name in PRECISIONS}
    model.encode(questions[:256], tokenizer, dtype=torch.float32, batch_size=batch_size)  # warm-up
    for _ in range(repeats):
        for name, dtype in PRECISIONS.items():
            start = time.perf_counter()
            embeddings[name] = model.encode(questions, tokenizer, dtype=dtype, batch_size=batch_size)
            seconds[name].append(time.perf_counter() - start)
    threshold = model.config.threshold
    result = {"model": model_dir, "config": config, "questions": len(questions), "pairs": len(labels)}
    for name, vectors in embeddings.items():
        sides = [
            model.encode(list(validation[side]), tokenizer, dtype=PRECISIONS[name], batch_size=batch_size)
            for side in ("question1", "question2")
        ]
        scores = (sides[0] * sides[1]).sum(-1).double().numpy()
        result[name] = {
            "average_precision": round(float(average_precision_score(labels, scores)), 4),
            "accuracy": round(float(((scores >= threshold) == (labels == 1)).mean()), 4)
            if threshold is not None
            else None,
            "mrr@10": round(retrieval_of_embeddings(vectors, groups, k=(10,))["mrr@10"], 4),
            "texts_per_second": round(len(questions) / min(seconds[name]), 1),
        }
    agreement = torch.nn.functional.cosine_similarity(embeddings["fp32"], embeddings["bf16"], dim=-1)
    result["cosine_min"], result["cosine_mean"] = round(float(agreement.min()), 5), round(float(agreement.mean()), 5)
    choice = model.encode_precision()
    result["auto"] = {"choice": choice.name, "reason": choice.reason}
    return result


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", required=True, help="A trained model folder (repeat).")
    parser.add_argument(
        "--config",
        action="append",
        required=True,
        help="The recipe config each model was trained with (one per --model).",
    )
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=64)
    args = parser.parse_args(argv)
    if len(args.model) != len(args.config):
        parser.error(f"give one --config per --model ({len(args.model)} models, {len(args.config)} configs)")
    rows = [measure(model, config, args.repeats, args.batch_size) for model, config in zip(args.model, args.config)]
    print(
        "| model | questions | fp32 AP / acc / MRR@10 | bf16 AP / acc / MRR@10 | cosine fp32↔bf16 min / mean | bf16 / fp32 speed | auto picks |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        fp32, bf16 = row["fp32"], row["bf16"]
        cells = [f"{m['average_precision']:.4f} / {m['accuracy']} / {m['mrr@10']:.4f}" for m in (fp32, bf16)]
        speed = bf16["texts_per_second"] / fp32["texts_per_second"]
        print(f"| `{row['model']}` | {row['questions']} | {cells[0]} | {cells[1]} | {row['cosine_min']:.5f} / {row['cosine_mean']:.5f} "
              f"| {speed:.2f}× | {row['auto']['choice']} ({row['auto']['reason']}) |")  # fmt: skip
    print(json.dumps({"machine": machine(), "rows": rows}))
    return rows


if __name__ == "__main__":
    main()
