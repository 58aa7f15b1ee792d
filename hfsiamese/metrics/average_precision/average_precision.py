"""Average precision of similarity scores: the area under the precision-recall curve of duplicates.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.AVERAGE_PRECISION)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import datasets
import evaluate
import numpy
import sklearn.metrics

from hfsiamese.metrics.thresholds import check_pair_inputs

_DESCRIPTION = """
Average precision (scikit-learn's step-wise area under the precision-recall curve) of the scores. Threshold-free: it judges how well the scores rank duplicates above
non-duplicates. NaN when the pairs hold only one class (the metric is undefined then).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): similarity score of each pair (higher = more likely duplicate).
    references (`list` of `int`): 1 for duplicates, 0 otherwise.
    threshold, calibrate_for, target_precision: accepted and ignored, so that `evaluate.combine`
        can pass the options of the threshold metrics to every pair metric at once.
Returns:
    average_precision (`float`).
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.AVERAGE_PRECISION)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1])
    {'average_precision': 0.8333333333333333}
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
class AveragePrecision(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("float64"), "references": datasets.Value("int64")}
            ),
            reference_urls=["https://scikit-learn.org/stable/modules/generated/sklearn.metrics.average_precision_score.html"],
        )

    def _compute(self, predictions, references, threshold=None, calibrate_for=None, target_precision=None):
        scores, labels = check_pair_inputs(predictions, references)
        if len(numpy.unique(labels)) < 2:
            return {"average_precision": float("nan")}
        return {"average_precision": float(sklearn.metrics.average_precision_score(labels, scores))}
