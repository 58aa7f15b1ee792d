import datasets
import pytest
import torch

from hfsiamese.bi_encoder.mining import mine_hard_negatives
from hfsiamese.data.negative_filters import NegativeFilters, allowed_candidates
from hfsiamese.utils.exact_topk import topk_cosine


class TableModel:
    """A stand-in encoder with fixed unit vectors per text, so the expected neighbours are known."""

    def __init__(self, vectors):
        self.vectors = {
            text: torch.nn.functional.normalize(torch.tensor(v, dtype=torch.float32), dim=0)
            for text, v in vectors.items()
        }

    def encode(self, texts, tokenizer=None, **kwargs):
        return torch.stack([self.vectors[t] for t in texts])


VECTORS = {
    "a": [1.0, 0.0, 0.0],
    "b": [0.95, 0.3, 0.0],  # duplicate of a
    "c": [0.9, 0.0, 0.45],  # very close to a: a likely false negative
    "d": [0.6, 0.8, 0.0],  # near a, clearly different
    "e": [0.3, 1.0, 0.0],
    "f": [0.0, 0.0, 1.0],
}


def data(rows):
    q1, q2, y = zip(*rows)
    return datasets.Dataset.from_dict({"question1": list(q1), "question2": list(q2), "label": list(y)})


def test_nearest_non_duplicate_within_margin():
    pairs = data([("a", "b", 1), ("c", "d", 0), ("e", "f", 0)])
    model = TableModel(VECTORS)
    # s(a,b)=0.954; c scores 0.894 (> 0.954 - 0.05? no: 0.894 < 0.904) so c is allowed with margin 0.05
    mined = mine_hard_negatives(model, pairs, num_negatives=1, margin=0.05)
    assert mined["question1"] == ["a"] and mined["negative"] == ["c"]
    # a wider margin excludes c as a probable false negative; d is next
    mined = mine_hard_negatives(model, pairs, num_negatives=1, margin=0.2)
    assert mined["negative"] == ["d"]
    # the rank window: skipping the nearest candidate
    mined = mine_hard_negatives(model, pairs, num_negatives=2, skip_top=1, margin=0.0)
    assert mined["negative"] == ["d", "e"]
    assert mined["negative_score"][0] == pytest.approx(0.6, abs=1e-5)


def test_relative_margin_drops_candidates_close_to_the_positive():
    pairs = data([("a", "b", 1), ("c", "d", 0), ("e", "f", 0)])
    # c (0.894) passes the absolute margin 0.0 but not s(a,b) * (1 - 0.1) = 0.859: d is next
    mined = mine_hard_negatives(TableModel(VECTORS), pairs, margin=0.0, relative_margin=0.1)
    assert mined["negative"] == ["d"]
    assert mine_hard_negatives(TableModel(VECTORS), pairs, margin=0.0, relative_margin=None)["negative"] == ["c"]
    with pytest.raises(ValueError, match="relative_margin must be in"):
        mine_hard_negatives(TableModel(VECTORS), pairs, relative_margin=1.0)


def test_group_members_are_never_negatives():
    pairs = data([("a", "b", 1), ("b", "c", 1), ("d", "e", 0), ("f", "e", 0)])  # a, b, c: one group
    mined = mine_hard_negatives(TableModel(VECTORS), pairs, num_negatives=3, max_rank=5, margin=-1.0)
    for negative in mined["negative"]:
        assert negative not in {"a", "b", "c"}
    assert len(set(mined["group_id"])) == 1


def test_neighbours_are_the_exact_search_results_outside_the_group():
    """The candidates are `topk_cosine`'s nearest texts, best first and with its scores, less the anchor's group."""
    pairs = data([("a", "b", 1), ("d", "e", 1), ("c", "f", 0)])
    model = TableModel(VECTORS)
    mined = mine_hard_negatives(model, pairs, num_negatives=3, max_rank=3, margin=-2.0, relative_margin=None)
    texts = ["a", "b", "c", "d", "e", "f"]
    embeddings = model.encode(texts)
    for anchor, group in {"a": {"a", "b"}, "d": {"d", "e"}}.items():
        scores, nearest = topk_cosine(embeddings[[texts.index(anchor)]], embeddings, len(texts))
        expected = [(texts[i], s) for i, s in zip(nearest[0].tolist(), scores[0].tolist()) if texts[i] not in group]
        got = [(n, s) for q, n, s in zip(mined["question1"], mined["negative"], mined["negative_score"]) if q == anchor]
        assert [n for n, _ in got] == [n for n, _ in expected[:3]]
        assert [s for _, s in got] == pytest.approx([s for _, s in expected[:3]], abs=1e-6)


def test_bad_arguments_and_inputs():
    model = TableModel(VECTORS)
    with pytest.raises(ValueError, match="skip_top"):
        mine_hard_negatives(model, data([("a", "b", 1)]), num_negatives=3, max_rank=2)
    with pytest.raises(ValueError, match="no duplicate pairs"):
        mine_hard_negatives(model, data([("a", "b", 0)]))
    with pytest.raises(ValueError, match="no hard negatives"):
        mine_hard_negatives(model, data([("a", "b", 1), ("e", "f", 0)]), margin=1.5)


def test_with_a_real_model(tiny_lstm, word_tokenizer):
    from tests.conftest import TEXTS

    pairs = data([(TEXTS[0], TEXTS[1], 1), (TEXTS[2], TEXTS[3], 1), (TEXTS[4], TEXTS[6], 0), (TEXTS[5], TEXTS[7], 0)])
    mined = mine_hard_negatives(tiny_lstm, pairs, word_tokenizer, num_negatives=2, margin=-2.0, relative_margin=None)
    assert len(mined) == 4
    # The negatives are the model's two nearest questions outside the anchor's group, best first,
    # with their cosine scores (margin -2 and no relative margin let every candidate through).
    embeddings = tiny_lstm.encode(TEXTS[:8], word_tokenizer)
    groups = {TEXTS[0]: {0, 1}, TEXTS[2]: {2, 3}}
    for anchor in groups:
        row = TEXTS.index(anchor)
        scores = (embeddings[row] @ embeddings.T).tolist()
        nearest = sorted((i for i in range(8) if i not in groups[anchor]), key=lambda i: -scores[i])[:2]
        got = [(n, s) for q, n, s in zip(mined["question1"], mined["negative"], mined["negative_score"]) if q == anchor]
        assert [n for n, _ in got] == [TEXTS[i] for i in nearest]
        assert [s for _, s in got] == pytest.approx([scores[i] for i in nearest], abs=1e-5)


def test_the_old_top_k_keyword_is_max_rank_with_a_warning():
    pairs = data([("a", "b", 1), ("d", "e", 1), ("c", "f", 0)])
    expected = mine_hard_negatives(TableModel(VECTORS), pairs, num_negatives=2, max_rank=3, margin=-2.0)
    with pytest.warns(FutureWarning, match=r"mine_hard_negatives\(top_k=\.\.\.\) is renamed max_rank=\.\.\..* 0\.3"):
        mined = mine_hard_negatives(TableModel(VECTORS), pairs, num_negatives=2, top_k=3, margin=-2.0)
    assert mined.to_dict() == expected.to_dict()


def test_the_rule_is_hfsiamese_mines_one():
    """The training miner keeps exactly the candidates `allowed_candidates` allows (the rule `hfsiamese mine` applies),
    ranked among the texts outside the anchor's group."""
    pairs = data([("a", "b", 1), ("c", "f", 0), ("d", "e", 0)])
    model = TableModel(VECTORS)
    texts = ["a", "b", "c", "f", "d", "e"]
    embeddings = model.encode(texts)
    scores, nearest = topk_cosine(embeddings[[0]], embeddings, len(texts))
    keep = [texts[i] not in {"a", "b"} for i in nearest[0].tolist()]
    positive = (embeddings[0] * embeddings[1]).sum().reshape(1)
    for options in ({"skip_top": 1, "margin": 0.0}, {"max_rank": 2, "margin": None, "relative_margin": 0.3}):
        filters = NegativeFilters(num_negatives=2, **{"max_rank": 4, "relative_margin": None, **options})
        allowed = allowed_candidates(scores, torch.tensor([keep]), positive, filters)[0]
        expected = [texts[i] for i, ok in zip(nearest[0].tolist(), allowed.tolist()) if ok][:2]
        mined = mine_hard_negatives(
            model, pairs, num_negatives=2, **{"max_rank": 4, "relative_margin": None, **options}
        )
        assert mined["negative"] == expected and expected
