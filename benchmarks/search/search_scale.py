#!/usr/bin/env python
"""Duplicate search at scale: 100k to 10M questions, each backend and quantisation side by side.

    python benchmarks/search/search_scale.py --model_name_or_path outputs/static_distilled_qqp --num_texts 1000000 \\
        --config exact --config faiss-flat --config faiss-binary-ivf --config lancedb [--mine faiss-binary-ivf] [--append]

Corpus: the distinct questions of `--source` (default ../shared/data/qqp/dev.tsv), `--num_queries` of them
held out (seeded) as the queries, topped up to `--num_texts` with the seeded synthetic recombinations of
`make_pairs_file.py` (prefix of one real question + suffix of another), all distinct. It is encoded once, as
a user builds a large index (`DuplicateIndex.build(..., shards_dir=...)`: resumable Parquet shards, then one
memory-mapped `embeddings.npy`); every configuration then indexes the same embeddings. Each stage runs in its
own process, so peak RSS (`ru_maxrss`, imports and the model included: ~0.4 GB) is that stage's alone:

* `encode`: the sharded encoding (`encode_to_shards`, batch `--batch_size`); texts/s;
* `build CONFIG`: `DuplicateIndex.build` from the finished shards (assembling `embeddings.npy` the first
  time, training and filling the FAISS index, or inserting into the database) and `save`; the index's size on
  disk (the FAISS file, the embeddings, the texts) and the FAISS index's own bytes (what it keeps in memory);
* `truth`: exact float32 top-k of the queries over all embeddings (chunked, memory-mapped);
* `search CONFIG`: `DuplicateIndex.load` (memory-mapped), then each query alone through `index.search`
  (query encoding included): p50/p99 latency over the queries after one warm-up query, and recall@k against
  `truth` (share of the exact top-k ids found; for a database, also the share of queries whose top-k is
  exactly the exact one); peak RSS of the whole process (model, FAISS codes, pages of the memory-mapped
  files the search touched);
* `mine CONFIG`: `find_duplicates` over the whole index at the model's threshold, k=10.

Configurations: `exact` (torch, memory-mapped), `faiss-flat` (float32 in FAISS), `faiss-int8` (int8 flat,
rescored), `faiss-binary` (binary flat, rescored), `faiss-binary-ivf` (binary codes in IVF cells, rescored:
what `auto` picks beyond 1M texts), `faiss-hnsw` (float32 HNSW), `lancedb` (an embedded LanceDB table),
`qdrant` (Qdrant's embedded mode: slow beyond ~100k, see hfsiamese/search/qdrant_store.py).
`--rescore_multiplier` and `--nprobe` apply to the FAISS configurations.
With `--append`, the rows go to benchmarks/README.md under "## Duplicate search at scale (`search_scale.py`)".
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import add_table_rows, argument_parser, machine, script_path, today
from benchmarks.search.search_latency import SOURCE, make_texts
from benchmarks.search.stage_processes import emit as emit_line, run_stage

HEADING = "## Duplicate search at scale (`search_scale.py`)"
CONFIGS = {
    "exact": {"backend": "exact"},
    "faiss-flat": {"backend": "faiss", "quantization": "none", "structure": "flat"},
    "faiss-int8": {"backend": "faiss", "quantization": "int8", "structure": "flat"},
    "faiss-binary": {"backend": "faiss", "quantization": "binary", "structure": "flat"},
    "faiss-binary-ivf": {"backend": "faiss", "quantization": "binary", "structure": "ivf"},
    "faiss-hnsw": {"backend": "faiss", "quantization": "none", "structure": "hnsw"},
    "lancedb": {"backend": "lancedb"},
    "qdrant": {"backend": "qdrant"},
}
HEADER = (
    "| date | machine | model | texts | config | encode s (texts/s) | build s | disk MiB (index / embeddings / texts) | "
    "FAISS MiB in memory | search peak RSS MiB | recall@10 | same top-10 | p50 ms | p99 ms | find_duplicates s (pairs) |"
)


# --------------------------------------------------------------------------------------------
# Inside the worker processes
# --------------------------------------------------------------------------------------------
def emit(stage: str, **values) -> None:
    emit_line("stage", stage, **values)


def read_corpus(workdir: Path) -> list[str]:
    with open(workdir / "corpus.txt", encoding="utf-8") as handle:
        return handle.read().split("\n")


def load_model(name: str):
    from transformers import AutoTokenizer

    import hfsiamese  # noqa: F401  (registers the Siamese auto classes)
    from hfsiamese.loading import load_siamese_model

    return load_siamese_model(name), AutoTokenizer.from_pretrained(name)


def index_options(args: argparse.Namespace, config: str, workdir: Path) -> dict:
    options = dict(CONFIGS[config], batch_size=args.batch_size)
    if options["backend"] == "faiss":
        from hfsiamese.search import AnnSpec

        options = {"backend": "faiss", "batch_size": args.batch_size}
        spec = {key: value for key, value in CONFIGS[config].items() if key != "backend"}
        options["ann"] = AnnSpec(**spec, rescore_multiplier=args.rescore_multiplier, nprobe=args.nprobe)
    if options["backend"] in ("lancedb", "qdrant"):
        options["database"] = workdir / f"db-{config}"
    return options


def folder_mib(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20 if path.exists() else 0.0


def work_corpus(args: argparse.Namespace, workdir: Path) -> None:
    start = time.perf_counter()
    corpus, queries = make_texts(Path(args.source), args.num_texts, args.num_queries, args.seed)
    (workdir / "corpus.txt").write_text("\n".join(corpus), encoding="utf-8")
    (workdir / "queries.json").write_text(json.dumps(queries))
    emit("corpus", num_texts=len(corpus), seconds=round(time.perf_counter() - start, 1))


def work_encode(args: argparse.Namespace, workdir: Path) -> None:
    from hfsiamese.search import encode_to_shards

    texts = read_corpus(workdir)
    model, tokenizer = load_model(args.model_name_or_path)
    start = time.perf_counter()
    encode_to_shards(
        texts, workdir / "shards", model, tokenizer, shard_size=args.shard_size, batch_size=args.batch_size
    )
    seconds = time.perf_counter() - start
    emit("encode", seconds=round(seconds, 1), texts_per_s=round(len(texts) / seconds))


def work_build(args: argparse.Namespace, workdir: Path, config: str) -> None:
    from hfsiamese.search import DuplicateIndex

    texts = read_corpus(workdir)
    model, tokenizer = load_model(args.model_name_or_path)
    start = time.perf_counter()
    index = DuplicateIndex.build(texts, model, tokenizer, shards_dir=workdir / "shards", shard_size=args.shard_size,
                                 **index_options(args, config, workdir))  # fmt: skip
    if index.backend == "faiss":
        index._ensure_ann()  # part of building (else done by save or the first search)
    target = workdir / f"index-{config}"
    index.save(target)
    seconds = time.perf_counter() - start
    ann_mib = index._ann.memory_bytes() / 2**20 if index._ann is not None else None
    index.close()
    emit("build", config=config, seconds=round(seconds, 1), faiss_mib=None if ann_mib is None else round(ann_mib, 1),
         disk_index_mib=round(folder_mib(target / "ann.faiss") + folder_mib(workdir / f"db-{config}"), 1),
         disk_embeddings_mib=round(folder_mib(target / "embeddings.npy"), 1),
         disk_texts_mib=round(folder_mib(target / "corpus"), 1))  # fmt: skip


def work_truth(args: argparse.Namespace, workdir: Path) -> None:
    import torch

    from hfsiamese.search import topk_cosine

    model, tokenizer = load_model(args.model_name_or_path)
    queries = json.loads((workdir / "queries.json").read_text())
    embeddings = np.load(workdir / "shards" / "embeddings.npy", mmap_mode="r")
    start = time.perf_counter()
    query_embeddings = model.encode(queries, tokenizer).float()
    _, rows = topk_cosine(query_embeddings, torch.from_numpy(np.asarray(embeddings)), args.k, corpus_chunk_size=262144)
    np.save(workdir / "truth.npy", rows.numpy())
    emit("truth", seconds=round(time.perf_counter() - start, 1))


def work_search(args: argparse.Namespace, workdir: Path, config: str) -> None:
    from hfsiamese.search import DuplicateIndex

    model, tokenizer = load_model(args.model_name_or_path)
    queries = json.loads((workdir / "queries.json").read_text())
    truth = np.load(workdir / "truth.npy")
    options = {key: value for key, value in index_options(args, config, workdir).items() if key != "database"}
    index = DuplicateIndex.load(workdir / f"index-{config}", model, tokenizer, **options)
    index.search(queries[0], k=args.k)  # warm-up: first-call allocations, the FAISS file's pages
    latencies, found = [], []
    for query in queries:
        start = time.perf_counter()
        matches = index.search(query, k=args.k)
        latencies.append((time.perf_counter() - start) * 1000)
        found.append([match["id"] for match in matches])
    recall = np.mean([len(set(ids) & set(want.tolist())) / len(want) for ids, want in zip(found, truth)])
    same = np.mean([ids == want.tolist() for ids, want in zip(found, truth)])
    index.close()
    emit("search", config=config, recall_at_k=round(float(recall), 4), same_top_k=round(float(same), 4),
         p50_ms=round(statistics.median(latencies), 2), p99_ms=round(float(np.percentile(latencies, 99)), 2))  # fmt: skip


def work_mine(args: argparse.Namespace, workdir: Path, config: str) -> None:
    from hfsiamese.search import DuplicateIndex

    model, tokenizer = load_model(args.model_name_or_path)
    options = {key: value for key, value in index_options(args, config, workdir).items() if key != "database"}
    index = DuplicateIndex.load(workdir / f"index-{config}", model, tokenizer, **options)
    start = time.perf_counter()
    pairs = index.find_duplicates(k=10, threshold=args.threshold)
    emit(
        "mine",
        config=config,
        seconds=round(time.perf_counter() - start, 1),
        pairs=len(pairs),
        threshold=index.threshold,
    )


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------
def worker(stage: str, args: argparse.Namespace, workdir: Path, *extra: str) -> dict:
    return run_stage(__file__, stage, workdir, forwarded(args), *extra)


def forwarded(args: argparse.Namespace) -> list[str]:
    flags = ["--model_name_or_path", args.model_name_or_path, "--source", args.source]
    for name in ("num_texts", "num_queries", "k", "batch_size", "shard_size", "rescore_multiplier", "nprobe", "seed"):
        flags += [f"--{name}", str(getattr(args, name))]
    if args.threshold is not None:
        flags += ["--threshold", str(args.threshold)]
    return flags


def readme_rows(args: argparse.Namespace, encode: dict, results: dict[str, dict]) -> list[str]:
    rows = []
    for config, stages in results.items():
        build, search, mine = stages["build"], stages.get("search"), stages.get("mine")
        faiss = "–" if build.get("faiss_mib") is None else f"{build['faiss_mib']:.0f}"
        disk = f"{build['disk_index_mib']:.0f} / {build['disk_embeddings_mib']:.0f} / {build['disk_texts_mib']:.0f}"
        mined = f"{mine['seconds']:.0f} ({mine['pairs']:,})" if mine else "–"
        cells = [today(), machine(), args.model_name_or_path, f"{args.num_texts:,}", f"`{config}`",
                 f"{encode['seconds']:.0f} ({encode['texts_per_s']:,})", f"{build['seconds']:.0f}", disk, faiss,
                 f"{search['peak_rss_mib']:.0f}", f"{search['recall_at_k']:.4f}", f"{search['same_top_k']:.2f}",
                 f"{search['p50_ms']:.1f}", f"{search['p99_ms']:.1f}", mined]  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def append_rows(rows: list[str], command: str) -> None:
    add_table_rows(HEADING, HEADER, rows, f"{HEADING}\n\n{HEADER}\n|{'---|' * (HEADER.count(' | ') + 1)}\n")
    print(f"appended {len(rows)} rows ({command})")


def main() -> None:
    parser = argument_parser(__doc__, append=True)
    parser.add_argument("--model_name_or_path", required=True)
    parser.add_argument("--source", default=str(SOURCE), help="BiMPM file whose questions give the text")
    parser.add_argument("--num_texts", type=int, default=1_000_000)
    parser.add_argument("--num_queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--shard_size", type=int, default=250_000)
    parser.add_argument("--rescore_multiplier", type=int, default=8)
    parser.add_argument("--nprobe", type=int, default=64)
    parser.add_argument("--threshold", type=float, default=None, help="cosine threshold for find_duplicates")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", action="append", choices=sorted(CONFIGS), help="repeat for several")
    parser.add_argument(
        "--mine", action="append", default=[], choices=sorted(CONFIGS), help="find_duplicates with these"
    )
    parser.add_argument(
        "--workdir", default=None, help="keep the corpus, shards and indexes here (reused when present)"
    )
    parser.add_argument(
        "--stage", choices=["corpus", "encode", "build", "truth", "search", "mine"], help=argparse.SUPPRESS
    )
    parser.add_argument("--stage_config", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.stage:
        workdir = Path(args.workdir)
        if args.stage in ("build", "search", "mine"):
            return globals()[f"work_{args.stage}"](args, workdir, args.stage_config)
        return globals()[f"work_{args.stage}"](args, workdir)

    workdir = Path(args.workdir or f"/tmp/hfsiamese-search-scale-{args.num_texts}")
    workdir.mkdir(parents=True, exist_ok=True)
    configs = args.config or ["exact", "faiss-binary-ivf"]
    if not (workdir / "corpus.txt").is_file():
        worker("corpus", args, workdir)
    encoded = workdir / "encode.json"  # the first (real) encoding's figures: a rerun finds every shard done
    if not encoded.is_file():
        encoded.write_text(json.dumps(worker("encode", args, workdir)))
    encode = json.loads(encoded.read_text())
    results: dict[str, dict] = {}
    for config in configs:
        for stale in (workdir / f"index-{config}", workdir / f"db-{config}"):
            shutil.rmtree(stale, ignore_errors=True)
        results[config] = {"build": worker("build", args, workdir, "--stage_config", config)}
        if not (
            workdir / "truth.npy"
        ).is_file():  # the exact answers, from the embeddings.npy the first build assembled
            worker("truth", args, workdir)
        results[config]["search"] = worker("search", args, workdir, "--stage_config", config)
        if config in args.mine:
            results[config]["mine"] = worker("mine", args, workdir, "--stage_config", config)
    if args.append:
        command = f"python {script_path(__file__)} --model_name_or_path {args.model_name_or_path} --num_texts {args.num_texts}"
        append_rows(readme_rows(args, encode, results), command)


if __name__ == "__main__":
    main()
