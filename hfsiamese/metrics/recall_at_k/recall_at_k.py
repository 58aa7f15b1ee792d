"""Recall at k of ranked retrieval results.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.RECALL_AT_K)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
from hfsiamese.metrics.base import RETRIEVAL_ARGS_DOC, RETRIEVAL_INPUTS_DOC, RetrievalMetric
from hfsiamese.metrics.ranking import recall_at_k


class RecallAtK(RetrievalMetric):
    _description = (
        """
Recall@k: the mean over queries of the share of its relevant ids found within the top k.
"""
        + RETRIEVAL_INPUTS_DOC
    )
    _kwargs_description = (
        RETRIEVAL_ARGS_DOC
        + """Returns:
    `recall@<k>` (`float`) for every k: the mean over queries.
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.RECALL_AT_K)
    >>> metric.compute(predictions=[[3, 1, 2], [0, 2, 1]], references=[[1], [1, 3]], k=[1, 3])
    {'recall@1': 0.0, 'recall@3': 0.75}
"""
    )
    _citation = """
@book{manning2008introduction,
  title={Introduction to Information Retrieval},
  author={Manning, Christopher D. and Raghavan, Prabhakar and Sch{\\"u}tze, Hinrich},
  publisher={Cambridge University Press},
  year={2008}
}
"""
    _reference_url = "https://nlp.stanford.edu/IR-book/html/htmledition/evaluation-of-ranked-retrieval-results-1.html"
    _key_prefix = "recall"

    def _at_k(self, hits, k):
        return recall_at_k(hits, k)
