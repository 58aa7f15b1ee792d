"""The bad-file table: files a user hands a command by mistake, each with a part of the one-line error it must get.

`BAD_FILES` are question-pair files (every command that reads pairs); `BAD_LABEL_CELLS` are pair files whose label
cells are NaN, null or empty (every command that reads labels); `BAD_GROUP_FILES` are mined-group files
(`hfsiamese teacher-scores --groups`).
"""

from __future__ import annotations

BAD_FILES: dict[str, tuple[bytes, str]] = {  # name: (content, a part of the message)
    "empty.tsv": (b"", "is empty"),
    "header_only.csv": (b"question1,question2,is_duplicate\n", "has a header"),
    "binary.csv": (bytes(range(256)) * 4, "is not a text file"),
    "invalid_labels.tsv": (
        b"question1\tquestion2\tis_duplicate\na ?\tb ?\t1\nc ?\td ?\tmaybe\n",
        "invalid label 'maybe'",
    ),
    "missing_column.csv": (b"question1,question2\na ?,b ?\nc ?,d ?\n", "missing column(s) ['is_duplicate']"),
    "latin1.csv": (b"question1,question2,is_duplicate\na,b,1\ncaf\xe9 ?,cafe ?,1\n", "is not UTF-8 text"),
    "two_columns.tsv": (
        b"how do i learn python ?\tbest way to learn python ?\nwhy ?\twhy not ?\n",
        "missing column(s)",
    ),
    "unquoted_comma.csv": (
        b'question1,question2,is_duplicate\n"a\nquestion over two lines ?",b ?,1\nhello, world ?,hi world ?,0\n',
        "line 4 has 4 fields, expected 3",  # the physical line: the quoted text above spans two
    ),
}

BAD_LABEL_CELLS: dict[str, tuple[bytes, str]] = {
    "nan_label.csv": (b"question1,question2,is_duplicate\na ?,b ?,1\nc ?,d ?,NaN\n", "label"),
    "empty_label.csv": (b"question1,question2,is_duplicate\na ?,b ?,1\nc ?,d ?,\n", "label"),
    "null_label.jsonl": (
        b'{"question1": "a ?", "question2": "b ?", "is_duplicate": 1}\n'
        b'{"question1": "c ?", "question2": "d ?", "is_duplicate": null}\n',
        "label",
    ),
}

_GROUP = b'{"query": "a ?", "positive": "b ?", "negatives": ["c ?", "d ?"]}\n'
BAD_GROUP_FILES: dict[str, tuple[bytes, str]] = {
    "empty.jsonl": (b"", "is empty"),
    "binary.jsonl": (bytes(range(256)) * 4, "is not a text file"),
    "latin1.jsonl": (_GROUP + b'{"query": "caf\xe9 ?", "positive": "b ?", "negatives": ["c ?"]}\n', "is not UTF-8"),
    "missing_column.jsonl": (b'{"query": "a ?", "negatives": ["c ?"]}\n', "missing column(s) ['positive']"),
    "broken_line.jsonl": (_GROUP + b'{"query": "a ?", "positive": \n', "line 2"),
    "pairs.csv": (b"question1,question2,is_duplicate\na ?,b ?,1\n", ".parquet"),
    "not_parquet.parquet": (b"query,positive,negatives\na ?,b ?,c ?\n", "is not a Parquet file"),
}
