"""Normalised discounted cumulative gain at k of ranked retrieval results.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.NDCG_AT_K)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import datasets
import evaluate

from hfsiamese.metrics.ranking import check_ks
from hfsiamese.metrics.ranking import ndcg_at_k
from hfsiamese.metrics.ranking import ranked_hits

_DESCRIPTION = """
nDCG@k with binary gains: the DCG of the top k over the best DCG the query's relevant ids allow
(relevant ids never retrieved count in the ideal). Computed by sklearn.metrics.ndcg_score.
One example per query: the ids it retrieved, best first, and the ids relevant to it (binary
relevance). Ids are non-negative ints, e.g. corpus row numbers; every query needs at least one
relevant id.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `int`): per query, the retrieved ids, best first (no repeats).
    references (`list` of `list` of `int`): per query, the relevant ids (at least one).
    k (`int` or `list` of `int`, defaults to 10): the cut-off(s).
Returns:
    `ndcg@<k>` (`float`) for every k: the mean over queries.
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.NDCG_AT_K)
    >>> metric.compute(predictions=[[3, 1, 2], [0, 2, 1]], references=[[1], [1, 3]], k=[1, 3])
    {'ndcg@1': 0.0, 'ndcg@3': 0.46875167497709325}
"""

_CITATION = """
@article{jarvelin2002cumulated,
  title={Cumulated gain-based evaluation of IR techniques},
  author={J{\\"a}rvelin, Kalervo and Kek{\\"a}l{\\"a}inen, Jaana},
  journal={ACM Transactions on Information Systems},
  volume={20},
  number={4},
  pages={422--446},
  year={2002}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class NdcgAtK(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("int64")),
                    "references": datasets.Sequence(datasets.Value("int64")),
                }
            ),
            reference_urls=["https://scikit-learn.org/stable/modules/generated/sklearn.metrics.ndcg_score.html"],
        )

    def _compute(self, predictions, references, k=10):
        ks = check_ks(k)
        hits = ranked_hits(predictions, references, depth=max(ks))
        return {f"ndcg@{cutoff}": ndcg_at_k(hits, cutoff) for cutoff in ks}
