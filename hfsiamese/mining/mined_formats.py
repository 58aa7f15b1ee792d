"""
Mined negatives (`MinedNegatives`, what `mine_negatives` returns) as the `datasets.Dataset` a loss reads, in one of four layouts (sentence-transformers' names):

    triplet             anchor, positive, negative                   one row per negative
    n-tuple             anchor, positive, negative_1 .. negative_n   queries with all n negatives
    labeled-pair        sentence1, sentence2, label                  (query, positive, 1), then (query, negative, 0)s
    groups-with-scores  query, positive, negatives, teacher_scores   queries with all n negatives

`teacher_scores` is the list [s(query, positive), s(query, negatives[0]), ...] the score-distillation losses
(`margin_mse`, `listwise_kl`) read: the cross-encoder's scores where one rescored the candidates, else the
bi-encoder's cosines; `hfsiamese teacher-scores` replaces them with another teacher's (`teacher_scoring`).
"""

from __future__ import annotations

from dataclasses import dataclass

import datasets
import numpy as np

from hfsiamese.losses.teacher_scores import TEACHER_SCORES_COLUMN

__all__ = ["OUTPUT_FORMATS", "TEACHER_SCORES_COLUMN", "MinedNegatives", "mined_dataset"]

OUTPUT_FORMATS = ("triplet", "n-tuple", "labeled-pair", "groups-with-scores")
SCORES_FEATURE = datasets.Sequence(datasets.Value("float32"))


@dataclass(frozen=True)
class MinedNegatives:
    """
    Each query's negatives, as codes into `texts` (one text per distinct question).

    `query_codes`/`positive_codes` are `(queries,)`; `negative_codes` is `(queries, num_negatives)`, best first, -1
    where fewer were found; `positive_scores` and `negative_scores` are the bi-encoder's cosines (NaN where no
    negative). `cross_encoder_scores`, where a cross-encoder rescored, is `(queries, 1 + num_negatives)`: its score
    of (query, positive) then of each negative. Write it out with `to_dataset`.
    """

    texts: list[str]
    query_codes: np.ndarray
    positive_codes: np.ndarray
    positive_scores: np.ndarray
    negative_codes: np.ndarray
    negative_scores: np.ndarray
    cross_encoder_scores: np.ndarray | None = None
    held_out_questions: int = 0  # questions of the pairs left out as held out

    @property
    def num_negatives(self) -> int:
        return int(self.negative_codes.shape[1])

    def __len__(self) -> int:
        return len(self.query_codes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self.summary().items())})"

    def to_dataset(self, format: str = "triplet") -> datasets.Dataset:
        """The mined data in one of `OUTPUT_FORMATS`."""
        return mined_dataset(self, format)

    def summary(self) -> dict[str, int]:
        """Counts: queries, negatives found, queries with all `num_negatives`."""
        found = self.negative_codes >= 0
        return {
            "queries": len(self),
            "negatives": int(found.sum()),
            "queries_with_all_negatives": int(found.all(axis=1).sum()),
            "queries_without_negatives": int((~found.any(axis=1)).sum()),
            "held_out_questions": self.held_out_questions,
        }


def mined_dataset(mined: MinedNegatives, format: str = "triplet") -> datasets.Dataset:
    """`mined` in the layout `format` (one of `OUTPUT_FORMATS`)."""
    if format not in OUTPUT_FORMATS:
        raise ValueError(f"format must be one of {OUTPUT_FORMATS}, got {format!r}")
    texts = np.asarray(mined.texts, dtype=object)
    found = mined.negative_codes >= 0
    string = datasets.Value("string")
    if format == "triplet":
        row, column = np.nonzero(found)
        columns = {
            "anchor": texts[mined.query_codes[row]],
            "positive": texts[mined.positive_codes[row]],
            "negative": texts[mined.negative_codes[row, column]],
        }
        return _dataset(columns, {name: string for name in columns})
    if format == "labeled-pair":
        second = np.concatenate([mined.positive_codes[:, None], mined.negative_codes], axis=1)
        keep = np.concatenate([np.ones((len(mined), 1), dtype=bool), found], axis=1)
        row, column = np.nonzero(keep)
        columns = {
            "sentence1": texts[mined.query_codes[row]],
            "sentence2": texts[second[row, column]],
            "label": (column == 0).astype(np.int64),
        }
        return _dataset(columns, {"sentence1": string, "sentence2": string, "label": datasets.Value("int64")})
    full = np.flatnonzero(found.all(axis=1))  # a fixed number of columns (n-tuple) or of scores per row
    negatives = texts[mined.negative_codes[full]]
    if format == "n-tuple":
        columns = {"anchor": texts[mined.query_codes[full]], "positive": texts[mined.positive_codes[full]]}
        columns.update({f"negative_{j + 1}": negatives[:, j] for j in range(mined.num_negatives)})
        return _dataset(columns, {name: string for name in columns})
    if mined.cross_encoder_scores is not None:
        scores = mined.cross_encoder_scores[full]
    else:
        scores = np.concatenate([mined.positive_scores[full, None], mined.negative_scores[full]], axis=1)
    columns = {
        "query": texts[mined.query_codes[full]],
        "positive": texts[mined.positive_codes[full]],
        "negatives": [list(row) for row in negatives],
        TEACHER_SCORES_COLUMN: scores.astype(np.float32).tolist(),
    }
    features = {"query": string, "positive": string, "negatives": datasets.Sequence(string)}
    return _dataset(columns, {**features, TEACHER_SCORES_COLUMN: SCORES_FEATURE})


def _dataset(columns: dict[str, object], features: dict[str, object]) -> datasets.Dataset:
    plain = {name: list(values) if isinstance(values, np.ndarray) else values for name, values in columns.items()}
    return datasets.Dataset.from_dict(plain, features=datasets.Features(features))
