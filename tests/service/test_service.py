"""`DuplicateService`, the operations behind the routes, in-process on an index kept in a folder."""

from __future__ import annotations

import pytest

from hfsiamese import SiameseModel
from hfsiamese.search import DuplicateIndex
from hfsiamese.service.service import CheckItem, DuplicateService, IdConflict, SearchItem, UnknownId, verdict
from tests.conftest import TEXTS
from tests.helpers import onnx_thread_spinning


@pytest.fixture
def folder_service(tmp_path, model_dir, word_tokenizer):
    model = SiameseModel.from_pretrained(model_dir)
    index = DuplicateIndex.build(TEXTS, model, word_tokenizer)
    index.find_groups()
    index.save(tmp_path / "index")
    return DuplicateService(index, str(tmp_path / "index"))


def test_verdicts():
    assert verdict([True, False]) == "duplicate" and verdict([False, False]) == "new"
    assert verdict([None]) == "unknown" and verdict([]) == "unknown"


def test_a_batch_of_several_ks_answers_each_request_with_its_own(folder_service):
    answers = folder_service.search(
        [SearchItem([TEXTS[0]], 1), SearchItem([TEXTS[3], TEXTS[5]], 3), SearchItem([TEXTS[6]], 1)]
    )
    assert [len(answer) for answer in answers] == [1, 2, 1]
    assert [len(result["matches"]) for answer in answers for result in answer] == [1, 3, 3, 1]
    assert [answer[0]["matches"][0]["id"] for answer in answers] == [0, 3, 6]
    assert answers[1][1]["query"] == TEXTS[5] and answers[1][1]["matches"][0]["id"] == 5
    first = answers[0][0]["matches"][0]
    assert first["probability"] == pytest.approx(0.9933, abs=1e-3) and "group" in first
    assert first["canonical_text"] == TEXTS[first["canonical_id"]]


def test_writes_are_saved_to_the_folder_with_their_groups(folder_service, tmp_path, model_dir):
    (assigned,) = folder_service.add(["how do i cook brown rice ?"], [42], None)
    assert assigned["id"] == 42 and isinstance(assigned["group"], int)
    with pytest.raises(IdConflict, match=r"ids already in the index: \[42\]"):
        folder_service.add(["again"], [42], None)
    reloaded = DuplicateIndex.load(tmp_path / "index", SiameseModel.from_pretrained(model_dir))
    assert 42 in reloaded.ids and reloaded.groups.group_of(42) == assigned["group"]
    assert folder_service.delete([42, 4242]) == 1
    assert 42 not in DuplicateIndex.load(tmp_path / "index").ids


def test_groups_and_ids_read_from_urls(folder_service):
    group = folder_service.group_of(folder_service.id_of("0"))
    assert 0 in [member["id"] for member in group["members"]] and group["size"] == len(group["members"])
    largest = folder_service.largest_groups(2)
    assert largest["num_groups"] == len(folder_service.index.groups) and len(largest["groups"]) <= 2
    with pytest.raises(UnknownId, match="ids are integers"):
        folder_service.id_of("abc")
    with pytest.raises(UnknownId, match="no group 999"):
        folder_service.group(999)


def test_an_index_without_groups_says_how_to_get_them(tmp_path, model_dir, word_tokenizer):
    index = DuplicateIndex.build(TEXTS, SiameseModel.from_pretrained(model_dir), word_tokenizer)
    service = DuplicateService(index)
    with pytest.raises(UnknownId, match="--find_groups"):
        service.largest_groups(3)
    assert service.add(["a new question ?"], [100], None) == [{"id": 100}]  # stored, not grouped
    assert "group" not in service.search([SearchItem([TEXTS[0]], 1)])[0][0]["matches"][0]


def test_a_cross_encoder_reranks_searches_and_decides_pairs(folder_service, tiny_cross_encoder):
    service = DuplicateService(folder_service.index, cross_encoder=tiny_cross_encoder, rerank_k=4)
    (result,) = service.search([SearchItem([TEXTS[1]], 2)])[0]
    assert len(result["matches"]) == 2 and all("retrieval_score" in m for m in result["matches"])
    assert all("probability" not in m for m in result["matches"])  # the cosine's calibration does not apply
    pairs = [(TEXTS[0], TEXTS[1]), (TEXTS[2], TEXTS[7])]
    checked = service.check([CheckItem([pairs[0][0]], [pairs[0][1]]), CheckItem([pairs[1][0]], [pairs[1][1]])])
    expected = tiny_cross_encoder.predict([a for a, _ in pairs], [b for _, b in pairs], threshold=0.0)["scores"]
    assert [answer[0]["score"] for answer in checked] == pytest.approx(expected.tolist(), abs=1e-5)


@pytest.mark.slow
def test_an_onnx_model_and_cross_encoder_are_served_without_thread_spinning(
    tmp_path, model_dir, word_tokenizer, tiny_cross_encoder
):
    from transformers import HfArgumentParser

    from hfsiamese.bi_encoder.onnx_export import export_onnx
    from hfsiamese.cli.serve import ServeArguments, settings_of
    from hfsiamese.cross_encoder.onnx_export import export_cross_encoder_onnx
    from hfsiamese.service.settings import ServeSettings

    model = SiameseModel.from_pretrained(model_dir)
    export_onnx(model, word_tokenizer, tmp_path / "onnx")
    export_cross_encoder_onnx(tiny_cross_encoder, tmp_path / "cross_onnx")
    DuplicateIndex.build(TEXTS, model, word_tokenizer).save(tmp_path / "index")
    where = {"index_dir": str(tmp_path / "index"), "model_name_or_path": str(tmp_path / "onnx")}
    service = DuplicateService.open(ServeSettings(**where, cross_encoder=str(tmp_path / "cross_onnx")))
    assert (
        onnx_thread_spinning(service.index.model.session) == "0"
        and onnx_thread_spinning(service.cross_encoder.model.session) == "0"
    )
    assert len(service.search([SearchItem([TEXTS[0]], 1)])[0][0]["matches"]) == 1  # reranked by the cross-encoder
    spinning = DuplicateService.open(ServeSettings(**where, onnx_thread_spinning=True))
    assert onnx_thread_spinning(spinning.index.model.session) == "default"
    assert spinning.search([SearchItem([TEXTS[0]], 1)])[0][0]["matches"][0]["text"] == TEXTS[0]
    flags = ["--index_dir", where["index_dir"], "--model_name_or_path", where["model_name_or_path"]]
    parser = HfArgumentParser(ServeArguments)
    assert not settings_of(parser.parse_args_into_dataclasses(flags)[0]).onnx_thread_spinning
    on = parser.parse_args_into_dataclasses([*flags, "--onnx_thread_spinning"])[0]
    assert settings_of(on).onnx_thread_spinning


def test_each_request_of_a_batch_is_searched_with_its_own_filter(tmp_path, model_dir, word_tokenizer):
    model = SiameseModel.from_pretrained(model_dir)
    sites = [{"site": "a" if number % 2 == 0 else "b"} for number in range(len(TEXTS))]
    index = DuplicateIndex.build(
        TEXTS, model, word_tokenizer, ids=list(range(len(TEXTS))), store="lancedb", database=tmp_path / "db",
        metadata=sites,
    )  # fmt: skip
    service = DuplicateService(index)
    items = [
        SearchItem([TEXTS[1]], 3, {"site": "a"}),
        SearchItem([TEXTS[1]], 3),
        SearchItem([TEXTS[1], TEXTS[2]], 2, {"site": ["b"]}),
        SearchItem([TEXTS[1]], 1, {"site": "a"}),
    ]
    answers = service.search(items)
    ids = [[[m["id"] for m in result["matches"]] for result in answer] for answer in answers]
    assert all(i % 2 == 0 for i in ids[0][0]) and len(ids[0][0]) == 3
    assert ids[1][0][0] == 1  # unfiltered: the query's own text first
    assert all(i % 2 == 1 for result in ids[2] for i in result) and [len(r) for r in ids[2]] == [2, 2]
    assert ids[3][0] == ids[0][0][:1]  # the same filter at a smaller k: cut from the same search
    with pytest.raises(ValueError, match="not a field name"):
        service.check_filter({"bad field": "a"})
    with pytest.raises(TypeError, match="float"):
        service.check_filter({"site": 1.5})
    index.close()


def test_a_filter_on_an_index_without_metadata_is_refused_before_searching(folder_service):
    with pytest.raises(ValueError, match="needs a database store"):
        folder_service.check_filter({"site": "a"})
    folder_service.check_filter(None)
