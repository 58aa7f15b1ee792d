"""Mean reciprocal rank at k of ranked retrieval results (a local `evaluate` module: loads offline)."""

# One import per line: evaluate's loader for local modules reads imports line by line.
from hfsiamese.metrics.base import RetrievalMetric
from hfsiamese.metrics.ranking import mrr_at_k


class MrrAtK(RetrievalMetric):
    def _at_k(self, hits, k):
        return mrr_at_k(hits, k)

    _key = "mrr"
    _description = """
MRR@k: the mean over queries of 1 / the rank of the first relevant result within the top k (0 when
none is there).
"""
    _examples = """
    >>> metric = evaluate.load(hfsiamese.metrics.MRR_AT_K)
    >>> metric.compute(predictions=[[3, 1, 2], [0, 2, 1]], references=[[1], [1, 3]], k=[1, 3])
    {'mrr@1': 0.0, 'mrr@3': 0.41666666666666663}
"""
    _citation = """
@inproceedings{voorhees1999trec,
  title={The TREC-8 Question Answering Track Report},
  author={Voorhees, Ellen M.},
  booktitle={Proceedings of TREC-8},
  year={1999}
}
"""
    _reference_url = "https://en.wikipedia.org/wiki/Mean_reciprocal_rank"
