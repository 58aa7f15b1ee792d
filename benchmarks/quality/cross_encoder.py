#!/usr/bin/env python
"""The cross-encoder against the bi-encoder it should beat, and retrieve-then-rerank, on the recipe's validation split.

    python benchmarks/quality/cross_encoder.py --cross_encoder outputs/cross_minilm_qqp --bi_encoder outputs/minilm_qqp
    python benchmarks/quality/cross_encoder.py --cross_encoder outputs/cross_s1 --cross_encoder outputs/cross_s2 \\
        --bi_encoder outputs/minilm_qqp --output_file outputs/cross_encoder.json

Trained folders in, figures out (train them with `recipes/train.py recipes/configs/cross_minilm_qqp.yaml --seed N`
and `recipes/train.py recipes/configs/minilm_qqp.yaml`). On the validation pairs the recipes split off and
calibrated on (`--config`'s data keys):

1. each cross-encoder's pair average precision as shipped (its `pair_order`), in the given order only, and how far
   its two orders disagree (mean and max |s(a, b) - s(b, a)| in the given order): what averaging both orders buys;
2. the bi-encoder's pair average precision beside them;
3. retrieve-then-rerank with the first cross-encoder: every distinct validation question is indexed with the
   bi-encoder (`DuplicateIndex`); a labelled pair keeps the cross-encoder's score when either question finds the
   other among its top k, else 0 (the bi-encoder never proposed it): the decision AP of that pipeline for each k,
   against the cross-encoder scoring every labelled pair;
4. latency per query of `DuplicateIndex.search(query, k, cross_encoder=...)` (query encoding, search and rerank),
   one query at a time, p50/p99 over `--num_queries` validation questions, for each k; and without rerank.

Prints one JSON object (also written to `--output_file`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import REPO, argument_parser, command_line, machine
from benchmarks.common.qqp_slices import recipe_splits

DEFAULT_CONFIG = REPO / "recipes" / "configs" / "cross_minilm_qqp.yaml"


def cross_encoder_figures(cross: Any, pairs: Any, batch_size: int) -> dict[str, float]:
    """AP as shipped and in the given order, the two orders' disagreement, scoring speed; and the shipped scores."""
    from hfsiamese.metrics import pair_classification_metrics

    texts_a, texts_b, labels = list(pairs["question1"]), list(pairs["question2"]), np.asarray(pairs["label"])
    started = time.perf_counter()
    forward = cross.logits(texts_a, texts_b, batch_size=batch_size)
    backward = cross.logits(texts_b, texts_a, batch_size=batch_size)
    seconds = time.perf_counter() - started
    given, reverse = 1 / (1 + np.exp(-forward.numpy())), 1 / (1 + np.exp(-backward.numpy()))
    both = 1 / (1 + np.exp(-(forward.numpy() + backward.numpy()) / 2))
    shipped = both if cross.pair_order == "both" else given
    ap = lambda scores: pair_classification_metrics(scores, labels)["average_precision"]  # noqa: E731
    return {
        "pair_order": cross.pair_order,
        "average_precision": ap(shipped),
        "average_precision_given_order": ap(given),
        "average_precision_both_orders": ap(both),
        "order_disagreement_mean": float(np.abs(given - reverse).mean()),
        "order_disagreement_max": float(np.abs(given - reverse).max()),
        "sequences_per_second": 2 * len(labels) / seconds,
        "_scores": shipped,
    }


def rerank_figures(
    bi_encoder: str, cross: Any, pairs: Any, ce_scores: np.ndarray, ks: list[int], num_queries: int
) -> dict[str, Any]:
    """Retrieve-then-rerank decision AP per k (vs the cross-encoder on every pair), and latency per query."""
    from hfsiamese.evaluation import question_corpus
    from hfsiamese.metrics import pair_classification_metrics
    from hfsiamese.search import DuplicateIndex

    questions, _ = question_corpus(pairs)
    index = DuplicateIndex.build(questions, bi_encoder)
    row_of = {text: row for row, text in enumerate(questions)}
    labels = np.asarray(pairs["label"])
    every_pair_ap = pair_classification_metrics(ce_scores, labels)["average_precision"]
    result: dict[str, Any] = {"corpus_questions": len(questions), "cross_encoder_every_pair_ap": every_pair_ap, "k": {}}
    top = max(ks)
    _, rows = index.search_embeddings(index.embeddings, top + 1)  # each question's neighbours (itself among them)
    rows = rows.numpy()
    for k in ks:
        neighbours = [set(r[: k + 1].tolist()) for r in rows]
        proposed = np.array(
            [
                row_of[b] in neighbours[row_of[a]] or row_of[a] in neighbours[row_of[b]]
                for a, b in zip(pairs["question1"], pairs["question2"])
            ]
        )
        pipeline = np.where(proposed, ce_scores, 0.0)
        ap = pair_classification_metrics(pipeline, labels)["average_precision"]
        result["k"][k] = {
            "decision_ap": ap,
            "ap_below_every_pair": every_pair_ap - ap,
            "pairs_proposed": float(proposed.mean()),
        }
    generator = np.random.default_rng(0)
    queries = [
        questions[i] for i in generator.choice(len(questions), size=min(num_queries, len(questions)), replace=False)
    ]
    index.search(queries[:5], 10)  # warm-up: first calls allocate
    runs = [("no_rerank", {})] + [(f"rerank_k{k}", {"cross_encoder": cross, "rerank_k": k}) for k in ks]
    for label, options in runs:  # the top 10 shown; with rerank, chosen among the bi-encoder's top k
        times = []
        for query in queries:
            started = time.perf_counter()
            index.search(query, 10, **options)
            times.append((time.perf_counter() - started) * 1000)
        result[f"latency_ms_{label}"] = {"p50": float(np.percentile(times, 50)), "p99": float(np.percentile(times, 99))}
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argument_parser(__doc__)
    parser.add_argument(
        "--cross_encoder", action="append", required=True, help="A trained cross-encoder folder (repeat for seeds)."
    )
    parser.add_argument("--bi_encoder", required=True, help="A trained bi-encoder folder (the MiniLM recipe's).")
    parser.add_argument(
        "--config", default=str(DEFAULT_CONFIG), help="Recipe config whose data keys define the validation split."
    )
    parser.add_argument("--k", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--num_queries", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--output_file")
    args = parser.parse_args(argv)

    import datasets
    import torch
    from transformers import AutoModel

    from hfsiamese.cross_encoder.model import CrossEncoder
    from hfsiamese.evaluation import score_labelled_pairs
    from hfsiamese.metrics import pair_classification_metrics

    datasets.utils.logging.disable_progress_bar()
    validation = recipe_splits(args.config)["validation"]
    bi = AutoModel.from_pretrained(args.bi_encoder)
    scores, labels = score_labelled_pairs(bi, validation)
    report: dict[str, Any] = {
        "command": command_line(__file__, argv),
        "machine": machine(),
        "torch_threads": torch.get_num_threads(),
        "validation_pairs": len(validation),
        "bi_encoder": {
            "folder": args.bi_encoder,
            "average_precision": pair_classification_metrics(scores, labels)["average_precision"],
        },
        "cross_encoders": {},
    }
    first_scores, first = None, None
    for folder in args.cross_encoder:
        cross = CrossEncoder.from_pretrained(folder)
        figures = cross_encoder_figures(cross, validation, args.batch_size)
        if first is None:
            first, first_scores = cross, figures["_scores"]
        report["cross_encoders"][folder] = {k: v for k, v in figures.items() if not k.startswith("_")}
    aps = [f["average_precision"] for f in report["cross_encoders"].values()]
    report["cross_encoder_mean_average_precision"] = float(np.mean(aps))
    report["cross_minus_bi_encoder_ap"] = float(np.mean(aps)) - report["bi_encoder"]["average_precision"]
    report["rerank"] = rerank_figures(args.bi_encoder, first, validation, first_scores, args.k, args.num_queries)
    text = json.dumps(report, indent=2, sort_keys=True)
    print(text)
    if args.output_file:
        Path(args.output_file).write_text(text + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
