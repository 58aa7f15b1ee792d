"""store_checks: the input checks both database stores share, and that both stores refuse bad input alike."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hfsiamese.search.stores import store_checks
from hfsiamese.search.stores.store_checks import (
    check_filter,
    check_id,
    check_json_dict,
    check_metadata_row,
    check_not_present,
    check_rows,
    id_list,
    show,
)

DIM = 4


def unit_vectors(n: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_ids():
    assert check_id(np.int64(5), "why") == 5 and type(check_id(torch.tensor(5), "why")) is int
    assert check_id("5", "why") == "5" and check_id(-(2**63), "why") == -(2**63)
    with pytest.raises(TypeError, match="ids must be ints or strings, got bool True"):
        check_id(True, "why")
    with pytest.raises(ValueError, match=r"int id 9223372036854775808 does not fit in 64 bits \(why\): use a str id"):
        check_id(2**63, "why")
    assert id_list((1, "a")) == [1, "a"]
    for single in ("a", 1):
        with pytest.raises(TypeError, match="wrap a single id in a list"):
            id_list(single)
    assert show([1, "a"]) == "1, 'a'" and show(list(range(7))) == "0, 1, 2, 3, 4 and 2 more"


def test_rows_come_back_plain_and_normalised():
    ids, texts, vectors, metadata = check_rows(
        [np.int64(1), "1"], ["a", "b"], torch.from_numpy(unit_vectors(2) * 3), None, embedding_dim=DIM, int64_note="x"
    )
    assert ids == [1, "1"] and type(ids[0]) is int and texts == ["a", "b"] and metadata == [{}, {}]
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, unit_vectors(2), atol=1e-6)
    assert check_rows([], [], np.zeros((0, DIM)), None, embedding_dim=DIM, int64_note="x").ids == []


@pytest.mark.parametrize(
    ("ids", "texts", "embeddings", "metadata", "error", "message"),
    [
        ("ab", ["a", "b"], unit_vectors(2), None, TypeError, "ids and texts must be lists"),
        ([1], ["a", "b"], unit_vectors(2), None, ValueError, "1 ids for 2 texts"),
        ([1], [b"a"], unit_vectors(1), None, TypeError, r"texts\[0\] is bytes, not a string"),
        ([1], ["a"], np.ones((1, DIM + 1)), None, ValueError, r"embeddings must have shape \(n, 4\)"),
        ([1], ["a"], np.ones(DIM), None, ValueError, r"embeddings must have shape \(n, 4\)"),
        ([1], ["a"], unit_vectors(2), None, ValueError, "2 embeddings for 1 texts"),
        ([1], ["a"], np.full((1, DIM), np.nan), None, ValueError, "embeddings hold NaN or infinite values"),
        ([1, 2], ["a", "b"], np.eye(2, DIM) * [[1], [0]], None, ValueError, r"embeddings\[1\] is all zeros"),
        ([1], ["a"], unit_vectors(1), [], ValueError, "0 metadata dicts for 1 texts"),
        ([1], ["a"], unit_vectors(1), [[("k", 1)]], TypeError, r"metadata\[0\] is list, not a dict"),
        ([1], ["a"], unit_vectors(1), [{1: "x"}], TypeError, "keys must be non-empty strings"),
        ([1], ["a"], unit_vectors(1), [{"": "x"}], TypeError, "keys must be non-empty strings"),
        ([1], ["a"], unit_vectors(1), [{"score": 1.0}], ValueError, "'score', which the store uses itself"),
        ([1], ["a"], unit_vectors(1), [{"n": float("inf")}], TypeError, r"metadata\[0\]\['n'\] holds float inf"),
        ([1], ["a"], unit_vectors(1), [{"n": [1, 2**64]}], TypeError, "values must be str, int, float, bool or None"),
        ([1.0], ["a"], unit_vectors(1), None, TypeError, "ids must be ints or strings, got float 1.0"),
        ([1, "b", 1, 1], list("abcd"), unit_vectors(4), None, ValueError, "ids repeat within this call: 1; pass"),
    ],
)
def test_bad_rows_are_refused(ids, texts, embeddings, metadata, error, message):
    with pytest.raises(error, match=message):
        check_rows(ids, texts, embeddings, metadata, embedding_dim=DIM, int64_note="x")


def test_metadata_rows_take_the_engine_rule_on_keys():
    def no_dashes(key: str, position: int) -> None:
        if "-" in key:
            raise ValueError(f"metadata[{position}] has key {key!r}: no dashes")

    values = {"ok": [1, "a", None, True, 2.5], "none": None}
    assert check_metadata_row(values, 0, check_key=no_dashes) is values
    with pytest.raises(ValueError, match=r"metadata\[3\] has key 'a-b': no dashes"):
        check_metadata_row({"a-b": 1}, 3, check_key=no_dashes)
    with pytest.raises(ValueError, match="'col', which the store uses itself"):
        check_metadata_row({"col": 1}, 0, reserved=(*store_checks.RESERVED_FIELDS, "col"))
    assert store_checks.RESERVED_FIELDS == ("id", "text", "score")


def test_present_ids_are_named():
    check_not_present([1, 2], [False, False])
    with pytest.raises(ValueError, match=r"2 ids are already in the collection: 1, 'a'; nothing was added"):
        check_not_present([1, 2, "a"], [True, False, True])


def test_filters():
    assert check_filter(None, matches="m") == {} and check_filter({}, matches="m") == {}
    assert check_filter({"a": "x", "b": (1, 2), "c": {True}}, matches="m") == {"a": "x", "b": [1, 2], "c": [True]}
    with pytest.raises(TypeError, match="filter must be a dict"):
        check_filter([("a", 1)], matches="m")
    with pytest.raises(TypeError, match="filter field 1 must be a non-empty string"):
        check_filter({1: "x"}, matches="m")
    with pytest.raises(TypeError, match=r"filter\['a'\] holds float 0.5: only these"):
        check_filter({"a": [1, 0.5]}, matches="only these")

    def no_b(field: str) -> None:
        if field == "b":
            raise ValueError("bad field")

    assert check_filter({"a": 1}, matches="m", check_field=no_b) == {"a": 1}
    with pytest.raises(ValueError, match="bad field"):
        check_filter({"a": 1, "b": 0.5}, matches="m", check_field=no_b)  # the field's rule comes before its values


def test_json_dict():
    assert check_json_dict({"a": (1, 2), "b": {"c": None}}) == {"a": [1, 2], "b": {"c": None}}
    with pytest.raises(TypeError, match="metadata must be a dict, got list"):
        check_json_dict([1])
    with pytest.raises(ValueError, match="plain JSON"):
        check_json_dict({"a": float("nan")})
    with pytest.raises(ValueError, match="plain JSON"):
        check_json_dict({"a": object()})


def _open_store(engine: str, folder):
    if engine == "qdrant":
        from hfsiamese.search.stores.qdrant_store import QdrantStore as Store
    else:
        from hfsiamese.search.stores.lancedb_store import LanceDBStore as Store
    return Store.open(folder / engine, embedding_dim=DIM)


BAD_ADDS = [
    ({"metadata": [{"score": 0.5}]}, ValueError),
    ({"metadata": [{"id": 1}]}, ValueError),
    ({"metadata": [{"n": {"a": 1}}]}, TypeError),
    ({"metadata": [{"n": 1}, {"n": 2}]}, ValueError),
    ({"ids": [2**63]}, ValueError),
    ({"ids": [None]}, TypeError),
    ({"ids": [1, 1], "texts": ["a", "b"], "embeddings": unit_vectors(2)}, ValueError),
    ({"embeddings": np.zeros((1, DIM))}, ValueError),
    ({"embeddings": np.ones((1, DIM + 1))}, ValueError),
    ({"texts": [None]}, TypeError),
]


@pytest.mark.parametrize("engine", ["qdrant", "lancedb"])
def test_both_stores_refuse_bad_input_before_writing(engine, tmp_path):
    with _open_store(engine, tmp_path) as store:
        for bad, error in BAD_ADDS:
            arguments = {"ids": [1], "texts": ["a"], "embeddings": unit_vectors(1), "metadata": None, **bad}
            with pytest.raises(error):
                store.add(**arguments)
        with pytest.raises(ValueError, match="k must be an integer of at least 1, got 0"):
            store.search(unit_vectors(1), k=0)
        with pytest.raises(ValueError, match="batch_size must be a positive integer"):
            store.add([1], ["a"], unit_vectors(1), batch_size=0)
        with pytest.raises(TypeError, match="wrap a single id in a list"):
            store.contains("a")
        assert len(store) == 0


def test_both_stores_say_the_same(tmp_path):
    """The shared checks give one message whichever engine refuses (bar the engine's own reason for int64)."""
    messages = {}
    for engine in ("qdrant", "lancedb"):
        with _open_store(engine, tmp_path) as store:
            said = []
            for bad, error in BAD_ADDS:
                arguments = {"ids": [1], "texts": ["a"], "embeddings": unit_vectors(1), "metadata": None, **bad}
                with pytest.raises(error) as raised:
                    store.add(**arguments)
                message = str(raised.value)
                said.append(message.split(" (", 1)[0] if "64 bits" in message else message)
            messages[engine] = said
    assert messages["qdrant"] == messages["lancedb"]
