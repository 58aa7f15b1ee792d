"""Normalised discounted cumulative gain at k of ranked retrieval results (a local `evaluate` module: loads offline)."""

# One import per line: evaluate's loader for local modules reads imports line by line.
from hfsiamese.metrics.base import RetrievalMetric
from hfsiamese.metrics.ranking import ndcg_at_k


class NdcgAtK(RetrievalMetric):
    def _at_k(self, hits, k):
        return ndcg_at_k(hits, k)

    _key = "ndcg"
    _description = """
nDCG@k with binary gains: the DCG of the top k over the best DCG the query's relevant ids allow
(relevant ids never retrieved count in the ideal). Computed by sklearn.metrics.ndcg_score.
"""
    _examples = """
    >>> metric = evaluate.load(hfsiamese.metrics.NDCG_AT_K)
    >>> metric.compute(predictions=[[3, 1, 2], [0, 2, 1]], references=[[1], [1, 3]], k=[1, 3])
    {'ndcg@1': 0.0, 'ndcg@3': 0.46875167497709325}
"""
    _citation = """
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
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.ndcg_score.html"
