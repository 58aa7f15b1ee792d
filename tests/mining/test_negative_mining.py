import random

import datasets
import numpy as np
import pytest
import torch

from hfsiamese.mining import HeldOutQuestions, NegativeFilters, mine_negatives
from tests.conftest import TEXTS
from tests.mining.stand_ins import VECTORS, TableCrossEncoder, TableModel


def pairs(rows, **extra):
    q1, q2, y = zip(*rows)
    return datasets.Dataset.from_dict({"question1": list(q1), "question2": list(q2), "label": list(y), **extra})


def negatives_of(mined, query):
    """The negative texts of each of `query`'s rows."""
    return [
        [mined.texts[c] for c in codes if c >= 0]
        for q, codes in zip(mined.query_codes, mined.negative_codes)
        if mined.texts[q] == query
    ]


def mine(data, **options):
    filters = NegativeFilters(**{k: options.pop(k) for k in list(options) if k in NegativeFilters.__annotations__})
    return mine_negatives(data, TableModel(VECTORS), filters=filters, **options)


def test_the_nearest_eligible_candidates_best_first_with_their_cosines():
    mined = mine(pairs([("a", "b", 1), ("c", "d", 0), ("e", "f", 0)]), num_negatives=3)
    assert negatives_of(mined, "a") == [["c", "d", "e"]]
    assert mined.positive_scores[0] == pytest.approx(0.9536, abs=1e-4)
    assert mined.negative_scores[0].tolist() == pytest.approx([0.8944, 0.6, 0.2873], abs=1e-4)
    assert mined.summary()["queries"] == 1 and mined.cross_encoder_scores is None


def test_no_question_of_the_query_duplicate_group_is_a_negative():
    # a~b and b~c: c is a's duplicate by transitivity although no pair says so, and the nearest to a
    mined = mine(pairs([("a", "b", 1), ("b", "c", 1), ("d", "e", 0), ("f", "e", 0)]), num_negatives=3)
    assert negatives_of(mined, "a") == [["d", "e", "f"]]
    assert negatives_of(mined, "b") == [["d", "e", "f"]]
    for codes, query in zip(mined.negative_codes, mined.query_codes):
        assert not {mined.texts[c] for c in codes} & {"a", "b", "c"}, mined.texts[query]


def test_held_out_questions_are_never_negatives_nor_queries():
    data = pairs([("a", "b", 1), ("d", "e", 1), ("c", "f", 0)])
    mined = mine(data, num_negatives=2, held_out=HeldOutQuestions.from_texts(["  C ", "E"]))  # folded, as everywhere
    assert negatives_of(mined, "a") == [["d", "f"]]  # c is held out
    assert negatives_of(mined, "d") == []  # its positive e is held out: no query
    assert mined.summary()["held_out_questions"] == 2
    # By id, where the pairs carry ids; and from a split's held-out pairs
    with_ids = pairs([("a", "b", 1), ("d", "e", 1), ("c", "f", 0)], qid1=["1", "4", "3"], qid2=["2", "5", "6"])
    assert negatives_of(mine(with_ids, num_negatives=3, held_out=HeldOutQuestions.from_ids([3])), "a") == [
        ["d", "e", "f"]
    ]
    validation = pairs([("d", "x", 0)])
    assert negatives_of(mine(data, num_negatives=2, held_out=HeldOutQuestions.from_pairs(validation)), "a") == [
        ["c", "e"]
    ]


def test_held_out_from_files(tmp_path):
    listed = tmp_path / "held_out.txt"
    listed.write_text("c\n\n7\n", encoding="utf-8")
    held = HeldOutQuestions.from_file(listed)
    assert "c" in held.texts and "7" in held.ids
    split_file = tmp_path / "validation.jsonl"
    pairs([("Why D?", "e", 0)]).to_json(str(split_file), lines=True)
    assert HeldOutQuestions.from_file(split_file).texts == {"why d?", "e"}
    with pytest.raises(FileNotFoundError, match="held-out questions file not found"):
        HeldOutQuestions.from_file(tmp_path / "missing.txt")


def test_rank_window_counts_only_eligible_candidates():
    data = pairs([("a", "b", 1), ("c", "d", 0), ("e", "f", 0)])
    # eligible ranks for a: c 1, d 2, e 3, f 4 (b, its duplicate, is not counted)
    assert negatives_of(mine(data, num_negatives=2, skip_top=1), "a") == [["d", "e"]]
    assert negatives_of(mine(data, num_negatives=1, skip_top=1, max_rank=2), "a") == [["d"]]
    # c fails the ceiling, and e (rank 3) lies beyond max_rank: one negative of the two asked for
    assert negatives_of(mine(data, num_negatives=2, max_rank=2, max_score=0.7), "a") == [["d"]]
    assert negatives_of(mine(data, num_negatives=1, skip_top=3, max_rank=4), "a") == [["f"]]


def test_margins_and_ceiling():
    data = pairs([("a", "b", 1), ("c", "d", 0), ("e", "f", 0)])  # s(a, b) = 0.954
    # c (0.894) is within 0.1 of the positive: dropped; d (0.6) is not
    assert negatives_of(mine(data, margin=0.1), "a") == [["d"]]
    assert negatives_of(mine(data, margin=0.05), "a") == [["c"]]
    # relative: at most 0.954 * (1 - 0.1) = 0.858
    assert negatives_of(mine(data, relative_margin=0.1), "a") == [["d"]]
    assert negatives_of(mine(data, max_score=0.5, num_negatives=2), "a") == [["e", "f"]]
    with pytest.raises(ValueError, match="relative_margin must be in"):
        NegativeFilters(relative_margin=1.0)
    with pytest.raises(ValueError, match="fewer than num_negatives=3"):
        NegativeFilters(num_negatives=3, skip_top=2, max_rank=4)
    with pytest.raises(ValueError, match="num_negatives must be a positive integer"):
        NegativeFilters(num_negatives=0)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(margin=2.0), "margin must be below 2"),
        (dict(max_score=7.0), r"max_score is a cosine ceiling in \(-1, 1\], got 7.0"),
        (dict(max_score=-1.0), "max_score is a cosine ceiling"),
    ],
)
def test_a_filter_past_the_cosines_range_is_refused(options, message):
    with pytest.raises(ValueError, match=message):
        NegativeFilters(**options)


def test_the_filters_at_the_edges_of_the_cosines_range_still_mine():
    data = pairs([("a", "b", 1), ("c", "d", 0), ("e", "f", 0)])
    # max_score 1 and a negative margin filter nothing (a margin of -2 is how a caller turns the training default off)
    assert negatives_of(mine(data, max_score=1.0), "a") == negatives_of(mine(data), "a") == [["c"]]
    assert negatives_of(mine(data, margin=-2.0), "a") == [["c"]]
    assert negatives_of(mine(data, margin=1.99), "a") == [[]]


def test_the_cross_encoder_drops_a_candidate_it_calls_duplicate():
    data = pairs([("a", "b", 1), ("c", "d", 0), ("e", "f", 0)])
    cross = TableCrossEncoder({("a", "c"): 0.9, ("a", "b"): 0.8})  # c: a false negative by its reading
    mined = mine(data, num_negatives=2, cross_encoder=cross)
    assert negatives_of(mined, "a") == [["d", "e"]]
    assert mined.cross_encoder_scores.tolist() == [pytest.approx([0.8, 0.1, 0.1])]
    # Only the candidates the bi-encoder's filters let through are scored (here the 4 in the window), and the positive.
    assert sum(cross.calls) == 4 + 1
    # Its threshold given instead of its own
    assert negatives_of(mine(data, num_negatives=2, cross_encoder=cross, cross_encoder_threshold=0.95), "a") == [
        ["c", "d"]
    ]
    with pytest.raises(ValueError, match="no threshold to decide pairs with the cross-encoder"):
        mine(data, cross_encoder=TableCrossEncoder({}, threshold=None))
    with pytest.raises(ValueError, match="cross_encoder_threshold applies only with a cross_encoder"):
        mine(data, cross_encoder_threshold=0.5)


def test_a_real_cross_encoder_rescores(tiny_cross_encoder):
    data = pairs([("a", "b", 1), ("c", "d", 0), ("e", "f", 0)])
    kept = mine(data, num_negatives=2, cross_encoder=tiny_cross_encoder, cross_encoder_threshold=1.0)
    assert negatives_of(kept, "a") == [["c", "d"]]  # a sigmoid never reaches 1: nothing dropped
    assert np.all((kept.cross_encoder_scores > 0) & (kept.cross_encoder_scores < 1))
    dropped = mine(data, num_negatives=2, cross_encoder=tiny_cross_encoder, cross_encoder_threshold=0.0)
    assert negatives_of(dropped, "a") == [[]]


def test_the_cross_encoder_runs_in_the_precision_asked(tiny_cross_encoder):
    data = pairs([("a", "b", 1), ("c", "d", 0), ("e", "f", 0)])
    full = mine(data, num_negatives=2, cross_encoder=tiny_cross_encoder, cross_encoder_threshold=1.0)
    half = mine(
        data, num_negatives=2, cross_encoder=tiny_cross_encoder, cross_encoder_threshold=1.0,
        cross_encoder_dtype=torch.bfloat16,
    )  # fmt: skip
    assert negatives_of(half, "a") == negatives_of(full, "a")
    assert half.cross_encoder_scores == pytest.approx(full.cross_encoder_scores, abs=0.02)
    seen = []

    class Recording(TableCrossEncoder):
        def score_pairs(self, texts_a, texts_b, tokenizer=None, **kwargs):
            seen.append(kwargs.get("dtype"))
            return super().score_pairs(texts_a, texts_b, tokenizer, **kwargs)

    mine(data, cross_encoder=Recording({}), cross_encoder_dtype=torch.bfloat16)
    assert seen == [torch.bfloat16]
    with pytest.raises(ValueError, match="cross_encoder_dtype applies only with a cross_encoder"):
        mine(data, cross_encoder_dtype=torch.bfloat16)


def random_pairs(n: int, seed: int = 0):
    rng = random.Random(seed)
    rows = [(rng.choice(TEXTS), rng.choice(TEXTS), rng.randint(0, 1)) for _ in range(n)]
    texts = [f"{a} {i % 7}" for i, (a, _, _) in enumerate(rows)]
    return pairs([(t, b, y) for t, (_, b, y) in zip(texts, rows)])


def test_chunks_give_the_result_of_one_chunk(tiny_lstm, word_tokenizer):
    data = random_pairs(40)
    filters = NegativeFilters(num_negatives=3, skip_top=1, max_rank=8, margin=0.0)
    whole = mine_negatives(data, tiny_lstm, word_tokenizer, filters=filters, query_chunk_size=1000)
    for chunk in (1, 3):
        chunked = mine_negatives(data, tiny_lstm, word_tokenizer, filters=filters, query_chunk_size=chunk)
        np.testing.assert_array_equal(chunked.negative_codes, whole.negative_codes)
        np.testing.assert_allclose(chunked.negative_scores, whole.negative_scores, atol=1e-6)
    assert whole.summary()["negatives"] > 0
    faiss = mine_negatives(data, tiny_lstm, word_tokenizer, filters=filters, store="faiss", query_chunk_size=5)
    np.testing.assert_array_equal(faiss.negative_codes, whole.negative_codes)


def test_the_pairs_are_checked():
    with pytest.raises(ValueError, match="no duplicate pair"):
        mine(pairs([("a", "b", 0)]))
    with pytest.raises(ValueError, match="without a held-out question"):
        mine(pairs([("a", "b", 1), ("c", "d", 0)]), held_out=HeldOutQuestions.from_texts(["b"]))
    with pytest.raises(ValueError, match="lack \\['label'\\]"):
        mine(datasets.Dataset.from_dict({"question1": ["a"], "question2": ["b"]}))
    renamed = datasets.Dataset.from_dict({"question1": ["a", "c"], "question2": ["b", "d"], "is_duplicate": [1, 0]})
    assert negatives_of(mine(renamed), "a") == [["c"]]
    with pytest.raises(ValueError, match="store must be one of"):
        mine(renamed, store="qdrant")
    with pytest.raises(ValueError, match="mining takes a store"):
        mine(renamed, backend="auto")
    with pytest.warns(FutureWarning, match=r"backend='exact'.* store='exact'"):
        assert negatives_of(mine(renamed, backend="exact"), "a") == [["c"]]


def test_the_corpus_is_embedded_once():
    model = TableModel(VECTORS)
    mine_negatives(pairs([("a", "b", 1), ("c", "d", 1), ("e", "f", 0)]), model, query_chunk_size=1)
    assert sorted(model.encoded) == sorted(VECTORS)
    assert torch.is_tensor(model.vectors["a"])
