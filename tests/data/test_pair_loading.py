"""load_pairs: every supported format, label variants, and each kind of bad input."""

from __future__ import annotations

import json
import warnings

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hfsiamese.data import PAIR_FORMATS, HubUnreachableError, load_pairs, readers as readers_module
from tests.helpers import refuse_network

BASE = ["question1", "question2", "label"]
WITH_IDS = BASE + ["qid1", "qid2"]


def write(path, text: str, *, newline: str = "\n", bom: bool = False):
    data = text.replace("\n", newline).encode("utf-8")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return str(path)


def load(path, tmp_path, **kwargs) -> datasets.Dataset:
    return load_pairs(path, cache_dir=str(tmp_path / "hf_cache"), **kwargs)


def check_schema(ds: datasets.Dataset, columns: list[str]) -> None:
    assert ds.column_names == columns
    assert ds.features["label"] == datasets.Value("int64")
    for name in columns:
        if name != "label":
            assert ds.features[name] == datasets.Value("string"), name


# --------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------
def test_bimpm_tsv_with_quotes(tmp_path):
    path = write(
        tmp_path / "qqp.tsv",
        '1\tWhat is a "quote ?\tWhat does " mean ?\t17\n'
        '0\t"Quoted" at the start ?\t" unbalanced at the start ?\t18\n'
        "1\t  Spaces around  \tspaces around\t19\n",
    )
    ds = load(path, tmp_path)
    check_schema(ds, BASE)
    assert ds["question1"][:] == ['What is a "quote ?', '"Quoted" at the start ?', "Spaces around"]
    assert ds["question2"][:2] == ['What does " mean ?', '" unbalanced at the start ?']
    assert ds["label"][:] == [1, 0, 1]


def test_quora_kaggle_csv_with_qids(tmp_path):
    path = write(
        tmp_path / "train.csv",
        '"id","qid1","qid2","question1","question2","is_duplicate"\n'
        '"0","1","2","What is ""love"", really?","Define love, please?","1"\n'
        '"1","3","4","A question with\na newline?","Another one?","0"\n',
    )
    ds = load(path, tmp_path)
    check_schema(ds, WITH_IDS)
    assert ds["question1"][:] == ['What is "love", really?', "A question with\na newline?"]
    assert ds["qid1"][:] == ["1", "3"] and ds["qid2"][:] == ["2", "4"]
    assert ds["label"][:] == [1, 0]


def test_glue_qqp_tsv(tmp_path):
    path = write(
        tmp_path / "dev.tsv",
        "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
        '5\t10\t11\tIs "this" a quote?\tIs this quoted?\t0\n'
        "6\t12\t13\tHow old is Earth?\tWhat is the age of Earth?\t1\n",
    )
    ds = load(path, tmp_path)
    check_schema(ds, WITH_IDS)
    assert ds["question1"][0] == 'Is "this" a quote?'
    assert ds["qid1"][:] == ["10", "12"]
    assert ds["label"][:] == [0, 1]


def test_mrpc_with_bom_and_crlf(tmp_path):
    path = write(
        tmp_path / "msr-para-train.tsv",
        "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        '1\t702876\t702977\tAmrozi accused his brother, whom he called "the witness".\t'
        'Referring to him as "the witness".\n'
        "0\t2108705\t2108831\tYucaipa owned Dominick's.\tYucaipa bought Dominick's in 1995.\n",
        newline="\r\n",
        bom=True,
    )
    ds = load(path, tmp_path)
    check_schema(ds, WITH_IDS)
    assert ds["label"][:] == [1, 0]
    assert ds["qid1"][:] == ["702876", "2108705"]
    assert ds["question2"][:] == ['Referring to him as "the witness".', "Yucaipa bought Dominick's in 1995."]


def test_generic_csv_sentence_columns(tmp_path):
    path = write(
        tmp_path / "pairs.csv",
        "idx,sentence1,sentence2,label,source\n0,A cat sat.,A cat was sitting.,1,x\n1,Dogs bark.,Fish swim.,0,y\n",
    )
    ds = load(path, tmp_path)
    check_schema(ds, BASE)
    assert ds["question1"][:] == ["A cat sat.", "Dogs bark."]
    assert ds["label"][:] == [1, 0]


def test_generic_tsv_with_column_flags(tmp_path):
    path = write(
        tmp_path / "mine.tsv",
        "left\tright\tsame\tleft_id\tright_id\nfirst q\tsecond q\tyes\t7\t8\nthird q\tfourth q\tno\t9\t10\n",
    )
    ds = load(
        path, tmp_path,
        question1_column="left", question2_column="right", label_column="same",
        id1_column="left_id", id2_column="right_id",
    )  # fmt: skip
    check_schema(ds, WITH_IDS)
    assert ds[1] == {"question1": "third q", "question2": "fourth q", "label": 0, "qid1": "9", "qid2": "10"}


def test_jsonl_with_int_ids_and_bool_labels(tmp_path):
    rows = [
        {"qid1": 1, "qid2": 2, "question1": "Is it json?", "question2": "Is this JSON?", "is_duplicate": True},
        {"qid1": 3, "qid2": 4, "question1": "Why?", "question2": "How?", "is_duplicate": False},
    ]
    path = write(tmp_path / "pairs.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    ds = load(path, tmp_path)
    check_schema(ds, WITH_IDS)
    assert ds["label"][:] == [1, 0]
    assert ds["qid1"][:] == ["1", "3"]


def test_parquet_with_float_labels(tmp_path):
    table = pa.table({"text1": ["one", "two", "three"], "text2": ["uno", "dos", "tres"], "label": [1.0, 0.0, 1.0]})
    path = tmp_path / "pairs.parquet"
    pq.write_table(table, path)
    ds = load(str(path), tmp_path)
    check_schema(ds, BASE)
    assert ds["label"][:] == [1, 0, 1]
    assert ds["question2"][:] == ["uno", "dos", "tres"]


def test_explicit_format_overrides_detection(tmp_path):
    # Pair ids that are not integers defeat BiMPM sniffing; format= says what it is.
    path = write(tmp_path / "odd.csv", "1\tfirst question\tsecond question\tp-1\n0\tthird\tfourth\tp-2\n")
    with pytest.raises(ValueError):
        load(path, tmp_path)
    ds = load(path, tmp_path, format="bimpm")
    check_schema(ds, BASE)
    assert ds["label"][:] == [1, 0]
    # An extension that says nothing: the format flag decides.
    other = write(tmp_path / "pairs.data", "sentence1,sentence2,label\na,b,1\nc,d,0\n")
    assert load(other, tmp_path, format="csv")["question2"][:] == ["b", "d"]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["yes", "No", " YES ", "no"], [1, 0, 1, 0]),
        (["True", "false", "TRUE", "False"], [1, 0, 1, 0]),
        (["duplicate", "not_duplicate", "Duplicate", "NOT_DUPLICATE"], [1, 0, 1, 0]),
        (["DUPLICATE", "non-duplicate", "Non-Duplicate", "non_duplicate"], [1, 0, 0, 0]),
        (["1.0", "0.0", "1", "0"], [1, 0, 1, 0]),
    ],
)
def test_label_variants_in_csv(tmp_path, values, expected):
    body = "".join(f"q{i},p{i},{v}\n" for i, v in enumerate(values))
    ds = load(write(tmp_path / "labels.csv", "question1,question2,is_duplicate\n" + body), tmp_path)
    assert ds["label"][:] == expected


@pytest.mark.parametrize("suffix", [".tsv", ".txt"])
def test_headerless_label_first_tsv(tmp_path, suffix):
    """`label<TAB>text1<TAB>text2` without a header, as many research dumps come; labels as words, any case."""
    body = "Duplicate\tHow do I learn Python?\tBest way to learn Python?\nnon-duplicate\tWhy is the sky blue?\tHow do I cook rice?\n"
    body += "TRUE\tA cat\tA kitten\nfalse\tQ 1\tQ 2\n1\tsame\tthe same\n"
    ds = load(write(tmp_path / f"dump{suffix}", body), tmp_path, deduplicate=False)
    assert ds.column_names == BASE
    assert ds["label"][:] == [1, 0, 1, 0, 1]
    assert ds["question1"][:2] == ["How do I learn Python?", "Why is the sky blue?"]
    assert ds["question2"][4] == "the same"


def test_label_first_tsv_with_an_unknown_label_names_it(tmp_path):
    path = write(tmp_path / "dump.tsv", "duplicate\ta\tb\nmaybe\tc\td\n")
    with pytest.raises(ValueError, match=r"invalid label 'maybe' in data row 2 .*duplicate/non-duplicate"):
        load(path, tmp_path)


def test_a_three_column_header_is_not_taken_for_a_label_first_row(tmp_path):
    path = write(tmp_path / "pairs.tsv", "label\ttext1\ttext2\n1\ta\tb\n0\tc\td\n")
    ds = load(path, tmp_path)
    assert ds["label"][:] == [1, 0] and ds["question1"][:] == ["a", "c"]


def test_label_variants_in_json(tmp_path):
    rows = [{"sentence1": f"a{i}", "sentence2": f"b{i}", "label": v} for i, v in enumerate([True, False, True])]
    path = write(tmp_path / "bools.json", json.dumps(rows))  # a JSON array, not JSON lines
    assert load(path, tmp_path)["label"][:] == [1, 0, 1]


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------
def test_missing_file(tmp_path):
    missing = str(tmp_path / "nope.tsv")
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        load(missing, tmp_path)
    with pytest.raises(FileNotFoundError):
        load("data/not-here.csv", tmp_path)  # looks like a path, never a Hub id


def test_unknown_format_and_extension(tmp_path):
    path = write(tmp_path / "pairs.tsv", "question1\tquestion2\tis_duplicate\na\tb\t1\n")
    with pytest.raises(ValueError, match="unknown pair format 'xlsx'") as info:
        load(path, tmp_path, format="xlsx")
    assert all(name in str(info.value) for name in PAIR_FORMATS)
    odd = write(tmp_path / "pairs.xlsx", "whatever")
    with pytest.raises(ValueError, match="cannot detect") as info:
        load(odd, tmp_path)
    assert "pairs.xlsx" in str(info.value) and "parquet" in str(info.value)


def test_missing_columns_names_them(tmp_path):
    path = write(tmp_path / "cols.csv", "first,second,target\na,b,1\n")
    with pytest.raises(ValueError) as info:
        load(path, tmp_path)
    message = str(info.value)
    assert "cols.csv" in message and "question1" in message and "'first'" in message and "question1_column" in message
    with pytest.raises(ValueError, match=r"missing column\(s\) \['nope'\]"):
        load(path, tmp_path, question1_column="first", question2_column="second", label_column="nope")


@pytest.mark.parametrize("bad", ["2", "maybe"])
def test_bad_label_names_row_and_value(tmp_path, bad):
    path = write(tmp_path / "bad.csv", f"question1,question2,is_duplicate\na,b,1\nc,d,0\ne,f,{bad}\ng,h,1\n")
    with pytest.raises(ValueError, match=rf"bad\.csv.*'{bad}'.*row 3"):
        load(path, tmp_path)


def test_bad_label_row_counts_dropped_rows_too(tmp_path):
    # The row number is the file's data row, even when an earlier row has an empty question.
    rows = ["1\t\tx\t1", "0\ta\tb\t2", "5\tc\td\t3"]
    path = write(tmp_path / "bimpm.tsv", "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match="row 3"):
        load(path, tmp_path, format="bimpm")


def test_binary_files_are_rejected(tmp_path):
    blob = bytes(range(256)) * 4
    path = tmp_path / "blob.csv"
    path.write_bytes(blob)
    with pytest.raises(ValueError, match=r"blob\.csv.*not a text file"):
        load(str(path), tmp_path)
    empty = write(tmp_path / "empty.tsv", "")
    with pytest.raises(ValueError, match=r"empty\.tsv is empty"):
        load(empty, tmp_path)
    fake = tmp_path / "fake.parquet"
    fake.write_bytes(b"this is not parquet at all")
    with pytest.raises(ValueError, match=r"fake\.parquet"):
        load(str(fake), tmp_path)


@pytest.mark.parametrize("bad_line", [1, 2])
def test_rows_with_extra_fields_are_an_error(tmp_path, bad_line):
    rows = ["a\tb\t1", "c\td\t0"]
    rows[bad_line - 1] += "\textra"
    path = write(tmp_path / "ragged.tsv", "question1\tquestion2\tis_duplicate\n" + "\n".join(rows) + "\n")
    # pandas words the first data row's extra field as a ParserWarning (no line number), a later row's with its line.
    message = r"cannot parse .*ragged\.tsv" if bad_line == 1 else r"ragged\.tsv: line 3 has 4 fields, expected 3"
    with pytest.raises(ValueError, match=message):
        load(path, tmp_path)


def test_numeric_text_column_is_rejected(tmp_path):
    header = "id,qid1,qid2,question1,question2,is_duplicate\n"
    path = write(tmp_path / "ids.csv", header + "0,11,12,a?,b?,1\n1,13,14,c?,d?,0\n")
    with pytest.raises(ValueError, match="'qid1'.*numbers"):
        load(path, tmp_path, question1_column="qid1")
    rows = [{"question1": 5, "question2": "text", "label": 1}]
    json_path = write(tmp_path / "num.jsonl", json.dumps(rows[0]) + "\n")
    with pytest.raises(ValueError, match="'question1'.*numbers"):
        load(json_path, tmp_path)


def test_empty_questions_dropped_with_warning(tmp_path):
    path = write(
        tmp_path / "holes.csv",
        'question1,question2,is_duplicate\nok one,ok two,1\n,empty first,0\n"   ",blank first,1\n'
        "fine,   ,0\nlast,pair,0\n",
    )
    with pytest.warns(UserWarning, match=r"dropped 3 of 5 row\(s\) from .*holes\.csv"):
        ds = load(path, tmp_path)
    assert ds["question1"][:] == ["ok one", "last"]
    rows = [{"question1": None, "question2": "x", "label": 1}, {"question1": "y", "question2": "z", "label": 0}]
    json_path = write(tmp_path / "nulls.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    with pytest.warns(UserWarning, match="dropped 1 of 2"):
        assert len(load(json_path, tmp_path)) == 1


def test_dropped_rows_are_located(tmp_path):
    rows = [f"q{i},p{i},1" for i in range(9)] + [",empty first,0", "empty second,  ,0"] + [",a,1"] * 6
    path = write(tmp_path / "holes.csv", "\n".join(["question1,question2,is_duplicate", *rows]) + "\n")
    with pytest.warns(UserWarning, match=r"\(data rows 10, 11, 12, 13, 14 and 3 more, header not counted\)"):
        load(path, tmp_path)


def test_no_warning_when_nothing_dropped(tmp_path):
    path = write(tmp_path / "clean.csv", "question1,question2,is_duplicate\na,b,1\nNA,null,0\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = load(path, tmp_path)
    assert not [w for w in caught if "dropped" in str(w.message)]
    assert ds["question1"][:] == ["a", "NA"]  # "NA"/"null" are text, not missing values


def test_empty_question_id_is_an_error(tmp_path):
    path = write(tmp_path / "noid.csv", "qid1,qid2,question1,question2,is_duplicate\n1,2,a,b,1\n,4,c,d,0\n")
    with pytest.raises(ValueError, match="'qid1' has 1 empty"):
        load(path, tmp_path)


def test_all_rows_empty_is_an_error(tmp_path):
    path = write(tmp_path / "void.csv", 'question1,question2,is_duplicate\n,x,1\n"  ",y,0\n')
    with pytest.raises(ValueError, match=r"void\.csv.*no pairs left"):
        load(path, tmp_path)


# --------------------------------------------------------------------------------------------
# Hub
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variable", ["HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"])
def test_hub_name_offline_fails_fast(tmp_path, monkeypatch, variable):
    """Fast: no connection attempt (no network timeout to wait for) and no sleep (no retry back-off)."""
    monkeypatch.setenv(variable, "1")
    attempts = refuse_network(monkeypatch, waits=True)
    with pytest.raises(ValueError, match="offline") as info:
        load("someone/some-pairs", tmp_path)
    assert attempts == []
    assert isinstance(info.value, ConnectionError) and "local file" in str(info.value)


def test_hub_loading_resolves_columns(tmp_path, monkeypatch):
    hub = datasets.Dataset.from_dict({"question1": ["a", "b"], "question2": ["c", "d"], "label": [0, 1], "idx": [0, 1]})
    calls = []

    def fake_load_dataset(name, config=None, *, split, cache_dir):
        calls.append((name, config, split))
        return hub

    monkeypatch.setattr(readers_module, "hub_offline", lambda: False)
    monkeypatch.setattr(readers_module.datasets, "load_dataset", fake_load_dataset)
    ds = load("nyu-mll/glue:qqp", tmp_path, split="validation")
    check_schema(ds, BASE)
    assert calls == [("nyu-mll/glue", "qqp", "validation")]
    assert ds["label"][:] == [0, 1]


def test_hub_connection_error_is_reported(tmp_path, monkeypatch):
    def unreachable(*args, **kwargs):
        raise ConnectionError("Failed to resolve 'huggingface.co'")

    monkeypatch.setattr(readers_module, "hub_offline", lambda: False)
    monkeypatch.setattr(readers_module.datasets, "load_dataset", unreachable)
    with pytest.raises(HubUnreachableError, match="unreachable"):
        load("some-dataset", tmp_path)


# --------------------------------------------------------------------------------------------
# Bad input, one test per kind (see also the tests above: binary, empty, numbers as text)
# --------------------------------------------------------------------------------------------
def test_truncated_csv_cut_inside_a_quoted_field(tmp_path):
    path = write(tmp_path / "cut.csv", 'question1,question2,is_duplicate\na,b,1\n"c is cut in the mid')
    with pytest.raises(ValueError, match=r"cut\.csv.*EOF inside string.*row 2.*never closed"):
        load(path, tmp_path)


@pytest.mark.parametrize(
    ("name", "text", "row", "fields", "expected"),
    [
        # BiMPM file whose last line lost its pair id (and maybe part of question2)
        ("cut.tsv", "1\tq one\tq two\t1\n0\tq three\tq fo", 2, 3, 4),
        # a csv row in the middle with two fields of three: pandas would pad it with ""
        ("short.csv", "question1,question2,is_duplicate\na,b,1\nc,d\ne,f,0\n", 2, 2, 3),
        # legitimately empty last fields elsewhere must not hide a short row
        ("holes.csv", "question1,question2,is_duplicate,src\na,b,1,\nc,d,0,x\ne,f\n", 3, 2, 4),
    ],
)
def test_rows_with_fewer_fields_name_the_row(tmp_path, name, text, row, fields, expected):
    path = write(tmp_path / name, text)
    with pytest.raises(ValueError, match=rf"{name}: data row {row} has {fields} field\(s\), expected {expected}"):
        load(path, tmp_path, format="bimpm" if name == "cut.tsv" else None)


def test_empty_last_column_is_not_a_short_row(tmp_path):
    path = write(tmp_path / "ok.csv", "question1,question2,is_duplicate,src\na,b,1,\nc,d,0,x\n")
    assert load(path, tmp_path)["label"][:] == [1, 0]


@pytest.mark.parametrize(
    ("values", "expected"),
    [([1, "yes", 0.0, True, "0", False], [1, 1, 0, 1, 0, 0]), ([1, "yes", 0.0, "maybe"], None)],
)
def test_mixed_label_types_in_one_json_column(tmp_path, values, expected):
    # datasets reads a JSON column mixing numbers, strings and booleans as Arrow's JSON type.
    rows = [{"question1": f"a{i}", "question2": f"b{i}", "label": v} for i, v in enumerate(values)]
    path = write(tmp_path / "mixed.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    if expected is None:
        with pytest.raises(ValueError, match=r"mixed\.jsonl: invalid label 'maybe' in data row 4 \(column 'label'\)"):
            load(path, tmp_path)
    else:
        assert load(path, tmp_path)["label"][:] == expected


def test_mixed_label_types_in_one_csv_column(tmp_path):
    body = "a,b,1\nc,d,yes\ne,f,0.0\ng,h,maybe\n"
    path = write(tmp_path / "mixed.csv", "question1,question2,is_duplicate\n" + body)
    with pytest.raises(ValueError, match=r"mixed\.csv: invalid label 'maybe' in data row 4"):
        load(path, tmp_path)


def test_mixed_types_in_a_json_question_column(tmp_path):
    rows = [{"question1": "text", "question2": "x", "label": 1}, {"question1": 5, "question2": "y", "label": 0}]
    path = write(tmp_path / "q.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"q\.jsonl: column 'question1' mixes JSON value types"):
        load(path, tmp_path)


@pytest.mark.parametrize(
    ("name", "text", "hint"),
    [
        ("semi.csv", "question1;question2;is_duplicate\na;b;1\n", "looks ';'-separated, not ','-separated"),
        (
            "commas.tsv",
            "question1,question2,is_duplicate\na,b,1\n",
            "looks ','-separated, not tab-separated; pass format='csv'",
        ),
        ("tabs.txt", "question1\tquestion2\tis_duplicate\na\tb\t1\n", None),  # .txt: sniffed, reads fine
    ],
)
def test_wrong_delimiter(tmp_path, name, text, hint):
    path = write(tmp_path / name, text)
    if hint is None:
        assert load(path, tmp_path)["question2"][:] == ["b"]
        return
    with pytest.raises(ValueError, match="missing column") as info:
        load(path, tmp_path)
    assert name in str(info.value) and hint in str(info.value)


@pytest.mark.parametrize("name", ["header.csv", "header.tsv"])
def test_header_only(tmp_path, name):
    sep = "," if name.endswith("csv") else "\t"
    path = write(tmp_path / name, sep.join(["question1", "question2", "is_duplicate"]) + "\n\n")
    with pytest.raises(ValueError, match=rf"{name} has a header .* but no data rows"):
        load(path, tmp_path)


def test_json_and_parquet_without_rows(tmp_path):
    empty = write(tmp_path / "empty.jsonl", "\n")
    with pytest.raises(ValueError, match=r"empty\.jsonl is empty"):
        load(empty, tmp_path)
    table = pa.table(
        {
            "question1": pa.array([], pa.string()),
            "question2": pa.array([], pa.string()),
            "label": pa.array([], pa.int64()),
        }
    )
    path = tmp_path / "none.parquet"
    pq.write_table(table, path)
    with pytest.raises(ValueError, match=r"none\.parquet has no data rows"):
        load(str(path), tmp_path)


@pytest.mark.parametrize("where", ["first line", "deep"])
def test_non_utf8_bytes_name_file_offset_and_line(tmp_path, where):
    # Decision: an error (never silent replacement), naming the byte offset and line of the
    # first invalid byte, so the file can be fixed (re-encoded) rather than trained on mojibake.
    header = b"question1,question2,is_duplicate\n"
    body = b"a,b,1\n" * (30_000 if where == "deep" else 0)  # past the 64 KiB the sniffer reads
    bad = b"caf\xe9 ?,cafe ?,1\n"
    data = (header + body + bad) if where == "deep" else (b"caf\xe9,x,label\n" + b"a,b,1\n")
    path = tmp_path / "latin1.csv"
    path.write_bytes(data)
    offset = data.index(b"\xe9")
    line = data[:offset].count(b"\n") + 1
    with pytest.raises(ValueError, match=rf"latin1\.csv is not UTF-8 text.*byte offset {offset} \(line {line}\)"):
        load(str(path), tmp_path)


@pytest.mark.parametrize("fmt", ["bimpm", "csv"])
def test_very_long_question_loads_whole(tmp_path, fmt):
    long_question = "word " * 20_000 + "end ?"  # 100,005 characters, longer than the sniffed block
    if fmt == "bimpm":
        text = f"1\t{long_question}\tshort ?\t1\n0\tsecond\tpair\t2\n"
        path = write(tmp_path / "long.tsv", text)
    else:
        text = f'question1,question2,is_duplicate\n"{long_question}",short ?,1\nsecond,pair,0\n'
        path = write(tmp_path / "long.csv", text)
    ds = load(path, tmp_path)
    assert len(ds) == 2 and ds["question1"][0] == long_question.strip() and len(ds["question1"][0]) > 100_000


def test_non_utf8_bytes_inside_a_json_string(tmp_path):
    # The json reader keeps invalid UTF-8 inside strings; the error still names file and offset.
    good = b'{"question1": "a", "question2": "x", "label": 1}\n' * 3000
    data = good + b'{"question1": "caf\xe9", "question2": "x", "label": 1}\n'
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(data)
    offset = data.index(b"\xe9")
    with pytest.raises(ValueError, match=rf"latin1\.jsonl is not UTF-8 text.*byte offset {offset} \(line 3001\)"):
        load(str(path), tmp_path)
    with pytest.raises(ValueError, match=rf"byte offset {offset} \(line 3001\)"):
        list(load_pairs(str(path), streaming=True))


def invalid_utf8_chunk() -> pa.Array:
    """A text chunk no Arrow string function can read: a check that reaches it fails."""
    return pa.Array.from_buffers(
        pa.string(), 1, [None, pa.py_buffer(bytes([0, 0, 0, 0, 2, 0, 0, 0])), pa.py_buffer(b"\xff\xfe")]
    )


def test_the_numbers_only_check_reads_up_to_the_first_question_chunk_by_chunk():
    from hfsiamese.data.source_columns import check_not_all_numbers

    # a whole column's trimmed copy was gigabytes at 40M pairs: the check now stops at the first question
    check_not_all_numbers(pa.chunked_array([pa.array(["12", "What is x?"]), invalid_utf8_chunk()]), "q", "f.csv")
    check_not_all_numbers(pa.chunked_array([pa.array(["12", " 7 "]), pa.array(["why?"])]), "q", "f.csv")
    with pytest.raises(ValueError, match="column 'q' holds numbers only"):
        check_not_all_numbers(pa.chunked_array([pa.array(["12", " 7 ", None]), pa.array(["3.5", ""])]), "q", "f.csv")


def test_dropped_rows_are_located_batch_by_batch_up_to_the_first_five():
    from hfsiamese.data.pair_loading import _empty_rows, _PairRows

    def batch(first: list[str]) -> pa.RecordBatch:
        return pa.record_batch({"q1": first, "q2": ["x"] * len(first)})

    table = pa.Table.from_batches([batch(["a", "", "b"]), batch([" ", "c", "", ""]), batch(["", "d"])])
    table = pa.concat_tables([table, pa.table({"q1": invalid_utf8_chunk(), "q2": ["x"]})])  # never read
    rows = _PairRows({"question1": "q1", "question2": "q2"}, "f.csv", None)
    where = _empty_rows(datasets.Dataset(table), rows, dropped=9)
    assert where == "data rows 2, 4, 6, 7, 8 and 4 more, header not counted"
