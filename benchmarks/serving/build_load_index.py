#!/usr/bin/env python
"""The index the service's load table is measured on: `--num_texts` questions of the scale benchmark's corpus
(`benchmarks/search/scale_corpora.py`: QQP dev's questions topped up with seeded recombinations of them), embedded by
the model, kept in a LanceDB database (the writable service's default store; `--store faiss`: a FAISS index in the
folder, searched in memory), grouped, saved.

    python benchmarks/serving/build_load_index.py --model_name_or_path outputs/lstm_qqp --num_texts 1000000 \\
        --output_dir outputs/load_index_1m
    python benchmarks/serving/service_load.py --index_dir outputs/load_index_1m/index \\
        --model_name_or_path outputs/lstm_qqp --concurrency 1 8 32 --baseline

Prints one JSON line: the number of questions and the seconds spent building (embedding included) and grouping.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, emit, machine, today
from benchmarks.search.scale_corpora import make_corpus
from benchmarks.search.search_latency import SOURCE
from benchmarks.serving.served_index import build_index, work_folder


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--model_name_or_path", required=True)
    parser.add_argument("--num_texts", type=int, default=1_000_000)
    parser.add_argument("--output_dir", required=True, help="a new or empty folder: the database and the saved index")
    parser.add_argument("--source", default=str(SOURCE), help="the pairs file whose questions give the text")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", choices=("lancedb", "faiss"), default="lancedb")
    args = parser.parse_args()
    if args.num_texts < 1:
        parser.error(f"--num_texts must be at least 1, got {args.num_texts}")
    if not Path(args.source).is_file():
        parser.error(f"--source {args.source} is not a file")
    root = work_folder(parser, args.output_dir, "load_index_")
    corpus, _ = make_corpus("recombined", Path(args.source), args.num_texts, 1, args.seed)

    start = time.perf_counter()
    index_dir = build_index(args.model_name_or_path, corpus, root, args.store)
    emit({"questions": len(corpus), "build_and_group_s": round(time.perf_counter() - start, 1),
          "store": args.store, "index_dir": str(index_dir), "model": args.model_name_or_path, "machine": machine(), "date": today()})  # fmt: skip


if __name__ == "__main__":
    main()
