"""Accuracy of duplicate decisions `score >= threshold` on scored pairs.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.PAIR_ACCURACY)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import datasets
import evaluate
import sklearn.metrics

from hfsiamese.metrics.thresholds import check_pair_inputs
from hfsiamese.metrics.thresholds import decisions_at

_DESCRIPTION = """
Share of pairs whose decision `score >= threshold` matches the label.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): similarity score of each pair (higher = more likely duplicate).
    references (`list` of `int`): 1 for duplicates, 0 otherwise.
    threshold (`float`): decision threshold; required (choose it on validation pairs, e.g. with the
        best_threshold metric).
    calibrate_for, target_precision: accepted and ignored, so that `evaluate.combine` can pass the
        best_threshold options to every pair metric at once.
Returns:
    accuracy (`float`).
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.PAIR_ACCURACY)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1], threshold=0.5)
    {'accuracy': 0.5}
"""

_CITATION = """
@article{scikit-learn,
  title={Scikit-learn: Machine Learning in {P}ython},
  author={Pedregosa, F. and others},
  journal={Journal of Machine Learning Research},
  volume={12},
  pages={2825--2830},
  year={2011}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PairAccuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("float64"), "references": datasets.Value("int64")}
            ),
            reference_urls=["https://scikit-learn.org/stable/modules/generated/sklearn.metrics.accuracy_score.html"],
        )

    def _compute(self, predictions, references, threshold=None, calibrate_for=None, target_precision=None):
        scores, labels = check_pair_inputs(predictions, references)
        decisions = decisions_at(scores, threshold, "pair_accuracy")
        return {"accuracy": float(sklearn.metrics.accuracy_score(labels, decisions))}
