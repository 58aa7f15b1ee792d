#!/usr/bin/env python
"""What a LanceDB index's vector index finds for questions it has never seen, against its own estimate.

    python benchmarks/search/vector_index_recall.py --index_dir outputs/load_index_1m/index \\
        --model_name_or_path outputs/lstm_qqp --queries 300

The index (a saved `DuplicateIndex` over a LanceDB database with `build_vector_index` done, e.g. by `hfsiamese search
--store lancedb --vector_index`) is loaded; `--queries` texts of `--held_out` pairs that are not texts of the index (folded text
compared; default: ../shared/data/msrp/msr-para-val.tsv, since the load index holds QQP dev's questions) are embedded by the model and searched for their 10 nearest texts twice: through
the vector index (the store's own search) and exactly (numpy over every stored vector, read once). Prints one JSON
line: the index's settings and its recall estimate (the lower of its sample's kinds, as a 95% lower bound), the held-out
questions' recall@10 (a stored text scoring at least the exact 10th counts as found), and the median and p99 ms of
single searches each way (the store's own exact search for the second).
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import EMBEDDED_PAIRS, argument_parser, emit, machine, today

K = 10
# The load index's corpus is QQP dev's questions and recombinations of them, so held-out texts come from elsewhere: the
# MSR paraphrase corpus's validation sentences (news, not questions: a harder shift than a site's next questions).
HELD_OUT = Path(__file__).resolve().parents[3] / "shared" / "data" / "msrp" / "msr-para-val.tsv"


def held_out_questions(pairs_file: str, stored: list[str], limit: int) -> list[str]:
    """Up to `limit` distinct texts of a pair file that are no stored text (the library's question identity: folded
    text compared)."""
    import pyarrow as pa

    from hfsiamese.data import distinct_questions, load_pairs
    from hfsiamese.data.question_identity import fold_text

    texts, _ = distinct_questions(load_pairs(pairs_file))
    kept = set(fold_text(pa.array(stored)).to_pylist())
    return [text for text, key in zip(texts, fold_text(pa.array(texts)).to_pylist()) if key not in kept][:limit]


def timed_ms(search_one, vectors: np.ndarray) -> list[float]:
    """Median and p99 ms of each vector searched alone, every one of them (`recall_tuning.latencies_ms`)."""
    from hfsiamese.search.stores.recall_tuning import latencies_ms

    return list(latencies_ms(search_one, vectors, budget_s=float("inf"))[:2])


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--index_dir", required=True)
    parser.add_argument("--model_name_or_path", required=True)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--held_out",
        default=str(HELD_OUT if HELD_OUT.is_file() else EMBEDDED_PAIRS),
        help="pairs whose texts are queries",
    )
    parser.add_argument("--timed", type=int, default=50, help="queries timed one at a time, each way")
    args = parser.parse_args()
    import lancedb

    from hfsiamese.search import DuplicateIndex
    from hfsiamese.search.stores.lancedb_store import LanceDBStore

    index = DuplicateIndex.load(args.index_dir, args.model_name_or_path)  # the model, to embed queries as it does
    if index.store_name != "lancedb":
        parser.error(f"{args.index_dir} is not an index over a LanceDB database (its store: {index.store_name})")
    store = LanceDBStore.open(index.database, collection=index.collection, create=False)
    settings = store.vector_index
    if settings is None:
        parser.error(f"{args.index_dir}'s database has no vector index: build it (hfsiamese search --vector_index)")
    ids, texts, vectors = [], [], []
    for batch_ids, batch_texts, batch_vectors, _ in store.iter_rows(50_000):
        ids += batch_ids
        texts += batch_texts
        vectors.append(batch_vectors)
    corpus = np.concatenate(vectors)
    queries_text = held_out_questions(args.held_out, texts, args.queries)
    queries = index.encode(queries_text).float().numpy()
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    exact = queries.astype(np.float64) @ corpus.T.astype(np.float64)
    floor = -np.sort(-exact, axis=1)[:, K - 1]
    position = {user_id: row for row, user_id in enumerate(ids)}
    found = store.search(queries, K)
    hits = [
        sum(exact[q, position[match["id"]]] >= floor[q] - 1e-6 for match in matches) for q, matches in enumerate(found)
    ]
    table = lancedb.connect(index.database).open_table(index.collection)

    def exact_search(vector: np.ndarray) -> None:  # the store's exact search, as it searched before the vector index
        query = table.search(vector[0], vector_column_name="vector").distance_type("dot").bypass_vector_index()
        query.limit(K).select(["id_key", "_distance"]).to_arrow()

    timed = queries[: args.timed]
    emit(
        {
            "rows": len(ids),
            "held_out_queries": len(queries_text),
            **asdict(settings),
            "held_out_recall": round(float(np.mean(hits)) / K, 4),
            "through_index_ms_p50_p99": timed_ms(lambda vector: store.search(vector, K), timed),
            "exact_ms_p50_p99": timed_ms(exact_search, timed),
            "machine": machine(),
            "date": today(),
        }
    )


if __name__ == "__main__":
    main()
