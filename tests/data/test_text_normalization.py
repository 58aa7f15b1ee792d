"""Text normalisation: the optional NFKC/lowercasing of questions at load, before de-duplication."""

from __future__ import annotations

import unicodedata

import datasets
import pyarrow as pa
import pytest

from hfsiamese.data import load_pairs, text_normalization
from hfsiamese.data.text_normalization import NORMALIZATIONS, normalize_texts


def write(path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def load(path, tmp_path, **kwargs) -> datasets.Dataset:
    return load_pairs(path, cache_dir=str(tmp_path / "hf_cache"), **kwargs)


TEXTS = "question1,question2,is_duplicate\nWhat Is ＡＩ ?,The ﬁle Ⅻ ?,1\n"


@pytest.mark.parametrize(
    ("normalization", "q1", "q2"),
    [
        (None, "What Is ＡＩ ?", "The ﬁle Ⅻ ?"),
        ("lower", "what is ａｉ ?", "the ﬁle ⅻ ?"),
        ("nfkc", "What Is AI ?", "The file XII ?"),
        ("nfkc_lower", "what is ai ?", "the file xii ?"),
    ],
)
def test_normalization_choices(tmp_path, normalization, q1, q2):
    ds = load(write(tmp_path / "texts.csv", TEXTS), tmp_path, normalization=normalization)
    assert ds[0]["question1"] == q1 and ds[0]["question2"] == q2


def test_normalization_is_validated(tmp_path):
    path = write(tmp_path / "texts.csv", TEXTS)
    with pytest.raises(ValueError, match=r"normalization must be one of .*'nfkc_lower'.*got 'upper'"):
        load(path, tmp_path, normalization="upper")
    assert set(NORMALIZATIONS) == {None, "lower", "nfkc", "nfkc_lower"}


def test_normalization_happens_before_deduplication_and_emptiness(tmp_path):
    # NFKC turns the ligature into "fi" (so the pairs repeat) and a no-break space into a space.
    text = "question1,question2,is_duplicate\nThe ﬁle ?,a ?,1\nThe file ?,A ?,1\n\u00a0,b ?,0\n"
    path = write(tmp_path / "nfkc.csv", text)
    with pytest.warns(UserWarning) as info:
        ds = load(path, tmp_path, normalization="nfkc")
    messages = " | ".join(str(w.message) for w in info)
    assert "dropped 1 of 3" in messages and "collapsed 1 of 2" in messages
    assert ds["question1"][:] == ["The file ?"]
    with pytest.warns(UserWarning, match="dropped 1 of 3"):
        assert len(load(path, tmp_path)) == 2  # without NFKC the ligature makes another text


def test_normalize_texts_on_arrow():
    array = pa.array(["ＡＢ", None, "Ǆ"])
    assert normalize_texts(array, "nfkc_lower").to_pylist() == ["ab", None, "dž"]
    assert normalize_texts(array, None) is array


@pytest.mark.parametrize("arrow_composes", [True, False], ids=["arrow kernel", "unicodedata (pyarrow < 26)"])
def test_nfkc_composes_on_either_path(monkeypatch, arrow_composes):
    # pyarrow before 26 only decomposes for form="NFKC" (apache/arrow#51225): the by-hand path stands in there.
    if arrow_composes and not text_normalization.arrow_nfkc_composes():
        arrow_composes = False  # this pyarrow's kernel is the broken one: both cases take the by-hand path
    monkeypatch.setattr(text_normalization, "arrow_nfkc_composes", lambda: arrow_composes)
    texts = ["A\u030angstro\u0308m", None, "Ǆ ﬁ", "\u212b"]
    chunked = pa.chunked_array([texts[:2], texts[2:]], type=pa.large_string())
    out = normalize_texts(chunked, "nfkc")
    assert out.type == pa.large_string() and out.num_chunks == 2
    assert out.to_pylist() == [None if t is None else unicodedata.normalize("NFKC", t) for t in texts]
    assert out.to_pylist()[0] == "Ångström"
