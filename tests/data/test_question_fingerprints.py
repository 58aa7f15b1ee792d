"""`hfsiamese.data.question_fingerprints`: hashes of folded question texts, and how much of a test set they cover."""

import datasets
import numpy as np

from hfsiamese.data.question_fingerprints import pair_question_hashes, question_hashes, training_overlap


def _pairs(rows):
    return datasets.Dataset.from_dict(
        {"question1": [a for a, _ in rows], "question2": [b for _, b in rows], "label": [1] * len(rows)}
    )


def test_a_question_hashes_as_its_folded_text():
    hashes = question_hashes(["How  do I learn Python?", " how do i learn python?", "Why is the sky blue?"])
    assert hashes.dtype == np.uint64 and len(hashes) == 2 and np.all(np.diff(hashes.astype(np.float64)) > 0)
    assert question_hashes(["why is the sky blue?"])[0] in hashes
    assert question_hashes(["How do I learn Java?"])[0] not in hashes


def test_overlap_counts_pairs_and_distinct_questions_seen_in_training():
    train = _pairs([("How do I learn Python?", "Best way to learn Python?"), ("Why is the sky blue?", "Why blue sky?")])
    test = _pairs(
        [
            ("how do i learn python?", "best way to learn python?"),  # both seen (folded)
            ("Why is the sky blue?", "What colour is the sea?"),  # one seen
            ("How do I cook rice?", "How to boil rice?"),  # none
            ("How do I cook rice?", "why blue sky?"),  # one seen; 'How do I cook rice?' counted once
        ]
    )
    overlap = training_overlap(test, pair_question_hashes(train))
    assert overlap.to_dict() == {
        "pairs": 4, "pairs_with_a_seen_question": 3, "pairs_with_both_seen": 1, "questions": 7, "seen_questions": 4,
    }  # fmt: skip
    assert overlap.any and overlap.message().startswith("3 of 4 test pairs (75%) share a question")
    assert "4 of 7 distinct questions were seen" in overlap.message()


def test_held_out_pairs_share_nothing():
    train = _pairs([("How do I learn Python?", "Best way to learn Python?")])
    overlap = training_overlap(_pairs([("How do I cook rice?", "How to boil rice?")]), pair_question_hashes(train))
    assert not overlap.any and overlap.seen_questions == 0
    assert overlap.message() == "none of the 1 test pairs shares a question with the pairs that trained this model"


def test_texts_are_hashed_slice_by_slice_as_one_by_one(monkeypatch):
    import hashlib

    import pyarrow as pa

    from hfsiamese.data import question_fingerprints
    from hfsiamese.data.question_identity import fold_text

    texts = pa.chunked_array(
        [["How do I learn Python?", "what IS  python"], ["Café ?", "x", "How do I learn Python ?"]]
    )
    monkeypatch.setattr(question_fingerprints, "_HASHED_PER_SLICE", 2)
    expected = [
        int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
        for text in fold_text(texts).to_pylist()
    ]
    assert question_fingerprints._row_hashes(texts).tolist() == expected
