"""Recall at k of ranked retrieval results (a local `evaluate` module: loads offline)."""

# One import per line: evaluate's loader for local modules reads imports line by line.
from hfsiamese.metrics.base import RetrievalMetric
from hfsiamese.metrics.ranking import recall_at_k


class RecallAtK(RetrievalMetric):
    def _at_k(self, hits, k):
        return recall_at_k(hits, k)

    _key = "recall"
    _description = """
Recall@k: the mean over queries of the share of its relevant ids found within the top k.
"""
    _examples = """
    >>> metric = evaluate.load(hfsiamese.metrics.RECALL_AT_K)
    >>> metric.compute(predictions=[[3, 1, 2], [0, 2, 1]], references=[[1], [1, 3]], k=[1, 3])
    {'recall@1': 0.0, 'recall@3': 0.75}
"""
    _citation = """
@book{manning2008introduction,
  title={Introduction to Information Retrieval},
  author={Manning, Christopher D. and Raghavan, Prabhakar and Sch{\\"u}tze, Hinrich},
  publisher={Cambridge University Press},
  year={2008}
}
"""
    _reference_url = "https://nlp.stanford.edu/IR-book/html/htmledition/evaluation-of-ranked-retrieval-results-1.html"
