#!/usr/bin/env python
"""Distilled students against their teacher: encode speed on CPU cores and quality on the validation slice.

    python benchmarks/encoding/student_speed.py \
        --model "MiniLM (teacher)=outputs/minilm_qqp" --model "distilled LSTM=outputs/lstm_distilled_qqp" \
        --model "distilled static=outputs/static_distilled_qqp" --model "plain LSTM=outputs/lstm_qqp" \
        [--questions 5000] [--threads 2] [--repeats 3] [--batch_size 256] [--output results.json]

Each `--model NAME=FOLDER` is a saved Siamese checkpoint (or a base encoder folder, mean-pooled, such
as the untrained all-MiniLM-L6-v2). In one process, with the same `--threads` for all:

- speed: `model.encode` over the first `--questions` distinct questions of the embedded QQP pairs,
  tokenisation included (what a user waits for), best of `--repeats` after one warm-up; texts per
  second, and the speed-up over the first model (the teacher).
- quality, on the validation pairs of the recipes' split (`common/qqp_slices.py`, never trained on): pair
  AP, accuracy at the model's calibrated threshold τ (a model without one is calibrated on these
  pairs: optimistic, flagged with *), and duplicate retrieval MRR@10 and recall@10 over the
  validation questions (`hfsiamese.evaluation.evaluate_retrieval`).

A markdown table on stdout; `--output` also writes the rows as JSON.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import (
    EMBEDDED_PAIRS,
    argument_parser,
    machine,
    markdown_table,
    today,
    write_json,
)
from benchmarks.common.qqp_slices import qqp_train_and_validation, validation_retrieval
from hfsiamese.data import load_pairs
from hfsiamese.data.question_identity import distinct_questions
from hfsiamese.distillation import load_teacher
from hfsiamese.evaluation import evaluate_pairs


def parse_models(specs: list[str]) -> list[tuple[str, str]]:
    models = []
    for spec in specs:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder:
            raise SystemExit(f"--model takes NAME=FOLDER, got {spec!r}")
        if not Path(folder).is_dir():
            raise SystemExit(f"--model {name}: {folder} is not a folder")
        models.append((name, folder))
    return models


def encode_speed(model, tokenizer, texts: list[str], *, batch_size: int, repeats: int) -> float:
    """Texts per second of `model.encode(texts)`, best of `repeats` after a warm-up on a slice."""
    model.encode(texts[: 4 * batch_size], tokenizer, batch_size=batch_size)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        model.encode(texts, tokenizer, batch_size=batch_size)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def quality(model, tokenizer, validation, *, batch_size: int) -> dict[str, float | bool]:
    calibrated = model.config.threshold is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the uncalibrated case is flagged in the table instead
        pairs = evaluate_pairs(model, validation, tokenizer, batch_size=batch_size)
    retrieval = validation_retrieval(model, tokenizer, validation, batch_size=batch_size)
    return {
        "average_precision": pairs["average_precision"],
        "accuracy": pairs["accuracy"],
        "threshold": pairs["threshold"],
        "calibrated": calibrated,
        "mrr@10": retrieval["retrieval_mrr@10"],
        "recall@10": retrieval["retrieval_recall@10"],
    }


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument(
        "--model", action="append", required=True, help="NAME=FOLDER; the first is the reference (teacher)"
    )
    parser.add_argument("--questions", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--output", help="also write the rows as JSON here")
    args = parser.parse_args()
    models = parse_models(args.model)
    torch.set_num_threads(args.threads)

    texts = distinct_questions(load_pairs(str(EMBEDDED_PAIRS)))[0][: args.questions]
    _, validation = qqp_train_and_validation()
    rows = []
    for name, folder in models:
        model, tokenizer = load_teacher(folder)
        row = {"model": name, "folder": folder, "encoder": model.config.encoder_type}
        row["texts_per_second"] = encode_speed(
            model, tokenizer, texts, batch_size=args.batch_size, repeats=args.repeats
        )
        row.update(quality(model, tokenizer, validation, batch_size=args.batch_size))
        rows.append(row)
        print(f"{name}: {row['texts_per_second']:.0f} texts/s, AP {row['average_precision']:.4f}", file=sys.stderr)

    reference = rows[0]["texts_per_second"]
    print(f"{len(texts)} QQP questions, {args.threads} threads, batch {args.batch_size}, best of {args.repeats}; "
          f"{machine()}; {today()}; validation: {len(validation)} pairs")  # fmt: skip
    columns = ("model", "encoder", "texts/s", "speed-up", "pair AP", "accuracy at τ", "τ", "MRR@10", "recall@10")
    cells = []
    for row in rows:
        star = "" if row["calibrated"] else "*"
        cells.append((row["model"], row["encoder"], f"{row['texts_per_second']:,.0f}",
                      f"{row['texts_per_second'] / reference:.1f}×", f"{row['average_precision']:.4f}",
                      f"{row['accuracy']:.4f}{star}", f"{row['threshold']:.3f}{star}", f"{row['mrr@10']:.4f}",
                      f"{row['recall@10']:.4f}"))  # fmt: skip
    print("\n" + "\n".join(markdown_table(columns, cells)))
    if any(not row["calibrated"] for row in rows):
        print("\n* no calibrated threshold in the checkpoint: τ fitted on these validation pairs (optimistic).")
    if args.output:
        write_json(args.output, rows)


if __name__ == "__main__":
    main()
