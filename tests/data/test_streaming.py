"""load_pairs(streaming=True): same columns, labels and checks as eager loading, row by row."""

from __future__ import annotations

import json
import warnings

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hfsiamese.data import load_pairs, readers as readers_module


def write(path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def eager(path, tmp_path, **kwargs) -> datasets.Dataset:
    return load_pairs(path, cache_dir=str(tmp_path / "hf_cache"), deduplicate=False, **kwargs)


def stream(path, **kwargs) -> datasets.IterableDataset:
    return load_pairs(path, streaming=True, **kwargs)


def rows_until_error(ds: datasets.IterableDataset) -> tuple[list[dict], BaseException | None]:
    rows: list[dict] = []
    try:
        for row in ds:
            rows.append(row)
    except Exception as err:  # noqa: BLE001
        return rows, err
    return rows, None


BIMPM = (
    '1\tWhat is a "quote ?\tWhat does " mean ?\t17\n'
    "0\t  Spaces around  \tspaces around\t18\n"
    '1\tWhat is a "quote ?\tWhat does " mean ?\t19\n'  # a repeat: kept, streaming never de-duplicates
)
QUORA = (
    '"id","qid1","qid2","question1","question2","is_duplicate"\n'
    '"0","1","2","What is ""love"", really?","Define love, please?","1"\n'
    '"1","3","4","A question with\na newline?","Another one?","no"\n'
)


@pytest.mark.parametrize(("name", "text"), [("qqp.tsv", BIMPM), ("train.csv", QUORA)])
def test_text_files_stream_like_eager(tmp_path, name, text):
    path = write(tmp_path / name, text)
    ds = stream(path)
    assert isinstance(ds, datasets.IterableDataset)
    expected = eager(path, tmp_path)
    assert ds.features == expected.features and ds.column_names == expected.column_names
    assert list(ds) == expected.to_list()
    assert list(ds) == expected.to_list()  # a second pass gives the same rows


def test_json_and_parquet_stream(tmp_path):
    rows = [
        {"qid1": 1, "qid2": 2, "question1": "Is it json?", "question2": "Is this JSON?", "is_duplicate": True},
        {"qid1": 3, "qid2": 4, "question1": "Why?", "question2": "How?", "is_duplicate": "no"},
    ]
    json_path = write(tmp_path / "pairs.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert list(stream(json_path)) == eager(json_path, tmp_path).to_list()
    parquet_path = tmp_path / "pairs.parquet"
    pq.write_table(pa.table({"text1": ["one", "two"], "text2": ["uno", "dos"], "label": [1.0, 0.0]}), parquet_path)
    assert list(stream(str(parquet_path))) == [
        {"question1": "one", "question2": "uno", "label": 1},
        {"question1": "two", "question2": "dos", "label": 0},
    ]


def test_normalization_applies_when_streaming(tmp_path):
    path = write(tmp_path / "t.csv", "question1,question2,is_duplicate\nThe ﬁle ＡＩ ?,B ?,1\n")
    assert next(iter(stream(path, normalization="nfkc_lower")))["question1"] == "the file ai ?"
    with pytest.raises(ValueError, match="normalization must be one of"):
        stream(path, normalization="NFKC")


def test_invalid_label_fails_when_its_row_is_reached(tmp_path):
    body = "".join(f"q{i},p{i},{i % 2}\n" for i in range(25_000)) + "late,bad,maybe\nafter,it,1\n"
    path = write(tmp_path / "late.csv", "question1,question2,is_duplicate\n" + body)
    ds = stream(path)  # no error yet: nothing is read up front
    rows, err = rows_until_error(ds)
    assert len(rows) == 25_000  # every row before the bad one came out (over several batches)
    assert isinstance(err, ValueError)
    assert "late.csv" in str(err) and "'maybe'" in str(err) and "data row 25001" in str(err)


def test_empty_questions_are_dropped_and_counted_on_the_fly(tmp_path):
    body = "a,b,1\n,empty,0\nc,d,1\n" + "".join(f"q{i},p{i},0\n" for i in range(12_000)) + '"  ",blank,1\n'
    path = write(tmp_path / "holes.csv", "question1,question2,is_duplicate\n" + body)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = list(stream(path))
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(rows) == 12_002
    assert any("first: data row 2" in m and "cannot count them up front" in m for m in messages)
    assert any("dropped 2 of 12004 row(s)" in m and "holes.csv" in m for m in messages)


def test_truncated_and_malformed_files_fail_when_reached(tmp_path):
    cut = write(tmp_path / "cut.tsv", "1\tq one\tq two\t1\n0\tq three\tq fo")
    rows, err = rows_until_error(stream(cut, format="bimpm"))
    assert len(rows) == 1 and "cut.tsv: data row 2 has 3 field(s), expected 4" in str(err)
    quote = write(tmp_path / "quote.csv", 'question1,question2,is_duplicate\na,b,1\n"never closed,x')
    rows, err = rows_until_error(stream(quote))
    assert isinstance(err, ValueError) and "quote.csv" in str(err) and "EOF inside string" in str(err)
    extra = write(tmp_path / "extra.csv", "question1,question2,is_duplicate\na,b,1,oops\n")
    rows, err = rows_until_error(stream(extra))
    assert isinstance(err, ValueError) and "cannot parse" in str(err) and "extra.csv" in str(err)


def test_non_utf8_file_fails_naming_the_offset(tmp_path):
    data = b"question1,question2,is_duplicate\n" + b"a,b,1\n" * 20_000 + b"caf\xe9,x,0\n"
    path = tmp_path / "latin1.csv"
    path.write_bytes(data)
    _, err = rows_until_error(stream(str(path)))
    assert isinstance(err, ValueError)
    offset = data.index(b"\xe9")
    assert f"byte offset {offset} (line 20002)" in str(err) and "latin1.csv" in str(err)


def test_checks_that_need_no_reading_happen_at_once(tmp_path):
    header = write(tmp_path / "header.csv", "question1,question2,is_duplicate\n")
    with pytest.raises(ValueError, match="no data rows"):
        stream(header)
    empty = write(tmp_path / "empty.tsv", "")
    with pytest.raises(ValueError, match="empty"):
        stream(empty)
    cols = write(tmp_path / "cols.csv", "first,second,target\na,b,1\n")
    with pytest.raises(ValueError, match=r"missing column\(s\)"):
        stream(cols)
    numbers = tmp_path / "numbers.parquet"
    pq.write_table(pa.table({"question1": [1, 2], "question2": ["a", "b"], "label": [1, 0]}), numbers)
    with pytest.raises(ValueError, match="'question1' holds numbers"):
        stream(str(numbers))


def test_numbers_only_text_column_fails_on_the_first_batch(tmp_path):
    path = write(tmp_path / "ids.csv", "id,qid1,qid2,question1,question2,is_duplicate\n0,11,12,a?,b?,1\n")
    _, err = rows_until_error(
        stream(path, question1_column="qid1", question2_column="question2", label_column="is_duplicate")
    )
    assert isinstance(err, ValueError) and "'qid1' holds numbers only" in str(err)


def test_hub_streaming_keeps_shards(monkeypatch):
    hub = datasets.Dataset.from_dict(
        {
            "question1": ["a", "b", "", "d"],
            "question2": ["w", "x", "y", "z"],
            "label": [0, 1, 1, 0],
            "idx": [0, 1, 2, 3],
        }
    ).to_iterable_dataset(num_shards=2)
    calls = []

    def fake_load_dataset(name, config=None, *, split, cache_dir, streaming):
        calls.append((name, config, split, streaming))
        return hub

    monkeypatch.setattr(readers_module, "hub_offline", lambda: False)
    monkeypatch.setattr(readers_module.datasets, "load_dataset", fake_load_dataset)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = load_pairs("nyu-mll/glue:qqp", split="validation", streaming=True)
        rows = list(ds)
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert any("first: row 1 of shard 1" in m for m in messages)
    assert any("dropped 1 of 2 row(s) from nyu-mll/glue:qqp (shard 1)" in m for m in messages)
    assert calls == [("nyu-mll/glue", "qqp", "validation", True)]
    assert ds.n_shards == 2
    assert [r["question1"] for r in rows] == ["a", "b", "d"]


def test_streamed_pairs_feed_a_dataloader_with_workers(tmp_path):
    import torch

    hub_like = datasets.Dataset.from_dict(
        {
            "question1": [f"q{i}" for i in range(8)],
            "question2": [f"p{i}" for i in range(8)],
            "label": [i % 2 for i in range(8)],
        }
    )
    parquet_dir = tmp_path / "shards"
    parquet_dir.mkdir()
    hub_like.to_parquet(str(parquet_dir / "pairs.parquet"))
    ds = stream(str(parquet_dir / "pairs.parquet")).with_format("torch")
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=1)
    labels = torch.cat([batch["label"] for batch in loader])
    assert labels.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
