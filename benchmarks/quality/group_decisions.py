#!/usr/bin/env python
""""Same duplicate group" against the pair threshold itself, on labelled pairs: does grouping lose what the pairs know?

    hfsiamese split --output_file outputs/qqp_validation.jsonl
    python benchmarks/quality/group_decisions.py --model_name_or_path outputs/lstm_qqp \\
        --test_file outputs/qqp_validation.jsonl [--k 10] [--guard mean] [--threshold COSINE]

The distinct questions of `--test_file` form an exact `DuplicateIndex` with the model's calibrated threshold
(`config.threshold`, or `--threshold`); `find_groups(k=--k, guard=...)` groups them with each guard. Each labelled
pair is then decided twice: by the pair threshold (cosine of the two questions >= the threshold: what
`SiameseModel.predict` and `hfsiamese evaluate` decide) and by the groups (both questions in one group). The
issue-39 target: grouping with the default guard at least as accurate as the pair threshold. Prints a JSON line per
decision rule and a markdown table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, command_line, emit, machine, markdown_table, today

GUARDS = ("none", "canonical", "mean")


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
    parser.add_argument("--k", type=int, default=10, help="neighbours per question find_groups links")
    parser.add_argument("--guard", action="append", choices=GUARDS, help="guards to run (default: all)")
    args = parser.parse_args()

    from benchmarks.search.search_scale import load_model
    from hfsiamese.data import load_pairs
    from hfsiamese.search import DuplicateIndex

    pairs = load_pairs(args.test_file).to_dict()
    model, tokenizer = load_model(args.model_name_or_path)
    threshold = args.threshold if args.threshold is not None else getattr(model.config, "threshold", None)
    if threshold is None:
        sys.exit(f"{args.model_name_or_path} has no calibrated threshold: pass --threshold COSINE")
    row_of = {text: row for row, text in enumerate(dict.fromkeys(pairs["question1"] + pairs["question2"]))}
    index = DuplicateIndex.build(list(row_of), model, tokenizer, threshold=threshold, backend="exact")
    first = np.array([row_of[text] for text in pairs["question1"]])
    second = np.array([row_of[text] for text in pairs["question2"]])
    labels = np.asarray(pairs["label"]) == 1
    embeddings = index.embeddings.numpy()
    cosines = (embeddings[first] * embeddings[second]).sum(axis=1)
    rows = [
        {"decision": f"pair threshold (cosine >= {threshold:.4f})", **decision_scores(cosines >= threshold, labels)}
    ]
    for guard in args.guard or GUARDS:
        groups = index.find_groups(threshold, args.k, guard=guard)
        group_of = np.array([groups.group_of(row) for row in range(len(index))])
        same = group_of[first] == group_of[second]
        rows.append({"decision": f"same group (guard {guard}, k {args.k})", **decision_scores(same, labels)})
    for row in rows:
        emit(row)
    columns = ["decision", "accuracy", "precision", "recall", "f1"]
    print(f"\n`{command_line(__file__)}`: {len(labels):,} pairs, {len(row_of):,} questions; {machine()}, {today()}\n")
    print("\n".join(markdown_table(columns, ([row[c] for c in columns] for row in rows))))
    print(json.dumps({"threshold": threshold, "num_pairs": len(labels), "num_questions": len(row_of)}))


if __name__ == "__main__":
    main()
