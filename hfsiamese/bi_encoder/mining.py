"""Hard-negative mining with the model being trained: the nearest texts that are not duplicates, filtered by the rule
`hfsiamese mine` applies (`hfsiamese.data.negative_filters`)."""

from __future__ import annotations

from typing import Any

import datasets
import numpy as np
import torch

from hfsiamese.data.negative_filters import NegativeFilters, allowed_candidates
from hfsiamese.data.question_identity import column_numpy, question_groups, question_texts
from hfsiamese.utils.deprecation import warn_deprecated
from hfsiamese.utils.exact_topk import topk_cosine

__all__ = ["mine_hard_negatives"]


def mine_hard_negatives(
    model: Any,
    dataset: datasets.Dataset,
    tokenizer: Any | None = None,
    *,
    num_negatives: int = 1,
    skip_top: int = 0,
    max_rank: int = 50,
    margin: float | None = 0.05,
    relative_margin: float | None = 0.05,
    batch_size: int = 256,
    chunk_size: int = 4096,
    show_progress_bar: bool = False,
    top_k: int | None = None,
) -> datasets.Dataset:
    """
    Triplets (anchor, positive, negative) whose negatives are the texts `model` finds closest to
    each anchor, among all questions of `dataset`, excluding the anchor's own duplicate group.

    Which candidates qualify is the rule `hfsiamese mine` applies too (`NegativeFilters`, same names): false
    negatives (unlabelled duplicates) hide among the nearest texts, so the rank window skips the `skip_top` nearest
    candidates and looks no further than `max_rank`, and a candidate scoring above `s(anchor, positive) − margin`,
    or with `relative_margin` above `s(anchor, positive) · (1 − relative_margin)` as well, is dropped: it looks at
    least as much like a duplicate as the known one (sentence-transformers' miner names the same two margins). Each
    duplicate pair gets up to `num_negatives` rows; pairs with no candidate left are skipped.

    `dataset` holds labelled pairs (`question1`, `question2`, `label`); non-duplicates only widen
    the pool of candidate texts. Similarities are computed in chunks of `chunk_size` anchors, so
    memory stays O(chunk_size × number of texts). Usable before training or between epochs.
    `top_k` is the old name of `max_rank` (until hfsiamese 0.3, with a FutureWarning).

    Returns columns question1, question2, negative, label (1), group_id, negative_score.
    """
    if top_k is not None:
        warn_deprecated("keyword", "mine_hard_negatives(top_k=...)")
        max_rank = top_k
    filters = NegativeFilters(
        num_negatives=num_negatives,
        skip_top=skip_top,
        max_rank=max_rank,
        margin=margin,
        relative_margin=relative_margin,
    )
    codes1, codes2, group_of, first_position = question_groups(dataset)
    corpus = question_texts(dataset, first_position).to_pylist()  # one text per question code
    embeddings = model.encode(corpus, tokenizer, batch_size=batch_size, show_progress_bar=show_progress_bar)
    rows = np.flatnonzero(column_numpy(dataset, "label") == 1)
    if len(rows) == 0:
        raise ValueError("the data set holds no duplicate pairs (label 1) to mine negatives for")
    anchors, positives = codes1[rows], codes2[rows]
    candidate_groups = torch.from_numpy(group_of)
    k = min(max_rank, len(corpus))
    group_sizes = np.bincount(group_of)
    picked_rows, picked_negatives, picked_scores = [], [], []
    for start in range(0, len(rows), chunk_size):
        a = torch.from_numpy(anchors[start : start + chunk_size])
        p = torch.from_numpy(positives[start : start + chunk_size])
        positive_scores = (embeddings[a] * embeddings[p]).sum(dim=-1)
        # Enough that `k` remain once the anchor's own group is dropped; the chunk against the whole corpus in one
        # product: memory O(chunk_size × number of texts), as documented.
        fetched = k + int(group_sizes[group_of[a.numpy()]].max())
        top_scores, top_index = topk_cosine(
            embeddings[a], embeddings, fetched, query_chunk_size=len(a), corpus_chunk_size=len(corpus)
        )
        # The anchor's own group (the anchor itself included) is never a negative: it sorts last, and is not ranked.
        own_group = candidate_groups[top_index] == candidate_groups[a].unsqueeze(1)
        top_scores, order = top_scores.masked_fill(own_group, float("-inf")).topk(k, dim=1)
        top_index = top_index.gather(1, order)
        allowed = allowed_candidates(top_scores, torch.isfinite(top_scores), positive_scores, filters)
        # The first `num_negatives` allowed candidates of each row, best first.
        chosen = allowed & (allowed.cumsum(dim=1) <= num_negatives)
        row_in_chunk, column = chosen.nonzero(as_tuple=True)
        picked_rows.append(rows[start + row_in_chunk.numpy()])
        picked_negatives.append(top_index[row_in_chunk, column].numpy())
        picked_scores.append(top_scores[row_in_chunk, column].numpy())
    kept_rows = np.concatenate(picked_rows)
    if len(kept_rows) == 0:
        raise ValueError("no hard negatives found: widen max_rank or lower margin")
    negatives = np.concatenate(picked_negatives)
    view = dataset.select(kept_rows)
    if "group_id" in view.column_names:
        view = view.remove_columns("group_id")
    view = view.add_column(
        "negative",
        question_texts(dataset, first_position[negatives]).combine_chunks(),
        feature=datasets.Value("string"),
    )
    view = view.add_column("group_id", group_of[codes1[kept_rows]], feature=datasets.Value("int64"))
    return view.add_column(
        "negative_score", np.concatenate(picked_scores).astype(np.float32), feature=datasets.Value("float32")
    )
