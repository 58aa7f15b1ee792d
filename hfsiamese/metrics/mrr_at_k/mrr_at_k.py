"""Mean reciprocal rank at k of ranked retrieval results.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.MRR_AT_K)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import datasets
import evaluate

from hfsiamese.metrics.ranking import check_ks
from hfsiamese.metrics.ranking import mrr_at_k
from hfsiamese.metrics.ranking import ranked_hits

_DESCRIPTION = """
MRR@k: the mean over queries of 1 / the rank of the first relevant result within the top k (0 when
none is there).
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
    `mrr@<k>` (`float`) for every k: the mean over queries.
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.MRR_AT_K)
    >>> metric.compute(predictions=[[3, 1, 2], [0, 2, 1]], references=[[1], [1, 3]], k=[1, 3])
    {'mrr@1': 0.0, 'mrr@3': 0.41666666666666663}
"""

_CITATION = """
@inproceedings{voorhees1999trec,
  title={The TREC-8 Question Answering Track Report},
  author={Voorhees, Ellen M.},
  booktitle={Proceedings of TREC-8},
  year={1999}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class MrrAtK(evaluate.Metric):
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
            reference_urls=["https://en.wikipedia.org/wiki/Mean_reciprocal_rank"],
        )

    def _compute(self, predictions, references, k=10):
        ks = check_ks(k)
        hits = ranked_hits(predictions, references, depth=max(ks))
        return {f"mrr@{cutoff}": mrr_at_k(hits, cutoff) for cutoff in ks}
