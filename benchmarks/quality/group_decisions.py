#!/usr/bin/env python
""""Same duplicate group" against the pair threshold itself, on labelled pairs: does grouping lose what the pairs know?

    hfsiamese split --output_file outputs/qqp_validation.jsonl
    python benchmarks/quality/group_decisions.py --model_name_or_path outputs/lstm_qqp \\
        --test_file outputs/qqp_validation.jsonl [--k 10] [--guard mean] [--threshold COSINE | --fit_pair_threshold] \\
        [--cross_encoder outputs/cross_minilm_qqp --cross_encoder_budget 200 --check_size 50] [--fit_group_threshold] \\
        [--link_margin 0.05]

The distinct questions of `--test_file` form an exact `DuplicateIndex` with the model's calibrated threshold
(`config.threshold`, `--threshold`, or with `--fit_pair_threshold` the accuracy-best cut of these pairs' cosines, as
training calibrates on validation: for a model without one, e.g. `minilm`); `find_groups(k=--k, guard=...)` groups
them with each guard (`cross_encoder` only with `--cross_encoder`). Each labelled pair is then decided twice: by the
pair threshold (cosine of the two questions >= the threshold: what `SiameseModel.predict` and `hfsiamese evaluate`
decide) and by the groups (both questions in one group). With `--fit_group_threshold` each guard is also run with a
group threshold (`fit_group_threshold`) fitted on one half of the pairs and scored on the other, both ways (2-fold:
no pair decides the bar it is judged by). With `--link_margin DELTA` the groups link neighbours down to the pair
threshold minus DELTA while the guard's bar stays the pair threshold (`find_groups(threshold - DELTA,
group_threshold=threshold)`): the links just under the threshold are ones the bar refuses, so the cross-encoder
guard decides them, and a true duplicate the bi-encoder scored just too low can still join. Per decision rule:
accuracy, precision, recall, F1, the largest group, the cross-encoder pairs scored and the grouping's seconds (on a
shared machine: indicative only). Prints a JSON line per rule and a markdown table.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, command_line, emit, machine, markdown_table, today

GUARDS = ("none", "canonical", "mean", "cross_encoder")
FOLD_SEED = 0


def decision_scores(predicted: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Accuracy, precision, recall and F1 of yes/no decisions against 0/1 labels."""
    true_positives = float((predicted & labels).sum())
    precision = true_positives / max(predicted.sum(), 1)
    recall = true_positives / max(labels.sum(), 1)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    scores = {"accuracy": float((predicted == labels).mean()), "precision": precision, "recall": recall, "f1": f1}
    return {name: round(value, 4) for name, value in scores.items()}


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--model_name_or_path", required=True, help="a bi-encoder folder (or minilm)")
    parser.add_argument("--test_file", required=True, help="labelled pairs (.jsonl/.tsv/.csv, as hfsiamese reads)")
    parser.add_argument("--threshold", type=float, default=None, help="cosine (default: the model's calibrated one)")
    parser.add_argument("--fit_pair_threshold", action="store_true", help="the accuracy-best cosine of these pairs")
    parser.add_argument("--k", type=int, default=10, help="neighbours per question find_groups links")
    parser.add_argument("--guard", action="append", choices=GUARDS, help="guards to run (default: all it can)")
    parser.add_argument("--cross_encoder", default=None, help="a cross-encoder folder: runs the cross_encoder guard")
    parser.add_argument("--cross_encoder_threshold", type=float, default=None, help="default: its calibrated one")
    parser.add_argument("--cross_encoder_budget", type=float, default=None, help="pairs per 1,000 questions")
    parser.add_argument("--check_size", type=int, default=None, help="group size from which every join is checked")
    parser.add_argument("--fit_group_threshold", action="store_true", help="also each guard with a fitted bar")
    parser.add_argument(
        "--link_margin", type=float, default=0.0, help="link down to the threshold minus this; the bar stays at it"
    )
    args = parser.parse_args()
    if not 0 <= args.link_margin < 2:
        parser.error(f"--link_margin is a cosine difference in [0, 2), got {args.link_margin}")

    from benchmarks.search.search_scale import load_model
    from hfsiamese.data import load_pairs
    from hfsiamese.metrics.thresholds import best_threshold
    from hfsiamese.search import DuplicateIndex
    from hfsiamese.search.groups.cross_encoder_guard import DEFAULT_BUDGET, DEFAULT_CHECK_SIZE
    from hfsiamese.search.groups.threshold_fitting import fit_group_threshold

    pairs = load_pairs(args.test_file).to_dict()
    model, tokenizer = load_model(args.model_name_or_path)
    cross_encoder = None
    if args.cross_encoder:
        from hfsiamese.cross_encoder.model import CrossEncoder

        cross_encoder = CrossEncoder.from_pretrained(args.cross_encoder)
    row_of = {text: row for row, text in enumerate(dict.fromkeys(pairs["question1"] + pairs["question2"]))}
    index = DuplicateIndex.build(list(row_of), model, tokenizer, threshold=1.0, store="exact")
    first = np.array([row_of[text] for text in pairs["question1"]])
    second = np.array([row_of[text] for text in pairs["question2"]])
    labels = np.asarray(pairs["label"]) == 1
    embeddings = index.embeddings.numpy()
    cosines = (embeddings[first] * embeddings[second]).sum(axis=1)
    threshold = args.threshold if args.threshold is not None else getattr(model.config, "threshold", None)
    if args.fit_pair_threshold:
        threshold = best_threshold(cosines, labels.astype(int), "accuracy")
    if threshold is None:
        sys.exit(f"{args.model_name_or_path} has no calibrated threshold: pass --threshold COSINE")
    rows = [
        {
            "decision": f"pair threshold (cosine >= {threshold:.4f})",
            **decision_scores(cosines >= threshold, labels),
            "largest group": None, "cross-encoder pairs": None, "seconds": None,
        }
    ]  # fmt: skip
    guards = args.guard or [g for g in GUARDS if g != "cross_encoder" or cross_encoder is not None]
    ce_options = dict(
        cross_encoder=cross_encoder, cross_encoder_threshold=args.cross_encoder_threshold,
        cross_encoder_budget=DEFAULT_BUDGET if args.cross_encoder_budget is None else args.cross_encoder_budget,
        check_size=DEFAULT_CHECK_SIZE if args.check_size is None else args.check_size,
    )  # fmt: skip
    folds = np.random.default_rng(FOLD_SEED).permutation(len(labels)) % 2
    link = threshold - args.link_margin  # the cosine a neighbour needs to be linked at all
    bar = threshold if args.link_margin else None  # the guard's bar stays the pair threshold
    links = f", links down to {link:.4f}" if args.link_margin else ""
    for guard in guards:
        options = ce_options if guard == "cross_encoder" else {}
        started = time.perf_counter()
        groups = index.find_groups(link, args.k, guard=guard, group_threshold=bar, **options)
        seconds = time.perf_counter() - started
        rows.append(group_row(f"same group (guard {guard}, k {args.k}{links})", groups, first, second, labels, seconds))
        if not args.fit_group_threshold or guard == "none":  # "none" has no bar
            continue
        same, bars, calls, largest, started = np.zeros(len(labels), dtype=bool), [], 0, 0, time.perf_counter()
        for fold in (0, 1):
            fit = fit_group_threshold(
                index, first[folds == fold].tolist(), second[folds == fold].tolist(), labels[folds == fold].astype(int),
                guard=guard, k=args.k, threshold=link, **options,
            )  # fmt: skip
            bars.append(fit.group_threshold)
            groups = index.find_groups(link, args.k, guard=guard, group_threshold=fit.group_threshold, **options)
            held_out = folds != fold
            same[held_out] = np.array([groups.group_of(a) == groups.group_of(b) for a, b in
                                       zip(first[held_out], second[held_out])])  # fmt: skip
            calls += groups.cross_encoder_calls
            largest = max(largest, groups.largest(1, min_size=1)[0][2])
        name = f"same group (guard {guard}, k {args.k}{links}, group threshold fitted on the other half: {bars[0]:.3f} / {bars[1]:.3f})"
        rows.append(
            {
                "decision": name, **decision_scores(same, labels), "largest group": largest,
                "cross-encoder pairs": calls if guard == "cross_encoder" else None,
                "seconds": round(time.perf_counter() - started, 1),
            }
        )  # fmt: skip
    for row in rows:
        emit(row)
    columns = ["decision", "accuracy", "precision", "recall", "f1", "largest group", "cross-encoder pairs", "seconds"]
    print(f"\n`{command_line(__file__)}`: {len(labels):,} pairs, {len(row_of):,} questions; {machine()}, {today()}\n")
    print("\n".join(markdown_table(columns, ([row[c] for c in columns] for row in rows))))
    print(json.dumps({"threshold": threshold, "num_pairs": len(labels), "num_questions": len(row_of)}))


def group_row(name: str, groups, first: np.ndarray, second: np.ndarray, labels: np.ndarray, seconds: float) -> dict:
    """One decision rule's row: "both in one group" scored against the labels, with the grouping's figures."""
    same = np.array([groups.group_of(a) == groups.group_of(b) for a, b in zip(first, second)])
    return {
        "decision": name, **decision_scores(same, labels), "largest group": groups.largest(1, min_size=1)[0][2],
        "cross-encoder pairs": groups.cross_encoder_calls if groups.settings.guard == "cross_encoder" else None,
        "seconds": round(seconds, 1),
    }  # fmt: skip


if __name__ == "__main__":
    main()
