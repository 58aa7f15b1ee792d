"""De-duplication: repeated pairs and mirrors collapsed in load_pairs / deduplicate_pairs."""

from __future__ import annotations

import sys
import warnings

import datasets
import numpy as np
import pyarrow as pa
import pytest

from hfsiamese.data import load_pairs
from hfsiamese.data.deduplication import deduplicate_pairs


def write(path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def load(path, tmp_path, **kwargs) -> datasets.Dataset:
    return load_pairs(path, cache_dir=str(tmp_path / "hf_cache"), **kwargs)


def no_warnings(func, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    assert not [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    return result


def test_repeats_and_mirrors_collapse_by_normalised_text(tmp_path):
    rows = [
        "1\tHow do I learn Python ?\tWhat is the best way to learn Python ?\t1",
        "0\tWhy is the sky blue ?\tHow do I cook rice ?\t2",
        "1\thow do i  learn python ?\t what is the best way to learn python ?\t3",  # repeat up to case/space
        "1\tWhat is the best way to learn Python ?\tHow do I learn Python ?\t4",  # mirror
        "0\tHow do I cook rice ?\tWhy is the sky blue ?\t5",  # mirror of row 2
        "0\tWhy is the sky blue ?\tWhat is the capital of France ?\t6",  # shares a question only
    ]
    path = write(tmp_path / "dups.tsv", "\n".join(rows) + "\n")
    with pytest.warns(UserWarning, match=r"collapsed 3 of 6 row\(s\) of .*dups\.tsv .*mirror.*normalised text") as info:
        ds = load(path, tmp_path)
    assert not any("different label" in str(w.message) for w in info)
    assert ds["question1"][:] == ["How do I learn Python ?", "Why is the sky blue ?", "Why is the sky blue ?"]
    assert ds["question2"][2] == "What is the capital of France ?"
    assert ds["label"][:] == [1, 0, 0]
    assert ds._indices is None  # flat Arrow, no indices mapping


def test_conflicting_labels_keep_the_first_and_are_counted(tmp_path):
    path = write(
        tmp_path / "noisy.csv",
        "question1,question2,is_duplicate\n"
        "a ?,b ?,0\n"
        "b ?,a ?,1\n"  # mirror, conflicting
        "a ?,b ?,1\n"  # repeat, conflicting
        "a ?,b ?,0\n"  # repeat, agreeing
        "c ?,d ?,1\n",
    )
    with pytest.warns(
        UserWarning, match=r"collapsed 3 of 5 .*noisy\.csv.*; 2 of the collapsed copies had a different label"
    ):
        ds = load(path, tmp_path)
    assert ds["label"][:] == [0, 1]  # the first copy's label, not a vote or "any duplicate"
    assert ds["question1"][:] == ["a ?", "c ?"]


def test_identity_by_question_ids_when_present(tmp_path):
    path = write(
        tmp_path / "ids.csv",
        "id,qid1,qid2,question1,question2,is_duplicate\n"
        "0,1,2,How old is Earth?,What is the age of Earth?,1\n"
        "1,2,1,What is the Earth's age?,How old is the Earth?,1\n"  # same ids mirrored, other wording
        "2,3,4,How old is Earth?,What is the age of Earth?,1\n",  # same text, other ids: kept
    )
    with pytest.warns(UserWarning, match=r"collapsed 1 of 3 .*identity by question ids"):
        ds = load(path, tmp_path)
    assert ds["qid1"][:] == ["1", "3"]


def test_deduplicate_false_keeps_everything(tmp_path):
    path = write(tmp_path / "dups.csv", "question1,question2,is_duplicate\na,b,1\nb,a,0\na,b,1\n")
    ds = no_warnings(load, path, tmp_path, deduplicate=False)
    assert ds["label"][:] == [1, 0, 1]


def test_no_warning_without_repeats(tmp_path):
    path = write(tmp_path / "clean.csv", "question1,question2,is_duplicate\na,b,1\na,c,0\nc,b,1\n")
    assert len(no_warnings(load, path, tmp_path)) == 3


def test_same_question_twice_in_a_pair_is_kept(tmp_path):
    path = write(tmp_path / "self.csv", "question1,question2,is_duplicate\nsame ?,Same ?,1\nother ?,x ?,0\n")
    assert len(no_warnings(load, path, tmp_path)) == 2


def test_deduplicate_pairs_report_and_selected_dataset():
    base = datasets.Dataset.from_dict(
        {"question1": ["z", "a", "b", "a", "q"], "question2": ["y", "b", "a", "b", "r"], "label": [0, 1, 0, 1, 1]}
    )
    view = base.select([1, 2, 3, 4])  # a data set with an indices mapping
    out, report = deduplicate_pairs(view, warn=False)
    assert (report.rows, report.collapsed, report.conflicting, report.identity) == (4, 2, 1, "normalised text")
    assert out["question1"][:] == ["a", "q"] and out["label"][:] == [1, 1]
    same, report = deduplicate_pairs(base.select([0, 4]), warn=False)
    assert report.collapsed == 0 and len(same) == 2


def random_pairs(n: int) -> tuple[datasets.Dataset, np.ndarray, np.ndarray]:
    """`n` pairs of n/6 numbered questions, half of them mirrored, so many pairs repeat; and both columns."""
    rng = np.random.default_rng(0)
    left, right = rng.integers(0, n // 6, n), rng.integers(0, n // 6, n)
    flip = rng.random(n) < 0.5
    q1 = np.where(flip, right, left).astype(str)
    q2 = np.where(flip, left, right).astype(str)
    table = pa.table({"question1": pa.array(q1), "question2": pa.array(q2), "label": pa.array(rng.integers(0, 2, n))})
    return datasets.Dataset(table), q1, q2


def python_calls(function, *args, **kwargs) -> int:
    """How many Python and builtin function calls running `function` makes (a count, the same on any machine)."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        function(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return count


def test_deduplicate_pairs_is_vectorised():
    """
    Four times the rows cost about the same count of Python calls, where a per-row loop normalising each text
    makes several per added row: the work is in Arrow, pandas and numpy. A count, not a time,
    so the same on any machine.
    """
    small, large = 20_000, 80_000
    deduplicate_pairs(random_pairs(1_000)[0], warn=False)  # first-call imports and caches are not per-row work
    calls_small = python_calls(deduplicate_pairs, random_pairs(small)[0], warn=False)
    ds, q1, q2 = random_pairs(large)
    calls_large = python_calls(deduplicate_pairs, ds, warn=False)
    assert calls_large - calls_small < (large - small) / 20, (calls_small, calls_large)
    out, report = deduplicate_pairs(ds, warn=False)
    pairs = {frozenset((a, b)) if a != b else (a,) for a, b in zip(q1.tolist(), q2.tolist(), strict=True)}
    assert len(out) == len(pairs) == large - report.collapsed and report.collapsed > 0
