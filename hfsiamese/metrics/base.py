"""
Shared plumbing of the metric modules in this package, so that each module script holds only its
documentation and its one computation.

`evaluate.load(path)` copies a module script into evaluate's modules cache, imports it, and takes
the first `EvaluationModule` subclass in its namespace that is not abstract. The bases here are
abstract (each leaves one method to the module), so a script that imports one by name still hands
evaluate its own class. A base builds the `MetricInfo` and the class docstring from class
attributes, declares the input features, takes the options that `evaluate.combine` passes to every
module of a combination, and checks the inputs once before calling the module's method. The
families (`DecisionMetric`, `ThresholdFreeMetric`, `RetrievalMetric`) also write the shared parts of
their modules' documentation, and compute what their modules share, around the module's one measure.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import datasets
import evaluate
import numpy as np

from hfsiamese.metrics.ranking import RankedHits, check_ks, ranked_hits
from hfsiamese.metrics.thresholds import check_calibration_options, check_pair_inputs, decisions_at

__all__ = [
    "PAIR_ARGS_DOC",
    "RETRIEVAL_ARGS_DOC",
    "RETRIEVAL_INPUTS_DOC",
    "SCIKIT_LEARN_CITATION",
    "THRESHOLD_ARGS_DOC",
    "THRESHOLD_FREE_ARGS_DOC",
    "THRESHOLD_FREE_DOC",
    "DecisionMetric",
    "PairScoreMetric",
    "RetrievalMetric",
    "ThresholdFreeMetric",
]

SCIKIT_LEARN_CITATION = """
@article{scikit-learn,
  title={Scikit-learn: Machine Learning in {P}ython},
  author={Pedregosa, F. and others},
  journal={Journal of Machine Learning Research},
  volume={12},
  pages={2825--2830},
  year={2011}
}
"""

# Documentation shared by the module scripts, pieced into their `_description`/`_kwargs_description`.
PAIR_ARGS_DOC = """
Args:
    predictions (`list` of `float`): similarity score of each pair (higher = more likely duplicate).
    references (`list` of `int`): 1 for duplicates, 0 otherwise.
"""
THRESHOLD_ARGS_DOC = (
    PAIR_ARGS_DOC
    + """    threshold (`float`): decision threshold; required (choose it on validation pairs, e.g. with the
        best_threshold metric).
    calibrate_for, target_precision: accepted and ignored, so that `evaluate.combine` can pass the
        best_threshold options to every pair metric at once.
"""
)
THRESHOLD_FREE_ARGS_DOC = (
    PAIR_ARGS_DOC
    + """    threshold, calibrate_for, target_precision: accepted and ignored, so that `evaluate.combine`
        can pass the options of the threshold metrics to every pair metric at once.
"""
)
THRESHOLD_FREE_DOC = """Threshold-free: it judges how well the scores rank duplicates above
non-duplicates. NaN when the pairs hold only one class (the metric is undefined then).
"""
RETRIEVAL_INPUTS_DOC = """One example per query: the ids it retrieved, best first, and the ids relevant to it (binary
relevance). Ids are non-negative ints, e.g. corpus row numbers; every query needs at least one
relevant id.
"""
RETRIEVAL_ARGS_DOC = """
Args:
    predictions (`list` of `list` of `int`): per query, the retrieved ids, best first (no repeats).
    references (`list` of `list` of `int`): per query, the relevant ids (at least one).
    k (`int` or `list` of `int`, defaults to 10): the cut-off(s).
"""


class _MetricModule(evaluate.Metric, metaclass=abc.ABCMeta):
    """
    `MetricInfo` and docstring from class attributes, as evaluate's scripts do from module constants.

    The attributes start with an underscore: `description`, `citation` and the like are already
    properties of every evaluate module (they read the info built here).
    """

    _description: ClassVar[str]
    _kwargs_description: ClassVar[str]
    _citation: ClassVar[str]
    _reference_url: ClassVar[str]

    # A module of a family (`DecisionMetric`, `ThresholdFreeMetric`, `RetrievalMetric`) gives only its `_key`
    # and `_examples`; the family writes the rest of its `_kwargs_description` and ends its `_description`.
    _key: ClassVar[str]
    _examples: ClassVar[str]
    _args_doc: ClassVar[str]
    _returns_doc: ClassVar[str]  # formatted with the module's `key`
    _description_tail: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_description" not in cls.__dict__:  # an intermediate base, not a module's own class
            return
        if "_examples" in cls.__dict__:
            cls._description += cls._description_tail
            returns = cls._returns_doc.format(key=cls._key)
            cls._kwargs_description = f"{cls._args_doc}Returns:\n    {returns}\nExamples:{cls._examples}"
        evaluate.utils.file_utils.add_start_docstrings(cls._description, cls._kwargs_description)(cls)

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=self._description,
            citation=self._citation,
            inputs_description=self._kwargs_description,
            features=self._features(),
            reference_urls=[self._reference_url],
        )

    @abc.abstractmethod
    def _features(self) -> datasets.Features:
        """The features of `predictions` and `references`."""

    def _refuse_unexpected(self, unexpected: dict[str, Any]) -> None:
        # `_compute` takes **unexpected only to name the module's own class in Python's usual
        # message, not the base class that defines `_compute` (a misspelt option must not pass).
        if unexpected:
            name = next(iter(unexpected))
            raise TypeError(f"{type(self).__name__}._compute() got an unexpected keyword argument {name!r}")


class PairScoreMetric(_MetricModule):
    """
    A metric of pairs: `predictions` are similarity scores, `references` 0/1 duplicate labels.

    Every pair module takes `threshold`, `calibrate_for` and `target_precision`, because
    `evaluate.combine` passes one set of options to all modules; a module ignores those it has no use
    for. With `_check_calibration_first = True` the calibration options are checked before the
    data, even when a given threshold leaves them unused. The module implements `_score` on the
    checked arrays.
    """

    _citation = SCIKIT_LEARN_CITATION
    _check_calibration_first: ClassVar[bool] = False

    def _features(self) -> datasets.Features:
        return datasets.Features({"predictions": datasets.Value("float64"), "references": datasets.Value("int64")})

    def _compute(
        self,
        predictions: Any,
        references: Any,
        threshold: float | None = None,
        calibrate_for: str = "accuracy",
        target_precision: float | None = None,
        **unexpected: Any,
    ) -> dict[str, float]:
        self._refuse_unexpected(unexpected)
        if self._check_calibration_first:
            check_calibration_options(calibrate_for, target_precision)
        scores, labels = check_pair_inputs(predictions, references)
        return self._score(
            scores, labels, threshold=threshold, calibrate_for=calibrate_for, target_precision=target_precision
        )

    @abc.abstractmethod
    def _score(
        self,
        scores: np.ndarray,
        labels: np.ndarray,
        *,
        threshold: float | None,
        calibrate_for: str,
        target_precision: float | None,
    ) -> dict[str, float]:
        """The metric of finite float64 `scores` and int64 0/1 `labels` of equal, non-zero length."""


class DecisionMetric(PairScoreMetric):
    """
    A pair metric of the decisions `score >= threshold` at a given threshold (none is an error):
    the module implements `_of_decisions` and reports it under `_key`.
    """

    _args_doc = THRESHOLD_ARGS_DOC
    _returns_doc = "{key} (`float`)."

    def _score(self, scores: np.ndarray, labels: np.ndarray, *, threshold: float | None, **_: Any) -> dict[str, float]:
        decisions = decisions_at(scores, threshold, self.name)
        return {self._key: float(self._of_decisions(labels, decisions))}

    @abc.abstractmethod
    def _of_decisions(self, labels: np.ndarray, decisions: np.ndarray) -> float:
        """The metric of the 0/1 `decisions` against the 0/1 `labels`."""


class ThresholdFreeMetric(PairScoreMetric):
    """
    A pair metric of how well the scores rank duplicates above non-duplicates, reported under `_key`:
    NaN when the labels hold one class only, else the module's `_of_scores`.
    """

    _args_doc = THRESHOLD_FREE_ARGS_DOC
    _returns_doc = "{key} (`float`)."
    _description_tail = THRESHOLD_FREE_DOC

    def _score(self, scores: np.ndarray, labels: np.ndarray, **_: Any) -> dict[str, float]:
        if len(np.unique(labels)) < 2:
            return {self._key: float("nan")}
        return {self._key: float(self._of_scores(labels, scores))}

    @abc.abstractmethod
    def _of_scores(self, labels: np.ndarray, scores: np.ndarray) -> float:
        """The metric of the scores against labels that hold both classes."""


class RetrievalMetric(_MetricModule):
    """
    A metric of ranked results at cut-offs: `predictions` are per-query retrieved ids, best first,
    `references` the relevant ids. Takes `k` (one cut-off or several, default 10) and reports
    `<_key>@<k>` for each; the module implements `_at_k` on the hit matrix.
    """

    _args_doc = RETRIEVAL_ARGS_DOC
    _returns_doc = "`{key}@<k>` (`float`) for every k: the mean over queries."
    _description_tail = RETRIEVAL_INPUTS_DOC

    def _features(self) -> datasets.Features:
        return datasets.Features(
            {
                "predictions": datasets.Sequence(datasets.Value("int64")),
                "references": datasets.Sequence(datasets.Value("int64")),
            }
        )

    def _compute(self, predictions: Any, references: Any, k: Any = 10, **unexpected: Any) -> dict[str, float]:
        self._refuse_unexpected(unexpected)
        ks = check_ks(k)
        hits = ranked_hits(predictions, references, depth=max(ks))
        return {f"{self._key}@{cutoff}": self._at_k(hits, cutoff) for cutoff in ks}

    @abc.abstractmethod
    def _at_k(self, hits: RankedHits, k: int) -> float:
        """The mean over queries at cut-off `k` (at most the hit matrix's depth)."""
