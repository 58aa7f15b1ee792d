"""The question identity (`hfsiamese.data.question_identity`): ids, else folded text, stored once and reused; duplicate
groups (closure, identity rules, agreement); repeated pairs and mirrors collapsed (`deduplicate_pairs`, `load_pairs`)."""

from __future__ import annotations

import sys
import warnings

import datasets
import numpy as np
import pyarrow as pa
import pytest

from hfsiamese.data import (
    assign_duplicate_groups,
    group_pairs,
    load_pairs,
    question_identity,
    split_by_group,
    split_report,
    triplets,
    view_sizes,
)
from hfsiamese.data.question_identity import (
    KEY_COLUMNS,
    deduplicate_pairs,
    distinct_questions,
    fold_text,
    identity_name,
    question_codes,
    question_keys,
    with_question_keys,
)
from tests.fixtures import random_rows

# --- identity: ids, keys, codes ---


def pairs(rows, **extra) -> datasets.Dataset:
    q1, q2, label = zip(*rows)
    return datasets.Dataset.from_dict({"question1": list(q1), "question2": list(q2), "label": list(label), **extra})


def test_fold_text_strips_lowercases_and_collapses_whitespace():
    assert fold_text(pa.array(["  How   ARE\tyou? ", "x\n\ny", None])).to_pylist() == ["how are you?", "x y", None]


def test_keys_are_ids_when_present_else_folded_text():
    data = pairs([("A  b", "c", 1)])
    assert [k.to_pylist() for k in question_keys(data)] == [["a b"], ["c"]]
    assert [k.to_pylist() for k in question_keys(data, normalize=False)] == [["A  b"], ["c"]]
    with_ids = pairs([("A  b", "c", 1)], qid1=[7], qid2=[8])  # integer ids become strings
    assert [k.to_pylist() for k in question_keys(with_ids, normalize=False)] == [["7"], ["8"]]
    assert (identity_name(data), identity_name(with_ids)) == ("normalised text", "question ids")


def test_keys_need_every_question_identified():
    with pytest.raises(ValueError, match="1 null value"):
        question_keys(pairs([("a", "b", 1)], qid1=["1"], qid2=[None]))
    with pytest.raises(ValueError, match="no pairs"):
        question_keys(pairs([("a", "b", 1)]).select([]))


def test_codes_number_questions_in_order_of_first_appearance():
    codes = question_codes(pairs([("b", "a", 1), ("A", "c", 0), ("c", "B ", 1)]))
    # [question1 column, question2 column] = b, a, c | a, c, b
    assert codes.codes1.tolist() == [0, 1, 2] and codes.codes2.tolist() == [1, 2, 0] and codes.count == 3


def test_stored_keys_are_carried_and_reused():
    data = with_question_keys(pairs([("How  are you", "hello", 1), ("x", "y", 0)]))
    assert data[KEY_COLUMNS[0]] == ["how are you", "x"]
    assert with_question_keys(data) is data
    # The stored identity is what later steps read: a rewritten text column does not change it.
    rewritten = data.remove_columns("question1").add_column("question1", ["other", "texts"])
    assert question_keys(rewritten)[0].to_pylist() == ["how are you", "x"]
    assert question_keys(rewritten, normalize=False)[0].to_pylist() == ["other", "texts"]


def test_a_run_folds_the_texts_once(monkeypatch):
    """Split, groups, split report and views of one data set: its texts are folded once, not per step."""
    folded = []

    def counting_fold(texts):
        folded.append(len(texts))
        return fold_text(texts)

    monkeypatch.setattr(question_identity, "fold_text", counting_fold)
    rng = np.random.default_rng(0)
    a, b, duplicate = rng.integers(0, 300, 200), rng.integers(0, 300, 200), rng.random(200) < 0.5
    rows = [(f"Question {i}", f"question  {j}", int(y)) for i, j, y in zip(a, b, duplicate)]
    splits = split_by_group(pairs(rows), validation_fraction=0.2, seed=0)
    splits["train"] = assign_duplicate_groups(splits["train"])
    split_report(splits)
    triplets(splits["train"])
    group_pairs(splits["train"])
    view_sizes(splits["train"])
    assert folded == [200, 200]  # question1 and question2 of the whole data set, once


def test_distinct_questions_by_folded_text_keep_the_first_text():
    texts, ids = distinct_questions(pairs([("How are you?", "Hello", 1), ("how  are you?", "bye", 0)]))
    assert texts == ["How are you?", "Hello", "bye"] and ids is None


def test_distinct_questions_by_id_keep_ids():
    data = pairs([("same", "other", 1), ("same", "x", 0)], qid1=["1", "2"], qid2=["3", "1"])
    texts, ids = distinct_questions(data)
    assert ids == ["1", "2", "3"] and texts == ["same", "same", "other"]


# --- duplicate groups ---


def reference_groups(rows) -> list[int]:
    """Slow, obviously correct union-find over normalised texts, for comparison."""
    parent: dict[str, str] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x

    norm = [(" ".join(a.split()).lower(), " ".join(b.split()).lower(), y) for a, b, y in rows]
    for a, b, y in norm:
        find(a), find(b)
        if y == 1:
            parent[find(a)] = find(b)
    return [find(a) for a, _, _ in norm]


# --------------------------------------------------------------------------------------------
# assign_duplicate_groups
# --------------------------------------------------------------------------------------------
def test_transitive_closure_and_non_duplicates():
    ds = assign_duplicate_groups(pairs([("a", "b", 1), ("b", "c", 1), ("d", "e", 0), ("a", "d", 0), ("c", "f", 1)]))
    g = ds["group_id"][:]
    assert ds.features["group_id"] == datasets.Value("int64")
    assert g[0] == g[1] == g[4]  # a~b~c~f through the closure
    assert g[2] != g[0]  # d only meets a through a non-duplicate
    assert g[3] == g[0]  # a pair takes its question1's group
    assert sorted(set(g)) == list(range(len(set(g))))  # ids 0..G-1


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_matches_union_find_reference(seed):
    rows = random_rows(seed)
    got = assign_duplicate_groups(pairs(rows))["group_id"][:]
    expected = reference_groups(rows)
    # Same partition: the mapping between reference roots and group ids is a bijection.
    assert len(set(zip(got, expected))) == len(set(got)) == len(set(expected))
    assert sorted(set(got)) == list(range(len(set(got))))


def test_qid_identity_beats_text():
    rows = [("same text", "x", 1), ("same text", "y", 1), ("other", "z", 1)]
    ds = pairs(rows, qid1=["1", "2", "3"], qid2=["10", "20", "1"])
    g = assign_duplicate_groups(ds)["group_id"][:]
    assert g[0] != g[1]  # equal texts, different ids: different questions
    assert g[2] == g[0]  # different texts, qid 1 on both: same question
    g_text = assign_duplicate_groups(pairs(rows))["group_id"][:]
    assert g_text[0] == g_text[1] and g_text[2] != g_text[0]


def test_integer_qids_work():
    ds = pairs([("a", "b", 1), ("c", "d", 1)], qid1=[1, 3], qid2=[2, 1])
    g = assign_duplicate_groups(ds)["group_id"][:]
    assert g[0] == g[1]


def test_normalised_text_identity():
    rows = [("How are you?", "hello", 1), ("  how   ARE\tyou? ", "greetings", 1)]
    assert len(set(assign_duplicate_groups(pairs(rows))["group_id"][:])) == 1
    assert len(set(assign_duplicate_groups(pairs(rows), normalize=False)["group_id"][:])) == 2


def test_existing_group_id_is_replaced():
    ds = pairs([("a", "b", 1), ("c", "d", 0)], group_id=[7, 7])
    out = assign_duplicate_groups(ds)
    assert out.column_names.count("group_id") == 1
    assert out["group_id"][:] == [0, 1]


def test_works_after_select():
    ds = pairs([("a", "b", 1), ("x", "y", 0), ("b", "c", 1)]).select([2, 0])
    assert assign_duplicate_groups(ds)["group_id"][:] == [0, 0]


def test_question_groups_agree_with_pair_groups():
    from hfsiamese.data.question_identity import question_groups

    rows = random_rows(7)
    data = pairs(rows)
    codes1, codes2, group_of, first_position = question_groups(data)
    assert (group_of[codes1] == np.asarray(assign_duplicate_groups(data)["group_id"])).all()
    texts = list(data["question1"]) + list(data["question2"])
    for code in np.unique(np.concatenate([codes1, codes2])):
        assert first_position[code] == min(np.flatnonzero(np.concatenate([codes1, codes2]) == code))
        assert texts[first_position[code]]
    duplicate = np.asarray([y for _, _, y in rows]) == 1
    assert (group_of[codes1[duplicate]] == group_of[codes2[duplicate]]).all()


# --- repeated pairs ---


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


@pytest.mark.parametrize("per_part", [1 << 22, 7])
def test_the_split_report_counts_as_sets_do_in_any_number_of_partitions(monkeypatch, per_part):
    """Distinct questions, shared questions and groups counted a partition at a time (7 values a part: dozens of
    partitions) equal the counts of plain Python sets."""
    import hfsiamese.data.question_identity as identity

    monkeypatch.setattr(identity, "_VALUES_PER_PART", per_part)
    rng = np.random.default_rng(0)
    pool = [f"question {i} {'x' * int(rng.integers(0, 9))}" for i in range(60)]

    def split(n: int, seed: int) -> datasets.Dataset:
        r = np.random.default_rng(seed)
        return datasets.Dataset.from_dict(
            {
                "question1": [pool[i] for i in r.integers(0, 60, n)],
                "question2": [pool[i].upper() for i in r.integers(0, 60, n)],  # folded to the same key
                "label": r.integers(0, 2, n).tolist(),
                "group_id": r.integers(-5, 30, n).tolist(),
            }
        )

    splits = datasets.DatasetDict({"train": split(80, 1), "validation": split(30, 2), "test": split(20, 3)})
    report = identity.split_report(splits)
    questions = {
        name: {q.lower() for q in s["question1"]} | {q.lower() for q in s["question2"]} for name, s in splits.items()
    }
    for name, s in splits.items():
        assert report[name]["questions"] == len(questions[name])
        assert report[name]["duplicate_groups"] == len(set(s["group_id"]))
        assert report[name]["duplicates"] == sum(s["label"])
    assert report["shared_questions"] == {
        "train/validation": len(questions["train"] & questions["validation"]),
        "train/test": len(questions["train"] & questions["test"]),
        "validation/test": len(questions["validation"] & questions["test"]),
    }


def test_the_split_report_counts_boolean_labels():
    pairs = datasets.Dataset.from_dict(
        {"question1": ["a", "b", "c"], "question2": ["d", "e", "f"], "label": [True, False, True]}
    )
    report = split_report(datasets.DatasetDict({"train": pairs}))
    assert report["train"]["duplicates"] == 2 and report["train"]["duplicate_rate"] == 2 / 3
