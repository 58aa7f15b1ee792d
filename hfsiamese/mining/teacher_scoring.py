"""
Teacher scores for mined groups: each row's [s(query, positive), s(query, negatives[0]), ...] by a teacher, the
`teacher_scores` column the score-distillation losses (`margin_mse`, `listwise_kl`) read.

A cross-encoder teacher scores each pair (`CrossEncoder.score_pairs`, in [0, 1]); a bi-encoder teacher scores the
cosine of its embeddings. Scoring a large mined set with a cross-encoder takes hours, so it runs in shards written to
a folder (`score_shards`): a run that was stopped (a crash, a preempted machine, Ctrl-C) is run again with the same
arguments and continues from the shards it finished.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch

from hfsiamese.data.source_columns import check_required_columns
from hfsiamese.mining.mined_formats import SCORES_FEATURE, TEACHER_SCORES_COLUMN
from hfsiamese.mining.score_shards import (
    check_scores_folder,
    read_score_shard,
    rows_fingerprint,
    write_score_shard,
)
from hfsiamese.search.shards.shard_files import num_shards, present_shards, remove_partial_files, shard_path, shard_rows

__all__ = ["GROUP_COLUMNS", "PairScorer", "check_groups", "pair_scorer", "score_groups"]

GROUP_COLUMNS = ("query", "positive", "negatives")
# Pairs every run scores with its teacher, saved in the manifest: a rerun with another teacher scores them otherwise.
PROBE_PAIRS = (
    ("How do I learn Python?", "What is the best way to learn Python?"),
    ("How do I learn Python?", "What is the capital of France?"),
)


@dataclass(frozen=True)
class PairScorer:
    """A teacher as one function: the score of each pair `(texts_a[i], texts_b[i])`, float32."""

    kind: str  # "cross-encoder" or "bi-encoder"
    name_or_path: str
    score: Callable[[list[str], list[str]], np.ndarray]

    def fingerprint(self) -> dict[str, Any]:
        probes = self.score([a for a, _ in PROBE_PAIRS], [b for _, b in PROBE_PAIRS])
        return {"kind": self.kind, "name_or_path": self.name_or_path, "probe_scores": [float(s) for s in probes]}


def pair_scorer(
    teacher: Any,
    tokenizer: Any | None = None,
    *,
    batch_size: int = 64,
    max_length: int | None = None,
    dtype: torch.dtype | None = None,
) -> PairScorer:
    """
    `teacher` as a `PairScorer`: a `CrossEncoder` (or any object with `score_pairs` and no `encode`), a bi-encoder
    (`SiameseModel`, `OnnxSiameseModel`: cosine of `encode`'s normalised embeddings), or the folder / Hub id of either.
    `dtype` (e.g. `torch.bfloat16`) runs a PyTorch teacher in that precision (float32 when None); an ONNX teacher
    runs as exported.
    """
    options: dict[str, Any] = {} if dtype is None else {"dtype": dtype}
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1):
        raise ValueError(f"max_length must be a positive integer or None, got {max_length!r}")
    if isinstance(teacher, (str, os.PathLike)):
        from hfsiamese.loading import load_model

        teacher = load_model(teacher)
    name = str(getattr(teacher, "name_or_path", "") or type(teacher).__name__)
    if callable(getattr(teacher, "encode", None)):

        def cosine(texts_a: list[str], texts_b: list[str]) -> np.ndarray:
            distinct = list(dict.fromkeys(texts_a + texts_b))
            vectors = teacher.encode(distinct, tokenizer, batch_size=batch_size, max_length=max_length, **options)
            vectors = torch.nn.functional.normalize(torch.as_tensor(vectors).float().cpu(), dim=-1)
            row = {text: i for i, text in enumerate(distinct)}
            a, b = vectors[[row[t] for t in texts_a]], vectors[[row[t] for t in texts_b]]
            return (a * b).sum(dim=-1).numpy()

        return PairScorer("bi-encoder", name, cosine)
    if not callable(getattr(teacher, "score_pairs", None)):
        raise TypeError(
            f"teacher must be a cross-encoder or a bi-encoder (or its folder), got {type(teacher).__name__}"
        )

    def cross(texts_a: list[str], texts_b: list[str]) -> np.ndarray:
        scores = teacher.score_pairs(texts_a, texts_b, batch_size=batch_size, max_length=max_length, **options)
        return torch.as_tensor(scores).detach().float().cpu().reshape(-1).numpy()

    return PairScorer("cross-encoder", name, cross)


def check_groups(groups: datasets.Dataset, source: str = "the groups data set") -> None:
    """Refuse groups `score_groups` cannot score (`source` names them in the message: the file they came from)."""
    check_required_columns(groups, GROUP_COLUMNS, source, "mine the groups with --format groups-with-scores")
    if len(groups) == 0:
        raise ValueError(f"{source} has no rows to score")
    negatives = groups.features["negatives"]
    if getattr(negatives, "feature", None) is None:  # one value per row, not a list (a string would split in letters)
        kind = getattr(negatives, "dtype", type(negatives).__name__)
        raise TypeError(f"{source}: column 'negatives' holds {kind}, not lists of texts: give each row a list")
    for name in GROUP_COLUMNS:  # every row, before a shard is scored: a refusal at a later shard leaves the first
        for row, value in enumerate(groups[name]):
            if name == "negatives" and value is None:
                raise ValueError(f"{source}: row {row}: negatives is empty (None): give a list of texts")
            for position, text in enumerate(value if name == "negatives" else [value]):
                if not isinstance(text, str) or not text.strip():
                    where = f"negatives[{position}]" if name == "negatives" else name
                    raise ValueError(f"{source}: row {row}: {where} is empty ({text!r}): drop the row or fill it in")


def score_groups(
    groups: datasets.Dataset,
    teacher: Any,
    shards_dir: str | os.PathLike,
    tokenizer: Any | None = None,
    *,
    shard_size: int = 10_000,
    batch_size: int = 64,
    max_length: int | None = None,
    show_progress_bar: bool = False,
    dtype: torch.dtype | None = None,
) -> datasets.Dataset:
    """
    `groups` (columns `query`, `positive`, `negatives`: `mined_formats`' groups-with-scores) with its
    `teacher_scores` column (re)written by `teacher` (see `pair_scorer`), scored `shard_size` rows at a time into
    `shards_dir`. Shards already in `shards_dir` (of the same rows, shard size, `max_length` and teacher) are read, not scored
    again; a folder of another run (the teacher's precision, `dtype`, included) is refused. The folder is left in
    place (`score_shards.remove_score_shards`).
    """
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive integer, got {shard_size!r}")
    check_groups(groups)
    scorer = pair_scorer(teacher, tokenizer, batch_size=batch_size, max_length=max_length, dtype=dtype)
    rows = [[query, positive, *negatives] for query, positive, negatives in zip(*(groups[c] for c in GROUP_COLUMNS))]
    shards_dir = Path(shards_dir)
    expected = {
        "num_rows": len(rows),
        "rows_sha256": rows_fingerprint(rows),
        "shard_size": shard_size,
        "max_length": max_length,
        "teacher": scorer.fingerprint(),
        **({} if dtype is None else {"dtype": str(dtype).removeprefix("torch.")}),
    }
    check_scores_folder(shards_dir, expected)
    total = num_shards(len(rows), shard_size)
    progress = _progress(total, len(present_shards(shards_dir, total)), show_progress_bar)
    try:
        for index in range(total):
            if shard_path(shards_dir, index).is_file():
                continue
            span = shard_rows(index, shard_size, len(rows))
            write_score_shard(shards_dir, index, span.start, _scored(scorer, rows[span.start : span.stop]))
            if progress is not None:
                progress.update(1)
    finally:
        if progress is not None:
            progress.close()
    remove_partial_files(shards_dir)
    scores = [
        s
        for index in range(total)
        for s in read_score_shard(shard_path(shards_dir, index), shard_rows(index, shard_size, len(rows)))
    ]
    if TEACHER_SCORES_COLUMN in groups.column_names:
        groups = groups.remove_columns(TEACHER_SCORES_COLUMN)
    return groups.add_column(TEACHER_SCORES_COLUMN, scores, feature=SCORES_FEATURE)


def _scored(scorer: PairScorer, rows: list[list[str]]) -> list[list[float]]:
    """Each row's scores: its query against its positive, then each negative (one call for the whole shard)."""
    texts_a = [row[0] for row in rows for _ in row[1:]]
    texts_b = [text for row in rows for text in row[1:]]
    flat = scorer.score(texts_a, texts_b)
    if len(flat) != len(texts_a):
        raise ValueError(f"the teacher returned {len(flat)} scores for {len(texts_a)} pairs")
    bounds = np.cumsum([0] + [len(row) - 1 for row in rows])
    return [flat[bounds[i] : bounds[i + 1]].astype(np.float32).tolist() for i in range(len(rows))]


def _progress(total: int, done: int, show: bool) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, desc="Teacher scores", unit="shard")
