#!/usr/bin/env python
"""The index the service's load table is measured on: `--num_texts` questions of the scale benchmark's corpus
(`benchmarks/search/scale_corpora.py`: QQP dev's questions topped up with seeded recombinations of them), embedded by
the model, kept in a LanceDB database (the writable service's default store; `--store faiss`: a FAISS index in the
folder, searched in memory), grouped, saved.

    python benchmarks/serving/build_load_index.py --model_name_or_path outputs/lstm_qqp --num_texts 1000000 \\
        --output_dir outputs/load_index_1m
    python benchmarks/serving/service_load.py --index_dir outputs/load_index_1m/index \\
        --model_name_or_path outputs/lstm_qqp --concurrency 1 8 32 --baseline

With `--store faiss`, `--quantization`, `--structure` and `--ef_search` choose the FAISS index (default: tuned to the
recall target, as `DuplicateIndex` does). `--from_index_dir` takes a saved index instead of embedding and grouping
again: it is loaded with these FAISS settings (so its FAISS index is built anew, its rows and groups kept) and saved
to `--output_dir`, as a site changes the index it serves; e.g. the 1M index as an HNSW graph over float32 vectors:

    python benchmarks/serving/build_load_index.py --model_name_or_path outputs/lstm_qqp \\
        --from_index_dir outputs/load_index_1m_faiss/index --structure hnsw --quantization none --ef_search 256 \\
        --output_dir outputs/load_index_1m_hnsw

Prints one JSON line: the number of questions and the seconds spent building (embedding included) and grouping,
or re-indexing, and the FAISS index's settings and measured recall.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, emit, machine, today
from benchmarks.search.scale_corpora import make_corpus
from benchmarks.search.search_latency import SOURCE
from benchmarks.serving.served_index import build_index, reindex, work_folder
from hfsiamese.search.stores.ann_index import QUANTIZATIONS, STRUCTURES, AnnSpec
from hfsiamese.search.stores.index_files import INDEX_CONFIG_NAME


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--model_name_or_path", required=True)
    parser.add_argument("--num_texts", type=int, default=1_000_000)
    parser.add_argument("--output_dir", required=True, help="a new or empty folder: the database and the saved index")
    parser.add_argument("--source", default=str(SOURCE), help="the pairs file whose questions give the text")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", choices=("lancedb", "faiss"), default="lancedb")
    parser.add_argument("--quantization", choices=(*QUANTIZATIONS, "auto"), default="auto", help="--store faiss only")
    parser.add_argument("--structure", choices=(*STRUCTURES, "auto"), default="auto", help="--store faiss only")
    parser.add_argument("--ef_search", type=int, default=AnnSpec.ef_search, help="HNSW candidates kept a search")
    parser.add_argument("--from_index_dir", default=None, help="a saved FAISS index to re-index, not a new corpus")
    args = parser.parse_args()
    if args.num_texts < 1:
        parser.error(f"--num_texts must be at least 1, got {args.num_texts}")
    if not Path(args.source).is_file():
        parser.error(f"--source {args.source} is not a file")
    try:
        ann = AnnSpec(quantization=args.quantization, structure=args.structure, ef_search=args.ef_search)
    except ValueError as err:
        parser.error(str(err))
    if args.from_index_dir is not None:
        args.store = "faiss"
        if not (Path(args.from_index_dir) / INDEX_CONFIG_NAME).is_file():
            parser.error(f"--from_index_dir {args.from_index_dir} holds no saved index (no index_config.json)")
    if args.store != "faiss" and not ann.is_default:
        parser.error("--quantization, --structure and --ef_search apply to --store faiss")
    root = work_folder(parser, args.output_dir, "load_index_")

    start = time.perf_counter()
    if args.from_index_dir is None:
        corpus, _ = make_corpus("recombined", Path(args.source), args.num_texts, 1, args.seed)
        index_dir = build_index(args.model_name_or_path, corpus, root, args.store, ann)
        row = {"questions": len(corpus), "build_and_group_s": round(time.perf_counter() - start, 1)}
    else:
        index_dir = reindex(args.model_name_or_path, Path(args.from_index_dir), root, ann)
        row = {"from_index_dir": args.from_index_dir, "reindex_s": round(time.perf_counter() - start, 1)}
    emit({**row, "store": args.store, **faiss_settings(index_dir), "index_dir": str(index_dir),
          "model": args.model_name_or_path, "machine": machine(), "date": today()})  # fmt: skip


def faiss_settings(index_dir: Path) -> dict[str, Any]:
    """The saved FAISS index's settings in words and its measured recall (none for another store)."""
    config = json.loads((index_dir / INDEX_CONFIG_NAME).read_text())
    recall = config.get("recall") or {}
    return {key: value for key, value in (("faiss", recall.get("settings")), ("recall", recall.get("recall"))) if value}


if __name__ == "__main__":
    main()
