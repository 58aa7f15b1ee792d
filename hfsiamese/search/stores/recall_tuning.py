"""
How much of the exact top k a FAISS index finds, measured on its own corpus, and `"auto"` settings tuned to a
recall target.

Why: the settings that lose almost nothing for one model (binary codes of a 384-dimensional model) can lose a
third of the exact neighbours for another (a 256-dimensional LSTM over dense clusters of near-copies), and
nothing else tells the user. So a `DuplicateIndex(store="faiss")` measures the index it builds:

* **the sample**: two kinds of query, both drawn seeded from the corpus, because the rows of a corpus are easier
  queries than the questions that arrive later. `RECALL_QUERIES` rows of the corpus (fewer in a smaller corpus) are
  searched exactly (each float32 embedding against every row) and through the FAISS index, **its own row left out
  on both sides**, so recall@k is about the other rows (a query always finds itself). But a row of a corpus of
  near-copy clusters (a Q&A site: a word dropped, two neighbours swapped) finds its cluster however coarse the codes
  are: measured with the LSTM recipe (256 dimensions) over 1.2M such questions, binary codes found 0.976 of the exact
  top 10 for corpus rows and 0.72 for 200 real questions held out of the corpus; adding noise to the rows (0.94) or
  leaving their cluster out (0.94) did not close the gap. So as many **between-row queries** are searched too: the
  normalised sum of two corpus rows drawn at random, a query near no single stored text, like a new question
  (binary codes found 0.58 of their exact top 10 there, int8 codes in IVF lists 0.97 against 0.98 for the held-out
  questions). The recall an index is measured (and tuned) at is the lower of the two, **as a lower confidence
  bound**: a sample of 300 queries a kind estimates recall to about ±0.02, and a figure a user acts on must not
  overstate (the LSTM recipe over 1.2M questions measured 0.964 on its sample, and 200 held-out real questions
  found 0.935), so `recall` is the one-sided `RECALL_CONFIDENCE` (95%) Wilson bound of the lower kind, and a setting
  reaches a target only when that bound does (`recall_sample`: the sample's own figure);
* **recall@k**: the share of the exact top k that the approximate top k finds, where a row scoring as high as
  the exact k-th row counts as found (a corpus with repeated texts has tied rows that either search may
  return); a row within float32 rounding of the k-th score counts too (`tie_tolerance`: the searches order such
  rows by rounding; it put a static student's 1.2M near-copies at 0.966 for every int8 setting);
* **latency**: the approximate search of each sample query on its own (rescoring included, not encoding):
  median and p99, in ms (timed on the machine that built the index, while it built it; a slow setting is
  timed on as many queries as `LATENCY_BUDGET_S` allows).

With `quantization` and `structure` both `"auto"`, `auto_ladder` lists candidate settings in order of cost
(memory of the codes first, then search work), starting from the size-based choice (float32 flat up to
`AnnSpec.exact_up_to` texts; beyond it binary codes in IVF lists, from `BINARY_MIN_DIM` dimensions on), and the
first that reaches the target on the sample is kept. Settings that differ only at search time (lists probed, HNSW
candidates kept, rescoring depth) reuse one trained index; a change of codes or structure builds another, so the
list is short: binary IVF, int8 IVF, int8 HNSW (the same codes and a graph of `8 * hnsw_m` bytes a row, searched
far faster than exhaustively), int8 flat, float32 flat (exact, recall 1 by construction).

`AnnSpec.max_memory_bytes` bounds what the FAISS index may hold (`ann_index.index_bytes`, known before building):
the ladder keeps the settings within it (exact float32 too, so a corpus below `exact_up_to` that does not fit it
is tuned as a larger one); none within it is a one-line error that names the smallest need.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from statistics import NormalDist
from typing import Any

import numpy as np

from hfsiamese.search.stores.ann_index import AnnSpec, default_nlist, index_bytes

DEFAULT_RECALL_TARGET = 0.95
RECALL_K = 10
RECALL_QUERIES = 300
RECALL_SEED = 0
# As many between-row queries (two random rows' normalised sum) as sampled rows: see the module docstring.
BETWEEN_QUERIES = RECALL_QUERIES
# A FAISS index that has grown to this many times the rows it was last measured at is measured again (IVF lists
# and int8 ranges were fitted on the smaller corpus).
REMEASURE_GROWTH = 1.5
# Below this many dimensions, binary codes (1 bit a dimension) are not tried: too few bits to rank near neighbours.
BINARY_MIN_DIM = 256
# How much wider (lists probed, rescoring depth) each further search-time setting looks.
WIDER = 4
# Sample queries are timed one by one until this many seconds are spent (at least `LATENCY_MIN_QUERIES` of them):
# a slow setting (int8 codes searched exhaustively over 10M rows: ~0.7 s a query) does not add minutes to a build,
# nor a fast one (a few ms a query) a tenth to it.
LATENCY_BUDGET_S = 2.0
LATENCY_MIN_QUERIES = 20
# The confidence of the lower bound an index reports as its recall (and tunes to reach the target with).
RECALL_CONFIDENCE = 0.95


def recall_lower_bound(recall: float, num_queries: int, confidence: float = RECALL_CONFIDENCE) -> float:
    """
    The one-sided `confidence` lower bound of a recall measured as the mean of `num_queries` queries' recall.

    Wilson's score bound, written here because the libraries' versions (scipy's `binomtest`) take whole counts and a
    query's recall is a share: a query's recall lies in [0, 1], so its variance is at most p(1 - p), that of a
    yes/no trial of the same mean, and the bound of `num_queries` trials is a conservative one for their mean.
    """
    if num_queries < 1:
        return 0.0
    z = NormalDist().inv_cdf(confidence)
    n, p = num_queries, min(max(recall, 0.0), 1.0)
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z * z / n))


def check_recall_target(value: float | None) -> float | None:
    """A recall target in (0, 1], or None (nothing measured, nothing tuned)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValueError(f"recall_target must be a number in (0, 1] (or None: measure nothing), got {value!r}")
    return float(value)


def tunable(spec: AnnSpec) -> bool:
    """Whether `spec` leaves the codes and the structure to the index (`"auto"`), so that they are tuned."""
    return spec.factory is None and spec.quantization == "auto" and spec.structure == "auto"


def describe(spec: AnnSpec) -> str:
    """A FAISS setting in words, e.g. `binary codes in 128 IVF lists (64 probed), 8x rescoring`."""
    if spec.factory is not None:
        return f"FAISS factory {spec.factory!r}"
    if spec.is_exact:
        return "float32 flat (exact)"
    codes = {
        "none": "float32",
        "int8": "int8 codes",
        "pq": f"PQ codes ({spec.pq_bytes} bytes)",
        "binary": "binary codes",
    }
    where = {
        "flat": "searched exhaustively",
        "hnsw": f"in an HNSW graph (M {spec.hnsw_m}, ef {spec.ef_search})",
        "ivf": f"in {spec.nlist} IVF lists ({spec.nprobe} probed)",
    }[spec.structure]
    rescore = f", {spec.rescore_multiplier}x rescoring" if spec.quantized else ""
    return f"{codes[spec.quantization]} {where}{rescore}"


@dataclass(frozen=True)
class Candidate:
    """One index to build (`build`) and its search-time settings to try on it, cheapest first (`searches`)."""

    build: AnnSpec
    searches: tuple[AnnSpec, ...]


def auto_ladder(spec: AnnSpec, num_texts: int, dim: int) -> list[Candidate]:
    """
    The settings `"auto"` tries for a corpus of `num_texts` `dim`-dimensional embeddings, cheapest first, ending
    with exact float32 search (which always reaches a target) unless `spec.max_memory_bytes` leaves it out (see
    `within_budget`). `spec`'s `nprobe`, `ef_search` and `rescore_multiplier` are the first tried (then `WIDER`
    times more), its `nlist` (or the default for the size) sizes the IVF lists.
    """
    exact = replace(spec, quantization="none", structure="flat").resolved(num_texts, dim)
    if num_texts <= spec.exact_up_to and fits(exact, num_texts, dim):
        return [Candidate(exact, (exact,))]
    nlist = spec.nlist or default_nlist(num_texts)
    probes, wide_probes = min(spec.nprobe, nlist), min(WIDER * spec.nprobe, nlist)
    rescore, deep_rescore = spec.rescore_multiplier, WIDER * spec.rescore_multiplier
    ef, wide_ef = spec.ef_search, WIDER * spec.ef_search
    # Binary codes are the weak part of binary IVF: rescore deeper first. int8 scores are close to exact: the IVF
    # lists left unprobed (the HNSW candidates not kept) are the weak part, so probe (keep) more first.
    binary_searches = [(probes, ef, rescore), (probes, ef, deep_rescore), (wide_probes, ef, deep_rescore)]
    int8_searches = [(probes, ef, rescore), (wide_probes, ef, rescore), (wide_probes, ef, deep_rescore)]
    hnsw_searches = [(probes, ef, rescore), (probes, wide_ef, rescore), (probes, wide_ef, deep_rescore)]
    flat_searches = [(probes, ef, rescore), (probes, ef, deep_rescore)]
    ladder = []
    if dim >= BINARY_MIN_DIM and dim % 8 == 0:
        ladder.append(_candidate(spec, "binary", "ivf", nlist, binary_searches, num_texts, dim))
    ladder.append(_candidate(spec, "int8", "ivf", nlist, int8_searches, num_texts, dim))
    ladder.append(_candidate(spec, "int8", "hnsw", None, hnsw_searches, num_texts, dim))
    ladder.append(_candidate(spec, "int8", "flat", None, flat_searches, num_texts, dim))
    ladder.append(Candidate(exact, (exact,)))
    return within_budget(ladder, spec.max_memory_bytes, num_texts, dim)


def fits(spec: AnnSpec, num_texts: int, dim: int) -> bool:
    """Whether the FAISS index of `spec` over `num_texts` rows stays within `spec.max_memory_bytes` (if any)."""
    need = index_bytes(spec, num_texts, dim)
    return spec.max_memory_bytes is None or need is None or need <= spec.max_memory_bytes


def within_budget(ladder: list[Candidate], budget: int | None, num_texts: int, dim: int) -> list[Candidate]:
    """The candidates whose FAISS index fits `budget` bytes; none: a one-line error naming the smallest need."""
    kept = [candidate for candidate in ladder if fits(candidate.build, num_texts, dim)]
    if not kept:
        needs = {describe(c.build): index_bytes(c.build, num_texts, dim) or 0 for c in ladder}
        smallest = min(needs, key=lambda settings: needs[settings])
        raise ValueError(
            f"max_memory_bytes={budget} is too small for a FAISS index over {num_texts} texts of {dim} dimensions: "
            f"the smallest, {smallest}, needs {needs[smallest]} bytes"
        )
    return kept


def check_budget(asked: AnnSpec, num_texts: int, dim: int) -> None:
    """Settings built untuned (asked for, or `"auto"` without a recall target: the size-based choice) whose FAISS
    index would exceed `max_memory_bytes`: a one-line error."""
    spec = asked.resolved(num_texts, dim)
    if not fits(spec, num_texts, dim):
        advice = (
            "set a recall_target to have settings within it chosen" if tunable(asked)
            else 'leave quantization and structure "auto" to have settings within it chosen'
        )  # fmt: skip
        raise ValueError(
            f"the FAISS index asked for ({describe(spec)}) needs {index_bytes(spec, num_texts, dim)} bytes over "
            f"{num_texts} texts, above max_memory_bytes={spec.max_memory_bytes}: {advice}, or raise it"
        )


def _candidate(
    spec: AnnSpec,
    quantization: str,
    structure: str,
    nlist: int | None,
    searches: list[tuple[int, int, int]],
    num_texts: int,
    dim: int,
) -> Candidate:
    build = replace(spec, quantization=quantization, structure=structure, nlist=nlist).resolved(num_texts, dim)
    variants: list[AnnSpec] = []
    for nprobe, ef_search, rescore in searches:
        if structure != "ivf":
            nprobe = build.nprobe  # no lists to probe: the same search
        if structure != "hnsw":
            ef_search = build.ef_search  # no graph: the same search
        variant = replace(build, nprobe=nprobe, ef_search=ef_search, rescore_multiplier=rescore)
        if variant not in variants:  # probing every list already: wider is the same search
            variants.append(variant)
    return Candidate(variants[0], tuple(variants))


def tie_tolerance(dim: int) -> float:
    """How far apart two rows' scores may be and still tie: the rounding bound of a float32 product of `dim`
    terms (`dim` units in the last place of a score near 1), which is how the searches ordered the rows."""
    return float(dim * np.finfo(np.float32).eps / 2)


def sample_rows(num_rows: int, size: int = RECALL_QUERIES, seed: int = RECALL_SEED) -> np.ndarray:
    """Sorted rows to use as queries, drawn seeded (the same rows for the same corpus size)."""
    rows = np.random.default_rng(seed).choice(num_rows, size=min(size, num_rows), replace=False)
    return np.sort(rows).astype(np.int64)


def between_rows(num_rows: int, size: int = BETWEEN_QUERIES, seed: int = RECALL_SEED) -> tuple[np.ndarray, np.ndarray]:
    """The two rows whose normalised sum is each between-row query, drawn seeded (sorted by the first row)."""
    rng = np.random.default_rng([seed, 1])  # a stream of its own: the sampled rows stay those of `sample_rows`
    first, second = rng.integers(0, num_rows, size=(2, size))
    order = np.argsort(first, kind="stable")
    return first[order].astype(np.int64), second[order].astype(np.int64)


def between_queries(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Unit vectors halfway between two rows' embeddings (`first` where the two cancel out)."""
    sums = (first + second).astype(np.float32)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return np.where(norms > 1e-6, sums / np.maximum(norms, 1e-12), first).astype(np.float32)


@dataclass
class RecallProbe:
    """
    The sample of a measurement: its queries' embeddings, their own rows (-1 for a between-row query: it is no row)
    and their exact top k (own rows left out). `recall` scores the rows another search found for the same
    queries; `gather` reads embeddings by row.
    """

    own_rows: np.ndarray
    queries: np.ndarray
    exact_rows: np.ndarray
    gather: Callable[[np.ndarray], np.ndarray]
    k: int = field(init=False)
    _floor: np.ndarray = field(init=False, repr=False)
    _valid: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.k = int(self.exact_rows.shape[1])
        self._valid = valid = self.exact_rows >= 0
        scores = self._scores(self.exact_rows, valid)
        # The k-th exact score, less float32's rounding: reaching it is a hit.
        self._floor = np.where(valid, scores, np.inf).min(axis=1) - tie_tolerance(self.queries.shape[1])

    @property
    def num_rows(self) -> int:
        """How many of the queries are rows of the corpus (the rest are between-row queries)."""
        return int((self.own_rows >= 0).sum())

    def _scores(self, rows: np.ndarray, valid: np.ndarray) -> np.ndarray:
        # One routine (float64, one shape) for both sides: a row scores the same whichever search found it.
        vectors = self.gather(np.where(valid, rows, 0)).astype(np.float64)
        return np.einsum("qd,qkd->qk", self.queries.astype(np.float64), vectors)

    def recall(self, found_rows: np.ndarray) -> float:
        """The lower of `recall_by_kind`'s two figures: the sample's own recall."""
        return min(self.recall_by_kind(found_rows).values())

    def recall_bound(self, found_rows: np.ndarray, confidence: float = RECALL_CONFIDENCE) -> float:
        """The lower of the two kinds' `recall_lower_bound`s: what the index is measured at."""
        counts = self.queries_by_kind()
        return min(
            recall_lower_bound(value, counts[kind], confidence)
            for kind, value in self.recall_by_kind(found_rows).items()
        )

    def queries_by_kind(self) -> dict[str, int]:
        """How many queries of each kind have an exact top k to find (those the figures are means over)."""
        wanted = self._valid.any(axis=1)
        return {
            "rows": int((wanted & (self.own_rows >= 0)).sum()),
            "between": int((wanted & (self.own_rows < 0)).sum()),
        }

    def recall_by_kind(self, found_rows: np.ndarray) -> dict[str, float]:
        """Share of the exact top k found in `found_rows` (each query's rows best first, at least k + 1 of them so
        that its own row can be dropped; -1 where fewer were found), for the corpus rows (`"rows"`) and the
        between-row queries (`"between"`), each kind present."""
        keep = (found_rows >= 0) & (found_rows != self.own_rows[:, None])
        order = np.argsort(~keep, axis=1, kind="stable")[:, : self.k]  # the first k rows that are not its own
        rows, valid = np.take_along_axis(found_rows, order, axis=1), np.take_along_axis(keep, order, axis=1)
        if rows.shape[1] < self.k:
            pad = self.k - rows.shape[1]
            rows = np.pad(rows, ((0, 0), (0, pad)), constant_values=-1)
            valid = np.pad(valid, ((0, 0), (0, pad)), constant_values=False)
        hits = valid & (self._scores(rows, valid) >= self._floor[:, None])
        figures = {}
        for kind, queries in (("rows", self.own_rows >= 0), ("between", self.own_rows < 0)):
            wanted = int(self._valid[queries].sum())
            if queries.any():
                figures[kind] = 1.0 if wanted == 0 else float(min(hits[queries].sum(), wanted) / wanted)
        return figures


def latencies_ms(
    search_one: Callable[[np.ndarray], Any],
    queries: np.ndarray,
    budget_s: float = LATENCY_BUDGET_S,
    min_queries: int = LATENCY_MIN_QUERIES,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float, float, int]:
    """Median and p99 ms of `search_one` on each query alone (after one warm-up), and how many were timed: all of
    them, or as many as `budget_s` allows (at least `min_queries`)."""
    search_one(queries[:1])
    times: list[float] = []
    for row in range(len(queries)):
        start = clock()
        search_one(queries[row : row + 1])
        times.append((clock() - start) * 1000)
        if len(times) >= min_queries and sum(times) > budget_s * 1000:
            break
    return round(float(np.median(times)), 3), round(float(np.percentile(times, 99)), 3), len(times)


@dataclass(frozen=True)
class RecallReport:
    """
    What a FAISS index was measured to find (see the module docstring), saved in the index's config.

    Attributes:
        recall: recall@k against exact float32 search (1.0 for exact search, which is not measured): the
            `confidence` lower bound of the lower of `recall_rows` and `recall_between` (an index measured by a
            release before 0.2 saved the sample's figure itself, and no `confidence`).
        k: the k of recall@k.
        num_queries: sample queries searched (0: nothing measured): the sampled rows and the between-row queries.
        num_texts: rows in the index when it was measured (a large `add` since measures again).
        target: the recall target it was measured against (None: none was set).
        p50_ms, p99_ms: per-query latency of the approximate search (None where not measured), over
            `timed_queries` of the sample queries (all, unless a slow setting ran out of `LATENCY_BUDGET_S`).
        settings: the settings measured, in words.
        tuned: whether `"auto"` chose the settings (else they were asked for).
        reason: why these settings (the tuning's outcome, a re-measurement after growth...).
        trials: each setting tried while tuning, in order, with its recall.
        recall_rows, recall_between: recall@k for the sampled corpus rows and for the between-row queries (None:
            not measured, or measured by a release that measured rows only).
        recall_sample: the lower of the two on the sample, before the bound (None: not measured, or saved before).
        confidence: the confidence of the bound `recall` is (None: the sample's figure, or not measured).
    """

    recall: float
    k: int
    num_queries: int
    num_texts: int
    target: float | None
    p50_ms: float | None
    p99_ms: float | None
    settings: str
    tuned: bool
    reason: str
    trials: tuple[dict[str, Any], ...] = ()
    timed_queries: int = 0
    recall_rows: float | None = None
    recall_between: float | None = None
    recall_sample: float | None = None
    confidence: float | None = None

    @property
    def measured(self) -> bool:
        return self.num_queries > 0

    @property
    def meets_target(self) -> bool:
        return self.target is None or self.recall >= self.target

    def summary(self) -> str:
        """One line: settings, recall against its target, latency."""
        if not self.measured:
            return f"{self.settings}: recall@{self.k} {self.recall:.3f} (not measured: {self.reason})"
        target = "" if self.target is None else f" (target {self.target})"
        kinds = (
            "" if self.recall_rows is None or self.recall_between is None
            else f" ({self.recall_rows:.3f} for corpus rows, {self.recall_between:.3f} between rows)"
        )  # fmt: skip
        bound = "" if self.confidence is None else f" at {self.confidence:.0%} confidence,"
        return (
            f"{self.settings}: recall@{self.k} {self.recall:.3f}{bound}{kinds} of exact search on {self.num_queries} sampled queries"
            f"{target}, {self.p50_ms} ms p50 / {self.p99_ms} ms p99 a query ({self.timed_queries} timed); {self.reason}"
        )

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["trials"] = [dict(trial) for trial in self.trials]
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RecallReport:
        """From a saved config (keys a later release adds are ignored; those missing take neutral defaults)."""
        known = {key: value for key, value in values.items() if key in cls.__dataclass_fields__}
        known["trials"] = tuple(dict(trial) for trial in known.get("trials", ()))
        defaults = {"k": RECALL_K, "num_queries": 0, "num_texts": 0, "target": None, "p50_ms": None, "p99_ms": None,
                    "settings": "", "tuned": False, "reason": ""}  # fmt: skip
        return cls(**{**defaults, **known})


__all__ = [
    "BETWEEN_QUERIES",
    "BINARY_MIN_DIM",
    "DEFAULT_RECALL_TARGET",
    "RECALL_CONFIDENCE",
    "RECALL_K",
    "RECALL_QUERIES",
    "REMEASURE_GROWTH",
    "Candidate",
    "RecallProbe",
    "RecallReport",
    "auto_ladder",
    "between_queries",
    "between_rows",
    "check_budget",
    "check_recall_target",
    "describe",
    "fits",
    "latencies_ms",
    "recall_lower_bound",
    "sample_rows",
    "tie_tolerance",
    "tunable",
    "within_budget",
]
