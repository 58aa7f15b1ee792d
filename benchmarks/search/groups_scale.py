#!/usr/bin/env python
"""Duplicate groups over a synthetic corpus with known groups: time, peak memory and B-cubed F1 of each guard.

    python benchmarks/search/groups_scale.py --num_texts 1000000 [--model_name_or_path outputs/static_distilled_qqp] \\
        [--threshold 0.7] [--k 10] [--community_timeout 900] [--output_dir DIR]
    python benchmarks/search/groups_scale.py --num_texts 20000 --num_sources 2000      # a quick check
    python benchmarks/search/groups_scale.py --num_texts 1000000 --store faiss --guard mean --guard cross_encoder \
        --cross_encoder outputs/cross_minilm_qqp --community_timeout 0   # the cross-encoder guard beside the default

The issue-39 targets: groups over 1M questions in at most 15 minutes once the index exists, peak RSS at most 6 GB;
assigning one new question to its group in at most 50 ms p99 at 1M, search included.

Corpus: the distinct questions of `--source` (default ../shared/data/qqp/dev.tsv; `--num_sources` of them, seeded,
default all) and seeded near-copies of them (`scale_corpora.near_copy`: one or two edits, a word dropped, two
neighbours swapped, a word replaced), `--num_texts` distinct texts in all, shuffled; a text's known group is the
real question it was copied from (QQP's own duplicate pairs among the real questions count against every method
alike). Embeddings: `--model_name_or_path` (a bi-encoder folder, or `minilm`), else `tfidf`: character 3-5-gram
TF-IDF reduced to 256 dimensions by a seeded truncated SVD (no trained model needed; near-copies share most
n-grams, so the groups are findable and the chains realistic).

`--known_groups labelled_pairs` groups `--source`'s own questions instead (QQP dev: 19,056), their known groups the
connected components of its labelled duplicate pairs (an incomplete truth: unlabelled duplicates count against every
method alike); this and the synthetic corpus chose the default guard (`hfsiamese/search/groups/clustering.py`).

Each stage runs in its own process, so its peak RSS (`ru_maxrss`, imports included) is its alone:

* `index`: the corpus, its embeddings, a `DuplicateIndex` (`--store exact`, or `faiss` with `--quantization` and
  `--structure`: at 1M an exact scan of every pair is 10^12 dot products, so the target is for
  `--store faiss --structure hnsw` or another approximate index) saved to the work folder (not timed in the target);
* `groups GUARD`: `DuplicateIndex.load` (memory-mapped) then `find_groups(threshold, k, guard=GUARD)`: seconds,
  peak RSS, groups found, the largest, B-cubed precision / recall / F1 against the known groups; for
  `--guard cross_encoder`, the index loaded with `--cross_encoder` (a trained cross-encoder folder: its calibrated
  threshold decides, or `--cross_encoder_threshold`), `--cross_encoder_budget` pairs per 1,000 questions and
  `--check_size` as `find_groups` takes them, and the cross-encoder pairs scored;
* `assign GUARD` (for the default guard and the cross-encoder guard): the index with that guard's groups (saved by
  `groups GUARD`) loaded, then `--num_assign` questions held out of the index (the corpus's last ones, after the
  shuffle) added one call each, `index.add([text], [id], assign_groups=True)` (embedding, FAISS add, search and
  placement, and the cross-encoder's calls where the guard asks it): milliseconds p50/p99, the share that joined an
  existing group, and the share whose group's canonical question has the same known group;
* `community`: `sentence_transformers.util.community_detection` over the same embeddings at the same threshold
  (`min_community_size=2`, the rest singletons), killed after `--community_timeout` seconds (it compares every pair).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, command_line, machine, markdown_table, write_results
from benchmarks.search.make_pairs_file import real_questions
from benchmarks.search.scale_corpora import near_copy
from benchmarks.search.search_latency import SOURCE
from benchmarks.search.stage_processes import emit, run_stage

GUARDS = ("none", "canonical", "mean", "cross_encoder")
# Whose groups the `assign` stage keeps current: `find_groups`' default guard (`hfsiamese.search.groups.guards.DEFAULT_GUARD`,
# held equal by tests/benchmarks/test_groups_scale.py) and the cross-encoder's. Named here, not imported: the process
# that only starts the stages never loads hfsiamese (4-5 s of imports a run; each stage loads it itself).
ASSIGNED_GUARDS = ("mean", "cross_encoder")
TFIDF_DIM = 256


def labelled_groups(source: Path) -> tuple[list[str], list[int]]:
    """`(texts, known group of each)`: every distinct question of a pair file, grouped by the connected components of
    its labelled duplicate pairs (an incomplete truth: duplicates nobody labelled count against every method alike)."""
    import csv

    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    texts: dict[str, int] = {}
    firsts, seconds = [], []
    with open(source, encoding="utf-8", newline="") as handle:
        for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            first, second = (texts.setdefault(" ".join(text.split()), len(texts)) for text in row[1:3])
            if row[0] == "1":
                firsts.append(first)
                seconds.append(second)
    graph = coo_matrix((np.ones(len(firsts)), (firsts, seconds)), shape=(len(texts), len(texts)))
    return list(texts), connected_components(graph, directed=False)[1].tolist()


def near_copy_groups(source: Path, num_texts: int, num_sources: int | None, seed: int) -> tuple[list[str], list[int]]:
    """`(texts, known group of each)`: real questions and their seeded near-copies, distinct, shuffled."""
    rng = np.random.default_rng(seed)
    words = real_questions(source)
    chosen = rng.permutation(len(words))[: num_sources or len(words)]
    bases = [words[i] for i in chosen]
    texts = {" ".join(w): number for number, w in enumerate(bases[:num_texts])}
    vocabulary = [word for question in bases for word in question]
    editable = [number for number, w in enumerate(bases) if len(w) >= 2]
    while len(texts) < num_texts:
        for number in (editable[i] for i in rng.integers(0, len(editable), num_texts - len(texts))):
            text = " ".join(near_copy(bases[number], rng, vocabulary))
            if text and text not in texts and len(texts) < num_texts:
                texts[text] = number
    order = rng.permutation(len(texts))
    items = list(texts.items())
    return [items[i][0] for i in order], [items[i][1] for i in order]


class TfidfEncoder:
    """Character n-gram TF-IDF reduced by a truncated SVD, as a bi-encoder (`encode` gives unit rows)."""

    def __init__(self, texts: list[str], seed: int) -> None:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True)
        svd = TruncatedSVD(TFIDF_DIM, random_state=seed).fit(self.vectorizer.fit_transform(texts))
        # `svd.transform` multiplies by the transposed components, which scipy copies to a contiguous array on
        # every call (~30 ms a question at 256 dims): held contiguous once, a new question embeds in about 1 ms.
        self.projection = np.ascontiguousarray(svd.components_.T)
        from types import SimpleNamespace

        self.config = SimpleNamespace(sentence_embedding_dim=TFIDF_DIM, threshold=None)
        self.name_or_path = "tfidf"

    def encode(self, texts, tokenizer=None, batch_size: int = 10_000, **_: object):
        import torch

        rows = [
            self.vectorizer.transform(texts[i : i + batch_size]) @ self.projection
            for i in range(0, len(texts), batch_size)
        ]
        return torch.nn.functional.normalize(torch.from_numpy(np.concatenate(rows)).float(), dim=1)


def stage_index(args, workdir: Path) -> None:
    from hfsiamese.search import DuplicateIndex

    if args.known_groups == "labelled_pairs":
        texts, known = labelled_groups(Path(args.source))
    else:
        texts, known = near_copy_groups(Path(args.source), args.num_texts, args.num_sources, args.seed)
    held_out = args.num_assign
    texts, known, new_texts, new_known = texts[:-held_out], known[:-held_out], texts[-held_out:], known[-held_out:]
    np.save(workdir / "known.npy", np.asarray(known, dtype=np.int64))
    (workdir / "assign.json").write_text(json.dumps({"texts": new_texts, "known": new_known}))
    start = time.perf_counter()
    if args.model_name_or_path == "tfidf":
        import pickle

        model, tokenizer = TfidfEncoder(texts, args.seed), None
        (workdir / "encoder.pkl").write_bytes(pickle.dumps(model))  # what `encoder` reads back
    else:
        model, tokenizer = encoder(args, workdir)
    options = {"store": args.store}
    if args.store == "faiss":
        options.update(quantization=args.quantization, structure=args.structure)
    index = DuplicateIndex.build(texts, model, tokenizer, threshold=args.threshold, **options)
    index.save(workdir / "index", overwrite=True)
    emit("stage", "index", num_texts=len(texts), num_known_groups=len(set(known)),
         seconds=round(time.perf_counter() - start, 1))  # fmt: skip


def _scores(predicted: list[int], workdir: Path) -> dict:
    from hfsiamese.search.groups import bcubed_scores

    scores = bcubed_scores(predicted, np.load(workdir / "known.npy").tolist())
    sizes = np.bincount(np.unique(np.asarray(predicted), return_inverse=True)[1])
    return {
        **{name: round(value, 4) for name, value in scores.items()},
        "groups_with_duplicates": int((sizes > 1).sum()),
        "largest_group": int(sizes.max()),
    }


def stage_groups(args, workdir: Path, guard: str) -> None:
    from hfsiamese.search import DuplicateIndex

    index = DuplicateIndex.load(workdir / "index", mmap=True, **cross_encoder_option(args, guard))
    options = {}
    if guard == "cross_encoder":
        given = {"cross_encoder_budget": args.cross_encoder_budget, "check_size": args.check_size}
        options.update({name: value for name, value in given.items() if value is not None})  # else find_groups'
        options.update(cross_encoder_threshold=args.cross_encoder_threshold)
    start = time.perf_counter()
    groups = index.find_groups(args.threshold, args.k, guard=guard, show_progress_bar=args.progress, **options)
    seconds = time.perf_counter() - start
    predicted = [groups.group_of(i) for i in range(len(index))]
    if guard in ASSIGNED_GUARDS:  # what the `assign GUARD` stage keeps current
        from hfsiamese.search.groups.group_storage import save_groups_file

        (workdir / f"groups-{guard}").mkdir(exist_ok=True)
        save_groups_file(groups, workdir / f"groups-{guard}")
    calls = {"cross_encoder_calls": groups.cross_encoder_calls} if guard == "cross_encoder" else {}
    emit("stage", f"groups {guard}", seconds=round(seconds, 1), **calls, **_scores(predicted, workdir))


def cross_encoder_option(args, guard: str) -> dict:
    """The index's cross-encoder for the cross-encoder guard's stages (loading one costs memory the others do not
    spend)."""
    return {"cross_encoder": args.cross_encoder} if guard == "cross_encoder" else {}


def encoder(args, workdir: Path):
    """`(model, tokenizer)` that embeds new questions as the index's did: the fitted TF-IDF encoder the `index`
    stage pickled, or the bi-encoder `--model_name_or_path` names."""
    if args.model_name_or_path == "tfidf":
        import pickle

        return pickle.loads((workdir / "encoder.pkl").read_bytes()), None
    from benchmarks.search.search_scale import load_model

    return load_model(args.model_name_or_path)


def stage_assign(args, workdir: Path, guard: str) -> None:
    import shutil

    from hfsiamese.search import DuplicateIndex
    from hfsiamese.search.groups.group_storage import GROUPS_NAME

    saved = workdir / f"groups-{guard}" / GROUPS_NAME
    if not saved.is_file():
        sys.exit(f"no groups in {saved.parent}: run the `groups {guard}` stage first")
    shutil.copyfile(saved, workdir / "index" / GROUPS_NAME)  # the groups this stage keeps current
    model, tokenizer = encoder(args, workdir)
    index = DuplicateIndex.load(workdir / "index", model, tokenizer, mmap=True, **cross_encoder_option(args, guard))
    held_out = json.loads((workdir / "assign.json").read_text())
    known = np.load(workdir / "known.npy")
    size = len(index)
    index.add([held_out["texts"][0]], [size], assign_groups=True)  # the first call pays for one-off set-up
    seconds, joined, right = [], 0, 0
    for number, (text, source) in enumerate(zip(held_out["texts"][1:], held_out["known"][1:]), start=size + 1):
        start = time.perf_counter()
        (placed,) = index.add([text], [number], assign_groups=True)
        seconds.append(time.perf_counter() - start)
        joined += not placed["new_group"]
        canonical = placed["canonical_id"]
        right += (known[canonical] if canonical < size else -1) == source
    milliseconds = np.asarray(seconds) * 1000
    emit("stage", f"assign {guard}", index_size=size, questions=len(seconds),
         p50_ms=round(float(np.percentile(milliseconds, 50)), 2),
         p99_ms=round(float(np.percentile(milliseconds, 99)), 2),
         joined_a_group=round(joined / len(seconds), 4), canonical_of_its_known_group=round(right / len(seconds), 4))  # fmt: skip


def stage_community(args, workdir: Path) -> None:
    from sentence_transformers.util import community_detection

    from hfsiamese.search import DuplicateIndex

    embeddings = DuplicateIndex.load(workdir / "index").embeddings
    start = time.perf_counter()
    communities = community_detection(embeddings, threshold=args.threshold, min_community_size=2)
    seconds = time.perf_counter() - start
    predicted = list(range(len(embeddings)))  # the texts no community took: each a group of its own
    for number, members in enumerate(communities):
        for member in members:
            predicted[member] = len(embeddings) + number
    emit("stage", "community_detection", seconds=round(seconds, 1), **_scores(predicted, workdir))


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--num_texts", type=int, default=20_000)
    parser.add_argument("--num_sources", type=int, default=None, help="real questions copied (default: all)")
    parser.add_argument(
        "--known_groups",
        default="near_copies",
        choices=("near_copies", "labelled_pairs"),
        help="near_copies: the synthetic corpus; labelled_pairs: --source's own questions (--num_texts ignored)",
    )
    parser.add_argument("--model_name_or_path", default="tfidf", help="tfidf, a bi-encoder folder, or minilm")
    parser.add_argument("--threshold", type=float, default=0.7, help="the cosine of a duplicate pair")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--store", default="exact", choices=("exact", "faiss"), help="the index's (mining's) search")
    parser.add_argument("--quantization", default="auto", help="with --store faiss")
    parser.add_argument("--structure", default="auto", help="with --store faiss (hnsw: no N x N scan at 1M)")
    parser.add_argument(
        "--guard",
        action="append",
        choices=GUARDS,
        help="guards to run (default: all; cross_encoder with --cross_encoder)",
    )
    parser.add_argument(
        "--cross_encoder", default=None, help="a trained cross-encoder folder, for --guard cross_encoder"
    )
    parser.add_argument(
        "--cross_encoder_budget", type=float, default=None, help="pairs per 1,000 questions (default: find_groups')"
    )
    parser.add_argument(
        "--check_size", type=int, default=None, help="of the cross-encoder guard (default: find_groups')"
    )
    parser.add_argument("--cross_encoder_threshold", type=float, default=None, help="default: its calibrated one")
    parser.add_argument("--reuse_index", action="store_true", help="keep the work folder's index (same flags)")
    parser.add_argument("--num_assign", type=int, default=1000, help="questions held out, then assigned one by one")
    parser.add_argument("--community_timeout", type=float, default=900, help="seconds (0: skip community_detection)")
    parser.add_argument("--source", default=str(SOURCE))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--output_dir", default=None)
    parser.add_argument("--progress", action="store_true", help="show find_groups' progress bars (stderr)")
    parser.add_argument("--stage", default=None, help=argparse_hidden())
    parser.add_argument("stage_arguments", nargs="*", help=argparse_hidden())
    args = parser.parse_args()
    if args.num_assign < 2:
        parser.error("--num_assign must be at least 2 (the first call is set-up, not timed)")
    guards = args.guard or [guard for guard in GUARDS if guard != "cross_encoder" or args.cross_encoder]
    if "cross_encoder" in guards and not args.cross_encoder:
        parser.error("--guard cross_encoder needs --cross_encoder (a trained cross-encoder folder)")
    size = args.num_texts if args.known_groups == "near_copies" else "labelled"
    name = f"{size}-{Path(args.model_name_or_path).name}-{args.store}"
    workdir = Path(args.workdir or f"/tmp/hfsiamese-groups-scale-{name}")
    workdir.mkdir(parents=True, exist_ok=True)
    if args.stage == "index":
        return stage_index(args, workdir)
    if args.stage == "groups":
        return stage_groups(args, workdir, args.stage_arguments[0])
    if args.stage == "assign":
        return stage_assign(args, workdir, args.stage_arguments[0])
    if args.stage == "community":
        return stage_community(args, workdir)
    flags = [f"--num_texts={args.num_texts}", f"--model_name_or_path={args.model_name_or_path}",
             f"--threshold={args.threshold}", f"--k={args.k}", f"--source={args.source}", f"--seed={args.seed}",
             f"--store={args.store}", f"--quantization={args.quantization}", f"--structure={args.structure}",
             f"--known_groups={args.known_groups}", f"--num_assign={args.num_assign}"]  # fmt: skip
    if args.num_sources:
        flags.append(f"--num_sources={args.num_sources}")
    if args.cross_encoder:
        flags.append(f"--cross_encoder={args.cross_encoder}")
        flags += [f"--{name}={getattr(args, name)}" for name in ("cross_encoder_budget", "check_size") if getattr(args, name) is not None]  # fmt: skip
        if args.cross_encoder_threshold is not None:
            flags.append(f"--cross_encoder_threshold={args.cross_encoder_threshold}")
    if args.reuse_index and (workdir / "index_row.json").is_file():  # built by an earlier run with these flags
        rows = [json.loads((workdir / "index_row.json").read_text())]
    else:
        rows = [run_stage(__file__, "index", workdir, flags)]
        (workdir / "index_row.json").write_text(json.dumps(rows[0]))
    rows += [run_stage(__file__, "groups", workdir, flags, guard) for guard in guards]
    assign_rows = [run_stage(__file__, "assign", workdir, flags, guard) for guard in guards if guard in ASSIGNED_GUARDS]
    if args.community_timeout > 0:
        rows.append(run_community(workdir, flags, args.community_timeout))
    columns = [
        "stage",
        "seconds",
        "peak_rss_mib",
        "precision",
        "recall",
        "f1",
        "groups_with_duplicates",
        "largest_group",
        "cross_encoder_calls",
    ]
    table = markdown_table(columns, ([row.get(c) for c in columns] for row in rows))
    if assign_rows:
        table += [""] + markdown_table(
            ["stage", "index size", "questions", "p50 ms", "p99 ms", "joined a group", "canonical of its known group",
             "peak_rss_mib"],
            [[row[c] for c in ("stage", "index_size", "questions", "p50_ms", "p99_ms", "joined_a_group",
                               "canonical_of_its_known_group", "peak_rss_mib")] for row in assign_rows],
        )  # fmt: skip
        rows += assign_rows
    result = {"command": command_line(__file__), "machine": machine(), "rows": rows}
    note = f"{rows[0]['num_texts']:,} texts of {rows[0]['num_known_groups']:,} known groups, {args.model_name_or_path}, cosine {args.threshold}, k={args.k}; {machine()}"
    output_dir = Path(args.output_dir or workdir)
    output_dir.mkdir(parents=True, exist_ok=True)
    write_results(output_dir, "groups_scale", result, table, note)


def run_community(workdir: Path, flags: list[str], timeout: float) -> dict:
    """The `community` stage (as `run_stage` runs one), stopped after `timeout` seconds."""
    command = [sys.executable, __file__, "--stage", "community", "--workdir", str(workdir), *flags]
    environment = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DATASETS_DISABLE_PROGRESS_BARS="1")
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"stage": "community_detection", "seconds": f"> {timeout:.0f} (stopped)"}
    if result.returncode != 0:
        sys.exit(f"stage community failed:\n{result.stderr[-4000:]}")
    (row,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    print(json.dumps(row), flush=True)
    return row


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
