"""Teacher-score rows read from a file, and refused when they hold a held-out question."""

import json

import datasets
import pytest

from hfsiamese.data.teacher_score_rows import load_teacher_score_rows, refuse_held_out_questions
from tests.conftest import TEXTS

ROWS = [
    {"question1": TEXTS[0], "question2": TEXTS[1], "negative": [TEXTS[2], TEXTS[3]], "teacher_scores": [0.9, 0.2, 0.1]},
    {"question1": TEXTS[2], "question2": TEXTS[3], "negative": [TEXTS[4], TEXTS[5]], "teacher_scores": [0.8, 0.3, 0.0]},
]


def write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_reads_the_four_columns_and_drops_the_others(tmp_path):
    path = write(tmp_path / "scored.jsonl", [{**row, "source": "mined"} for row in ROWS])
    rows = load_teacher_score_rows(path)
    assert rows.column_names == ["question1", "question2", "negative", "teacher_scores"]
    assert rows[1]["negative"] == [TEXTS[4], TEXTS[5]] and rows[1]["teacher_scores"] == [0.8, 0.3, 0.0]


def test_bad_files_are_refused_naming_the_problem(tmp_path):
    with pytest.raises(ValueError, match=r"missing column\(s\) \['teacher_scores'\]"):
        load_teacher_score_rows(
            write(tmp_path / "a.jsonl", [{k: v for k, v in r.items() if k != "teacher_scores"} for r in ROWS])
        )
    with pytest.raises(ValueError, match="not '.tsv'"):
        load_teacher_score_rows(tmp_path / "scored.tsv")
    with pytest.raises(FileNotFoundError, match="no file"):
        load_teacher_score_rows(tmp_path / "missing.jsonl")


@pytest.mark.parametrize("held_text", [TEXTS[0], TEXTS[3], TEXTS[5]])  # a query, a positive, a negative
def test_a_held_out_question_anywhere_in_a_row_is_refused(held_text, tmp_path):
    rows = load_teacher_score_rows(write(tmp_path / "scored.jsonl", ROWS))
    held_out = datasets.Dataset.from_dict({"question1": [held_text], "question2": [TEXTS[7]], "label": [0]})
    expected = 2 if held_text == TEXTS[3] else 1  # TEXTS[3] is row 0's negative and row 1's positive
    with pytest.raises(ValueError, match=f"{expected} of 2 teacher-score rows in scored.jsonl hold a validation"):
        refuse_held_out_questions(rows, [held_out], "scored.jsonl")
    clean = datasets.Dataset.from_dict({"question1": [TEXTS[6]], "question2": [TEXTS[7]], "label": [0]})
    refuse_held_out_questions(rows, [clean], "scored.jsonl")  # nothing held out in them: no error


@pytest.mark.parametrize("held_text", [TEXTS[0], TEXTS[3], TEXTS[5]])  # a query, a positive, a negative
def test_a_held_out_question_differing_only_in_case_or_spaces_is_refused(held_text, tmp_path):
    """The library's one question identity (folded text), as `hfsiamese mine --held_out_file` excludes questions: a
    raw-text comparison let these through."""
    rows = load_teacher_score_rows(write(tmp_path / "scored.jsonl", ROWS))
    variant = "  " + " ".join(held_text.upper().split()).replace(" ", "   ") + " "
    assert variant != held_text
    held_out = datasets.Dataset.from_dict({"question1": [variant], "question2": [TEXTS[7]], "label": [0]})
    with pytest.raises(ValueError, match=r"hold a validation or test question \(by folded text\)"):
        refuse_held_out_questions(rows, [held_out], "scored.jsonl")
