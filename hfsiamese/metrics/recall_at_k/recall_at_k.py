"""Recall at k of ranked retrieval results.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.RECALL_AT_K)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import datasets
import evaluate

from hfsiamese.metrics.ranking import check_ks
from hfsiamese.metrics.ranking import ranked_hits
from hfsiamese.metrics.ranking import recall_at_k

_DESCRIPTION = """
Recall@k: the mean over queries of the share of its relevant ids found within the top k.
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
    `recall@<k>` (`float`) for every k: the mean over queries.
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.RECALL_AT_K)
    >>> metric.compute(predictions=[[3, 1, 2], [0, 2, 1]], references=[[1], [1, 3]], k=[1, 3])
    {'recall@1': 0.0, 'recall@3': 0.75}
"""

_CITATION = """
@book{manning2008introduction,
  title={Introduction to Information Retrieval},
  author={Manning, Christopher D. and Raghavan, Prabhakar and Sch{\\"u}tze, Hinrich},
  publisher={Cambridge University Press},
  year={2008}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RecallAtK(evaluate.Metric):
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
            reference_urls=["https://nlp.stanford.edu/IR-book/html/htmledition/evaluation-of-ranked-retrieval-results-1.html"],
        )

    def _compute(self, predictions, references, k=10):
        ks = check_ks(k)
        hits = ranked_hits(predictions, references, depth=max(ks))
        return {f"recall@{cutoff}": recall_at_k(hits, cutoff) for cutoff in ks}
