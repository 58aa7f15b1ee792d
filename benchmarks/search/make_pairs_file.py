#!/usr/bin/env python
"""Write a large synthetic BiMPM-format pair file (label<TAB>q1<TAB>q2<TAB>pair_id) from real QQP text.

    python benchmarks/search/make_pairs_file.py /tmp/pairs_1m.tsv --pairs 1000000 --seed 0

Seeded and deterministic (same arguments, same bytes). Questions are recombinations of the real
questions of recipes/data/qqp_dev.tsv (the word prefix of one + the word suffix of another), so the
vocabulary, lengths and punctuation are QQP's. The structure mimics QQP's:

* questions live in "topics" of 64; every pair stays inside one topic, so the graph over all
  pairs has QQP-like components (a leak-free split by component is possible) instead of one
  giant random component;
* duplicate chains (q_a~q_b, q_b~q_c, ...) of 2 to 12 questions give transitive duplicate groups;
* the rest are non-duplicate pairs within a topic (same topic, different meaning);
* ~1% of rows repeat an earlier pair, half of them mirrored (q2, q1), and ~5% of those repeats
  flip the label (label noise), so de-duplication has work; a few rows have an empty question.

About 37% of the pairs are duplicates, as in QQP.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import EMBEDDED_PAIRS as QQP_DEV, argument_parser

TOPIC_SIZE = 64
CHAIN_ROOM = 48  # questions of a topic that may be in duplicate chains
DUPLICATE_SHARE = 0.37
REPEAT_SHARE = 0.01
CONFLICT_SHARE = 0.05  # of the repeats
EMPTY_ROWS = 100


def real_questions(path: Path) -> list[list[str]]:
    """The distinct questions of a BiMPM file, as word lists."""
    seen: dict[str, None] = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            for text in row[1:3]:
                seen.setdefault(" ".join(text.split()), None)
    return [text.split() for text in seen if text]


def make_questions(words: list[list[str]], n: int, rng: np.random.Generator) -> list[str]:
    """
    `n` distinct questions, each the first words of one real question and the last words of another
    (at least two of each where the question has them). Distinct, so that two pool questions never
    share a text: the groups are the chains laid out below, not accidents of short texts.
    """
    out: dict[str, None] = {}
    while len(out) < n:
        need = n - len(out)
        first, second = rng.integers(0, len(words), need), rng.integers(0, len(words), need)
        cut_a, cut_b = rng.random(need), rng.random(need)
        for i in range(need):
            a, b = words[first[i]], words[second[i]]
            head = a[: max(2, int(len(a) * cut_a[i]))]
            tail = b[min(int(len(b) * cut_b[i]), len(b) - 2) :]
            out.setdefault(" ".join(head + tail), None)
    return list(out)


def make_pairs(n_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(left question index, right question index, label) for `n_pairs` rows, and the pool size."""
    rng = np.random.default_rng(seed)
    n_base = n_pairs - int(n_pairs * REPEAT_SHARE)
    n_duplicates = int(n_base * DUPLICATE_SHARE)
    n_topics = -(-n_base // TOPIC_SIZE)  # about one pair per question, as many topics as that needs
    pool = n_topics * TOPIC_SIZE

    # Duplicate chains of 2..12 consecutive questions (mostly short), packed into the first
    # CHAIN_ROOM questions of each topic in turn; the other questions only get non-duplicates.
    sizes = np.minimum(1 + rng.geometric(0.45, size=n_duplicates), 12)
    chain_starts, chain_sizes = [], []
    topic = used = edges = 0
    for size in sizes.tolist():
        if used + size > CHAIN_ROOM:
            topic, used = topic + 1, 0
        if topic >= n_topics or edges >= n_duplicates:
            break
        chain_starts.append(topic * TOPIC_SIZE + used)
        chain_sizes.append(size)
        used, edges = used + size, edges + size - 1
    starts, sizes = np.array(chain_starts), np.array(chain_sizes)
    edges_per_chain = sizes - 1
    first_edge = np.cumsum(edges_per_chain) - edges_per_chain
    step = np.arange(int(edges_per_chain.sum())) - np.repeat(first_edge, edges_per_chain)
    dup_left = np.repeat(starts, edges_per_chain) + step
    dup_right = dup_left + 1

    # Non-duplicates: any question of a topic against one of its questions outside the chains
    # (never two members of one chain, which would contradict the chain), each pair once.
    n_negatives = n_base - len(dup_left)
    draws = int(n_negatives * 1.3) + 100
    topic_of = rng.integers(0, n_topics, draws)
    b = rng.integers(CHAIN_ROOM, TOPIC_SIZE, draws)
    a = (b + rng.integers(1, TOPIC_SIZE, draws)) % TOPIC_SIZE
    low, high = topic_of * TOPIC_SIZE + np.minimum(a, b), topic_of * TOPIC_SIZE + np.maximum(a, b)
    _, first = np.unique(low * pool + high, return_index=True)
    first = np.sort(first)[:n_negatives]
    neg_left, neg_right = low[first], high[first]

    left = np.concatenate([dup_left, neg_left])
    right = np.concatenate([dup_right, neg_right])
    label = np.concatenate([np.ones(len(dup_left), np.int8), np.zeros(n_negatives, np.int8)])
    flip = rng.random(len(left)) < 0.5  # which side comes first is random
    left, right = np.where(flip, right, left), np.where(flip, left, right)
    order = rng.permutation(len(left))
    left, right, label = left[order], right[order], label[order]

    # Repeats of earlier rows, half mirrored, some with the other label, inserted after them.
    n_repeats = n_pairs - len(left)
    source = np.sort(rng.integers(0, len(left), n_repeats))
    mirror = rng.random(n_repeats) < 0.5
    rep_left = np.where(mirror, right[source], left[source])
    rep_right = np.where(mirror, left[source], right[source])
    rep_label = np.where(rng.random(n_repeats) < CONFLICT_SHARE, 1 - label[source], label[source])
    # Position in the output: right after the original row (originals shift by earlier inserts).
    at = source + 1 + np.arange(n_repeats)
    is_repeat = np.zeros(n_pairs, dtype=bool)
    is_repeat[at] = True
    out_left, out_right = np.empty(n_pairs, np.int64), np.empty(n_pairs, np.int64)
    out_label = np.empty(n_pairs, np.int8)
    out_left[~is_repeat], out_right[~is_repeat], out_label[~is_repeat] = left, right, label
    out_left[at], out_right[at], out_label[at] = rep_left, rep_right, rep_label
    return out_left, out_right, out_label, pool


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("out", help="output .tsv path (use /tmp, not the repository)")
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--source", default=str(QQP_DEV), help="BiMPM file whose questions give the text")
    args = parser.parse_args()

    start = time.perf_counter()
    rng = np.random.default_rng(args.seed + 1)
    left, right, label, pool = make_pairs(args.pairs, args.seed)
    questions = make_questions(real_questions(Path(args.source)), pool, rng)
    empty = rng.choice(args.pairs, size=min(EMPTY_ROWS, args.pairs), replace=False)
    blank = np.zeros(args.pairs, dtype=bool)
    blank[empty] = True
    with open(args.out, "w", encoding="utf-8", newline="\n") as handle:
        for i in range(args.pairs):
            q1 = "" if blank[i] else questions[left[i]]
            handle.write(f"{label[i]}\t{q1}\t{questions[right[i]]}\t{i + 1}\n")
    print(
        f"wrote {args.pairs} pairs ({int(label.sum())} duplicates, {pool} questions in the pool) to {args.out} "
        f"in {time.perf_counter() - start:.1f}s"
    )


if __name__ == "__main__":
    main()
