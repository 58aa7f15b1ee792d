#!/usr/bin/env python
"""Keyword + dense search against dense alone: duplicate retrieval on the validation pairs, as `hfsiamese evaluate
--retrieval` measures it.

    python benchmarks/search/hybrid_retrieval.py --model_name_or_path outputs/lstm_qqp \\
        [--test_file ../shared/data/qqp/dev.tsv] [--num_pairs N] [--rrf_k 60] [--lexical_weight 0.3] [--append]

The distinct questions of `--test_file` (the first `--num_pairs` pairs: a quick check) form the corpus; each
question that has duplicates searches all the others for them (`hfsiamese.evaluation.question_corpus` and
`evaluate_retrieval`: the same queries, groups and metrics). Dense: `retrieval_of_embeddings`, the figure
`hfsiamese evaluate` reports. Hybrid: a `DuplicateIndex(hybrid=...)` over the same embeddings, each query's own row
left out of both lists before they are fused (`hybrid_search_embeddings(exclude_rows=...)`), `"rrf"` and
`"weighted"`. Prints JSON lines and a markdown row; `--append` adds it to benchmarks/README.md under
"## Keyword + dense search (`hybrid_retrieval.py`)". `--model_name_or_path minilm` wraps all-MiniLM-L6-v2 untrained.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import (
    EMBEDDED_PAIRS,
    REPO,
    add_table_rows,
    argument_parser,
    command_line,
    emit,
    machine,
    markdown_table,
    today,
)
from benchmarks.search.search_latency import load_model

SHARED_DEV = REPO.parent / "shared" / "data" / "qqp" / "dev.tsv"
HEADING = "## Keyword + dense search (`hybrid_retrieval.py`)"
COLUMNS = (
    "date", "machine", "command", "model", "questions", "queries", "dense MRR@10", "rrf MRR@10 (k)",
    "weighted MRR@10 (w)", "dense R@10", "rrf R@10", "weighted R@10",
)  # fmt: skip
SECTION = f"""{HEADING}

Duplicate retrieval on the validation pairs (each question with duplicates searches all the others, as
`hfsiamese evaluate --retrieval`): MRR@10 and recall@10 of the dense search alone and of keyword + dense search
(`DuplicateIndex(hybrid="rrf" | "weighted")`, BM25 by bm25s). Validation figures, not test results.

{markdown_table(COLUMNS, [])[0]}
{markdown_table(COLUMNS, [])[1]}
"""
KS = (1, 5, 10)


def main() -> None:
    parser = argument_parser(__doc__, append=True)
    parser.add_argument("--model_name_or_path", required=True)
    parser.add_argument("--test_file", default=str(SHARED_DEV if SHARED_DEV.is_file() else EMBEDDED_PAIRS))
    parser.add_argument("--num_pairs", type=int, default=None, help="only the first N pairs (a quick check)")
    parser.add_argument("--rrf_k", type=int, default=60)
    parser.add_argument("--lexical_weight", type=float, default=0.3)
    parser.add_argument("--batch_size", type=int, default=256)
    args = parser.parse_args()

    from hfsiamese.data import load_pairs
    from hfsiamese.evaluation import _retrieval_queries, question_corpus, retrieval_of_embeddings
    from hfsiamese.metrics import retrieval_metrics
    from hfsiamese.search import DuplicateIndex
    from hfsiamese.search.lexical import hybrid_search_embeddings

    pairs = load_pairs(args.test_file)
    if args.num_pairs is not None:
        pairs = pairs.select(range(min(args.num_pairs, len(pairs))))
    questions, group_ids = question_corpus(pairs)
    model, tokenizer = load_model(args.model_name_or_path)
    embeddings = model.encode(questions, tokenizer, batch_size=args.batch_size)
    results = {"dense": retrieval_of_embeddings(embeddings, group_ids, k=KS)}
    queries, relevant = _retrieval_queries(group_ids, len(questions))
    settings = {"rrf": {"rrf_k": args.rrf_k}, "weighted": {"lexical_weight": args.lexical_weight}}
    for method, options in settings.items():
        index = DuplicateIndex(model, tokenizer, hybrid=method, **options)
        index.add_embeddings(questions, embeddings)
        hits = hybrid_search_embeddings(
            index, [questions[q] for q in queries], embeddings[queries], max(KS), exclude_rows=queries.tolist()
        )
        results[method] = retrieval_metrics(hits.rows.tolist(), relevant, k=KS)
    for method, metrics in results.items():
        emit({"method": method, **settings.get(method, {}), **{name: round(v, 4) for name, v in metrics.items()}})
    row = markdown_table(
        COLUMNS,
        [[
            today(), machine(), f"`{command_line(__file__)}`", args.model_name_or_path, f"{len(questions):,}",
            f"{len(queries):,}", f"{results['dense']['mrr@10']:.4f}",
            f"{results['rrf']['mrr@10']:.4f} ({args.rrf_k})",
            f"{results['weighted']['mrr@10']:.4f} ({args.lexical_weight})", f"{results['dense']['recall@10']:.4f}",
            f"{results['rrf']['recall@10']:.4f}", f"{results['weighted']['recall@10']:.4f}",
        ]],
    )  # fmt: skip
    print("\n".join(row))
    if args.append:
        add_table_rows(HEADING, row[0], row[2:], SECTION)


if __name__ == "__main__":
    main()
