"""
Your own pairs as MTEB tasks, built in memory: `pair_classification_task` (labelled pairs, scored as MTEB's
SprintDuplicateQuestions and TwitterURLCorpus are: AP of cosine similarity and friends) and `retrieval_task`
(queries, a corpus and the relevant documents; with candidates per query a reranking task, as
AskUbuntuDupQuestions). Then `mteb.evaluate(to_mteb(model), task, cache=None)` gives your domain's numbers in the
same metrics as the public benchmarks, with no dataset on the Hub.

A task's dataset revision is a hash of its data, so results recorded under the same task name tell different data
apart. MTEB seeds Python's, numpy's and torch's global generators when a task is made; these builders give the
caller's generators back as they were (`mteb.evaluate` seeds them again, as it does for any task).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from hfsiamese.integrations.mteb import generators_kept, require_mteb

SPLIT = "test"
_DESCRIPTION = "Local pairs given in memory (hfsiamese.integrations.mteb_tasks)."


def _data_revision(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=list).encode()).hexdigest()[:12]


def _metadata(name: str, task_type: str, main_score: str, languages: Sequence[str], revision: str) -> Any:
    from mteb.abstasks.task_metadata import TaskMetadata

    return TaskMetadata(
        name=name,
        description=_DESCRIPTION,
        dataset={"path": f"local/{name}", "revision": revision},
        type=task_type,
        category="t2t",
        modalities=["text"],
        eval_splits=[SPLIT],
        eval_langs=list(languages),
        main_score=main_score,
    )


def _check_texts(what: str, texts: Sequence[Any]) -> None:
    bad = next((i for i, text in enumerate(texts) if not isinstance(text, str)), None)
    if bad is not None:
        raise TypeError(f"{what}[{bad}] is {texts[bad]!r}, not a text")


def pair_classification_task(
    texts_a: Sequence[str],
    texts_b: Sequence[str],
    labels: Sequence[int],
    *,
    name: str = "LocalDuplicatePairs",
    languages: Sequence[str] = ("eng-Latn",),
) -> Any:
    """
    An MTEB pair-classification task over the pairs (`texts_a[i]`, `texts_b[i]`) labelled 1 (duplicate) or 0; its
    main score is `max_ap`, as MTEB's duplicate-question pair tasks. `languages`: MTEB's `lang-Script` codes.
    """
    require_mteb()
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.pair_classification import AbsTaskPairClassification

    texts_a, texts_b, labels = list(texts_a), list(texts_b), [int(label) for label in labels]
    if not len(texts_a) == len(texts_b) == len(labels):
        raise ValueError(f"texts_a, texts_b and labels differ in length: {len(texts_a)}, {len(texts_b)}, {len(labels)}")
    if not texts_a:
        raise ValueError("a pair classification task needs at least one pair")
    if set(labels) - {0, 1}:
        raise ValueError(f"labels must be 0 or 1, got {sorted(set(labels) - {0, 1})}")
    _check_texts("texts_a", texts_a)
    _check_texts("texts_b", texts_b)
    data = {"sentence1": texts_a, "sentence2": texts_b, "labels": labels}

    class LocalPairClassification(AbsTaskPairClassification):
        metadata = _metadata(name, "PairClassification", "max_ap", languages, _data_revision(data))

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            self.dataset = {"default": DatasetDict({SPLIT: Dataset.from_dict(data)})}
            self.data_loaded = True

    with generators_kept():
        return LocalPairClassification()


def retrieval_task(
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    relevant: Mapping[str, Mapping[str, int]],
    *,
    candidates: Mapping[str, Sequence[str]] | None = None,
    name: str = "LocalDuplicateSearch",
    languages: Sequence[str] = ("eng-Latn",),
) -> Any:
    """
    An MTEB retrieval task: `queries` and `corpus` map ids to texts, `relevant` each query id to its relevant
    document ids (with grades, 1 for a duplicate). Main score nDCG@10, as QuoraRetrieval. With `candidates` (each
    query id to the document ids to rank) it is a reranking task instead, main score MAP@1000 as
    AskUbuntuDupQuestions, and cross-encoders can run it too.
    """
    require_mteb()
    from datasets import Dataset
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData

    for what, texts in (("queries", queries), ("corpus", corpus)):
        if not texts:
            raise ValueError(f"a retrieval task needs {what}")
        _check_texts(what, list(texts.values()))
    for query_id, documents in relevant.items():
        if query_id not in queries:
            raise ValueError(f"relevant names query {query_id!r}, which is not among the queries")
        unknown = sorted(set(documents) - set(corpus))
        if unknown:
            raise ValueError(f"relevant names documents {unknown} of query {query_id!r} that are not in the corpus")
    for query_id, documents in (candidates or {}).items():
        unknown = sorted(set(documents) - set(corpus))
        if query_id not in queries or unknown:
            raise ValueError(f"candidates of {query_id!r}: not a query, or documents {unknown} not in the corpus")
    relevant = {query: dict(documents) for query, documents in relevant.items()}
    top_ranked = {query: list(documents) for query, documents in candidates.items()} if candidates else None
    revision = _data_revision(dict(queries), dict(corpus), relevant, top_ranked)
    task_type, main_score = ("Reranking", "map_at_1000") if top_ranked else ("Retrieval", "ndcg_at_10")

    class LocalRetrieval(AbsTaskRetrieval):
        metadata = _metadata(name, task_type, main_score, languages, revision)

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            split = RetrievalSplitData(
                queries=Dataset.from_dict({"id": list(queries), "text": list(queries.values())}),
                corpus=Dataset.from_dict({"id": list(corpus), "text": list(corpus.values())}),
                relevant_docs=relevant,
                top_ranked=top_ranked,
            )
            self.dataset = {"default": {SPLIT: split}}
            self.data_loaded = True

    with generators_kept():
        return LocalRetrieval()


__all__ = ["pair_classification_task", "retrieval_task"]
