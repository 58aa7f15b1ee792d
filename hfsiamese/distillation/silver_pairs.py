"""
Silver pairs: training questions paired up and labelled by a cross-encoder, to train bi-encoders on more pairs.

People labelled a few pairs per question; a cross-encoder, which reads both questions together and decides
better than a bi-encoder of its size, can label many more. The pairs worth its time are the ones a
bi-encoder confuses: each training question's nearest other training questions by a bi-encoder
("neighbour" pairs: hard negatives and unlabelled duplicates). Random pairs ("random", nearly all easy
negatives) keep the silver set from being all near-misses. Every pair is drawn among the TRAINING split's
questions, and a question of the validation or test pairs (`exclude`) is never in one: silver labels on
held-out questions would leak what the threshold is calibrated and the model scored on.

The labels are hard (`score >= cross_encoder.config.threshold`), which is what the bi-encoder losses train on;
the score itself is kept as `silver_score`. `hfsiamese silver-pairs` writes them to a JSON-lines file and
`DataArguments.silver_pairs_file` adds them to a training split (`hfsiamese.training.preparation.load_splits`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch
import torch.nn.functional as F

from hfsiamese.data.question_identity import (
    first_positions,
    identity_name,
    question_codes,
    question_keys,
    question_texts,
)
from hfsiamese.utils.exact_topk import topk_cosine

if TYPE_CHECKING:
    from hfsiamese.cross_encoder.model import CrossEncoder

__all__ = ["SILVER_SOURCES", "label_silver_pairs", "silver_threshold"]

logger = logging.getLogger(__name__)

SILVER_SOURCES = ("neighbour", "random")
# Random pairs are drawn from an explicit list of every candidate pair up to this many pairs (exact, even when
# nearly all of them are asked for); above it they are drawn with replacement, in rounds, and repeats dropped.
ENUMERATE_UP_TO = 2_000_000
MAX_DRAW_ROUNDS = 50
# Neighbour queries per search call: the search fetches `neighbours` + the chunk's most gold partners of a question.
QUERY_CHUNK = 4096


def silver_threshold(cross_encoder: CrossEncoder) -> float:
    """The cross-encoder's calibrated threshold, which makes the silver labels; none is a ValueError."""
    threshold = getattr(cross_encoder.config, "threshold", None)
    if threshold is None:
        name = getattr(cross_encoder, "name_or_path", "") or "given"
        raise ValueError(
            f"the cross-encoder {name} has no calibrated threshold to label silver pairs with: "
            "train it with hfsiamese train (validation calibrates it) or calibrate it (hfsiamese calibrate)"
        )
    return float(threshold)


def label_silver_pairs(
    cross_encoder: CrossEncoder,
    train_pairs: datasets.Dataset,
    *,
    bi_encoder: Any,
    tokenizer: Any | None = None,
    neighbours: int = 3,
    random_pairs: int | None = None,
    seed: int = 42,
    exclude: datasets.Dataset | None = None,
    batch_size: int = 64,
    max_length: int | None = None,
    show_progress_bar: bool = False,
) -> datasets.Dataset:
    """
    Pairs of training questions labelled by `cross_encoder`: each distinct question of `train_pairs` with its
    `neighbours` nearest other training questions by `bi_encoder` (exact cosine top-k of `bi_encoder.encode`,
    tokenised with `tokenizer`; pairs already among the gold pairs skipped), then `random_pairs` random pairs
    (None: as many as there are questions; a seeded `numpy` Generator). Pairs are unordered and each comes
    once (a neighbour pair before a random one); no pair of `train_pairs`, whatever its label, comes again;
    and no question of `exclude` (the validation and test pairs, by question identity, `hfsiamese.data.question_ids`)
    is in any pair. All pairs are scored in one `cross_encoder.score_pairs` call.

    Returns `question1`, `question2`, `qid1`/`qid2` (when `train_pairs` has ids), `label` (1 where the score
    reaches `cross_encoder.config.threshold`), `silver_score` and `source` ("neighbour" or "random"), in a
    deterministic order for a given seed (neighbour pairs by question, then random ones).
    """
    threshold = silver_threshold(cross_encoder)
    if neighbours < 0 or (random_pairs is not None and random_pairs < 0):
        raise ValueError(
            f"neighbours and random_pairs must be >= 0, got neighbours={neighbours}, random_pairs={random_pairs}"
        )
    questions = _TrainingQuestions.of(train_pairs, exclude)
    pool = questions.pool
    if len(pool) < 2:
        raise ValueError(f"{len(pool)} training question(s) outside the excluded pairs: too few to pair")
    neighbour_codes = np.empty(0, dtype=np.int64)
    if neighbours > 0:
        embeddings = bi_encoder.encode(
            [questions.texts[i] for i in pool], tokenizer, batch_size=batch_size, show_progress_bar=show_progress_bar
        )
        neighbour_codes = questions.neighbour_pairs(F.normalize(embeddings.float(), dim=-1), neighbours)
    wanted = len(pool) if random_pairs is None else random_pairs
    random_codes = questions.random_pairs(wanted, neighbour_codes, np.random.default_rng(seed))
    codes = np.concatenate([neighbour_codes, random_codes])
    if len(codes) == 0:
        raise ValueError("no candidate pair left to label (every pair of training questions is a gold pair)")
    first, second = codes // questions.count, codes % questions.count
    texts1 = [questions.texts[i] for i in first]
    texts2 = [questions.texts[i] for i in second]
    scores = cross_encoder.score_pairs(
        texts1, texts2, batch_size=batch_size, max_length=max_length, show_progress_bar=show_progress_bar
    ).numpy()
    columns: dict[str, Any] = {"question1": texts1, "question2": texts2}
    features = {"question1": datasets.Value("string"), "question2": datasets.Value("string")}
    if questions.ids is not None:
        columns.update(qid1=[questions.ids[i] for i in first], qid2=[questions.ids[i] for i in second])
        features.update(qid1=datasets.Value("string"), qid2=datasets.Value("string"))
    columns.update(
        label=(scores >= threshold).astype(np.int64),
        silver_score=scores.astype(np.float32),
        source=[SILVER_SOURCES[0]] * len(neighbour_codes) + [SILVER_SOURCES[1]] * len(random_codes),
    )
    features.update(
        label=datasets.Value("int64"), silver_score=datasets.Value("float32"), source=datasets.Value("string")
    )
    logger.info(
        "silver pairs: %d neighbour and %d random pairs over %d training questions (%d excluded), %d labelled duplicates at threshold %.4f",
        len(neighbour_codes), len(random_codes), len(pool), questions.count - len(pool), int(columns["label"].sum()), threshold,
    )  # fmt: skip
    return datasets.Dataset.from_dict(columns, features=datasets.Features(features))


@dataclass(frozen=True)
class _TrainingQuestions:
    """
    The distinct questions of the training pairs, numbered 0..count-1 by `question_codes`, with their first texts (and
    ids), which of them may be paired (`pool`: not a question of the excluded pairs), and the gold pairs. A pair of
    questions i < j is the integer `i * count + j`.
    """

    texts: list[str]
    ids: list[str] | None
    count: int
    pool: np.ndarray
    gold: np.ndarray  # sorted pair codes of the training pairs
    degree: np.ndarray  # per question, its gold partners

    @classmethod
    def of(cls, train_pairs: datasets.Dataset, exclude: datasets.Dataset | None) -> _TrainingQuestions:
        codes = question_codes(train_pairs)
        first = first_positions(codes)
        texts = question_texts(train_pairs, first).to_pylist()
        key1, key2 = question_keys(train_pairs)
        keys = pa.chunked_array(key1.chunks + key2.chunks, type=pa.string()).take(pa.array(first))
        ids = keys.to_pylist() if identity_name(train_pairs) == "question ids" else None
        allowed = np.ones(codes.count, dtype=bool)
        if exclude is not None and len(exclude) > 0:
            if identity_name(exclude) != identity_name(train_pairs):
                raise ValueError(
                    f"the training pairs are identified by {identity_name(train_pairs)} but the excluded pairs by "
                    f"{identity_name(exclude)}: give both qid1/qid2 or neither"
                )
            held1, held2 = question_keys(exclude)
            held = pa.chunked_array(held1.chunks + held2.chunks, type=pa.string()).unique()
            allowed = ~pc.is_in(keys, value_set=held).to_numpy(zero_copy_only=False)
        low = np.minimum(codes.codes1, codes.codes2)
        high = np.maximum(codes.codes1, codes.codes2)
        gold = np.unique(low * np.int64(codes.count) + high)
        degree = np.bincount(np.concatenate([gold // codes.count, gold % codes.count]), minlength=codes.count)
        return cls(texts, ids, codes.count, np.flatnonzero(allowed), gold, degree)

    def pair_codes(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.minimum(a, b) * np.int64(self.count) + np.maximum(a, b)

    def neighbour_pairs(self, embeddings: torch.Tensor, neighbours: int) -> np.ndarray:
        """Each pool question's `neighbours` nearest pool questions that are no gold partner of it, as pair codes, each once."""
        found = []
        for start in range(0, len(self.pool), QUERY_CHUNK):
            rows = torch.arange(start, min(start + QUERY_CHUNK, len(self.pool)))
            # Fetch enough that `neighbours` remain after skipping the question's gold partners.
            k = min(neighbours + int(self.degree[self.pool[rows.numpy()]].max()), len(self.pool) - 1)
            _, nearest = topk_cosine(embeddings[rows], embeddings, k, exclude_indices=rows)
            candidates = self.pair_codes(self.pool[rows.numpy()][:, None], self.pool[nearest.numpy()])
            allowed = ~np.isin(candidates, self.gold)
            chosen = allowed & (np.cumsum(allowed, axis=1) <= neighbours)
            found.append(candidates[chosen])  # row by row, nearest first
        return _first_occurrences(np.concatenate(found))

    def random_pairs(self, wanted: int, taken: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Up to `wanted` random pairs of pool questions, none gold nor in `taken`, each once, in the order drawn."""
        size = len(self.pool)
        total = size * (size - 1) // 2
        if wanted == 0:
            return np.empty(0, dtype=np.int64)
        blocked = np.union1d(self.gold, taken)
        if total <= ENUMERATE_UP_TO:
            first, second = np.triu_indices(size, k=1)
            candidates = self.pair_codes(self.pool[first], self.pool[second])
            candidates = candidates[~np.isin(candidates, blocked)]
            if wanted > len(candidates):
                logger.warning(
                    "silver pairs: %d random pairs asked for, only %d pairs of training questions left",
                    wanted,
                    len(candidates),
                )
            return rng.choice(candidates, size=min(wanted, len(candidates)), replace=False)
        kept = np.empty(0, dtype=np.int64)
        for _ in range(MAX_DRAW_ROUNDS):
            missing = wanted - len(kept)
            if missing <= 0:
                break
            a = rng.integers(size, size=2 * missing + 16)
            b = rng.integers(size - 1, size=len(a))
            b += b >= a  # another question than a
            drawn = _first_occurrences(self.pair_codes(self.pool[a], self.pool[b]))
            drawn = drawn[~np.isin(drawn, blocked) & ~np.isin(drawn, kept)]
            kept = np.concatenate([kept, drawn[:missing]])
        if len(kept) < wanted:
            logger.warning(
                "silver pairs: %d random pairs asked for, %d found in %d draws", wanted, len(kept), MAX_DRAW_ROUNDS
            )
        return kept


def _first_occurrences(codes: np.ndarray) -> np.ndarray:
    """`codes` without repeats, each at its first position."""
    _, first = np.unique(codes, return_index=True)
    return codes[np.sort(first)]
