"""The cross-encoder guard (`hfsiamese.search.groups.cross_encoder_guard`): on the constructed chain of
`group_vectors`, a bridge the cross-encoder rejects is cut and one it accepts is kept; its call budget holds; a rebuild
and incremental assignment agree; groups saved before it still load."""

from __future__ import annotations

import pytest
import torch

from hfsiamese.search import DuplicateIndex
from hfsiamese.search.groups import GroupSettings
from hfsiamese.search.groups.cross_encoder_guard import LinkJudge, call_budget
from hfsiamese.search.groups.group_finding import cross_encoder_guard_threshold
from tests.search.group_vectors import THRESHOLD, VectorModel, at_angle, corpus, model
from tests.search.test_groups import assert_same_groups, texts_of

CHAIN = ["chain a", "chain b", "chain c", "chain d"]
ACCEPTS, REJECTS = 0.4, 0.6  # cross-encoder thresholds around the constant score below


@pytest.fixture
def cross_encoder(tiny_cross_encoder):
    """The tiny cross-encoder made to score every pair 0.5: its head reads nothing and its bias is 0."""
    with torch.no_grad():
        tiny_cross_encoder.model.classifier.weight.zero_()
        tiny_cross_encoder.model.classifier.bias.zero_()
    assert tiny_cross_encoder.score_pairs(["a b"], ["c"]).tolist() == pytest.approx([0.5])
    return tiny_cross_encoder


def build(cross_encoder) -> DuplicateIndex:
    return DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, cross_encoder=cross_encoder)


def test_a_bridge_the_cross_encoder_rejects_is_cut(cross_encoder):
    index = build(cross_encoder)
    groups = index.find_groups(guard="cross_encoder", cross_encoder_threshold=REJECTS)
    assert texts_of(index, groups) == texts_of(index, index.find_groups(guard="mean"))
    assert ["chain a", "chain b"] in texts_of(index, groups) and ["chain c", "chain d"] in texts_of(index, groups)
    assert groups.cross_encoder_calls == 1  # only chain c's link to {a, b}: every other link passes the mean guard


def test_a_bridge_the_cross_encoder_accepts_is_kept(cross_encoder):
    index = build(cross_encoder)
    groups = index.find_groups(guard="cross_encoder", cross_encoder_threshold=ACCEPTS)
    assert CHAIN in texts_of(index, groups) and ["python 1", "python 2", "python 3"] in texts_of(index, groups)
    assert groups.cross_encoder_calls == 2  # chain c into {a, b}, chain d into {a, b, c}
    assert groups.settings.cross_encoder_threshold == ACCEPTS


def test_the_call_budget_holds_and_then_the_mean_guard_decides(cross_encoder):
    index = build(cross_encoder)
    one_call = index.find_groups(guard="cross_encoder", cross_encoder_threshold=ACCEPTS, cross_encoder_budget=100)
    assert one_call.cross_encoder_calls == call_budget(100, len(corpus())) == 1
    assert ["chain a", "chain b", "chain c"] in texts_of(index, one_call) and ["chain d"] in texts_of(index, one_call)
    none = index.find_groups(guard="cross_encoder", cross_encoder_threshold=ACCEPTS, cross_encoder_budget=0)
    assert none.cross_encoder_calls == 0
    assert texts_of(index, none) == texts_of(index, index.find_groups(guard="mean"))


def test_a_group_of_check_size_members_has_each_new_member_checked(cross_encoder):
    index = build(cross_encoder)
    groups = index.find_groups(guard="cross_encoder", cross_encoder_threshold=REJECTS, check_size=2)
    assert ["python 1", "python 2"] in texts_of(index, groups) and ["python 3"] in texts_of(index, groups)


@pytest.mark.parametrize("decision", [ACCEPTS, REJECTS])
@pytest.mark.parametrize("batch", [1, 3])
def test_incremental_assignment_equals_a_rebuild(cross_encoder, decision, batch):
    rebuilt = build(cross_encoder).find_groups(guard="cross_encoder", cross_encoder_threshold=decision)
    index = DuplicateIndex(model(), threshold=THRESHOLD, cross_encoder=cross_encoder)
    index.add(corpus()[:batch], assign_groups=True)  # no duplicates among the first three
    index.groups.settings = rebuilt.settings  # the same rule as the rebuild
    texts = corpus()
    for start in range(batch, len(texts), batch):
        index.add(texts[start : start + batch], assign_groups=True)
    assert_same_groups(index.groups, rebuilt)
    assert index.groups.cross_encoder_calls == rebuilt.cross_encoder_calls


def test_a_deleted_canonical_regroups_by_the_cross_encoder(cross_encoder):
    index = build(cross_encoder)
    index.find_groups(guard="cross_encoder", cross_encoder_threshold=ACCEPTS)
    index.delete([1])  # chain a, the canonical of the whole chain
    assert ["chain b", "chain c", "chain d"] in texts_of(index, index.groups)  # d's bridge to {b, c} accepted again


def test_the_guard_needs_a_cross_encoder_and_its_threshold(cross_encoder):
    index = DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD)
    with pytest.raises(ValueError, match=r"guard='cross_encoder' needs a cross-encoder: pass cross_encoder="):
        index.find_groups(guard="cross_encoder")
    with pytest.raises(ValueError, match=r"pass cross_encoder_threshold=\.\.\."):
        index.find_groups(guard="cross_encoder", cross_encoder=cross_encoder)  # the tiny one is not calibrated
    with pytest.raises(ValueError, match=r"cross_encoder_budget \(calls per 1,000 questions\) must be 0 or more"):
        index.find_groups(guard="cross_encoder", cross_encoder=cross_encoder, cross_encoder_threshold=0.5,
                          cross_encoder_budget=-1)  # fmt: skip


def test_the_guards_own_settings_are_checked_without_an_index(cross_encoder):
    # what `hfsiamese groups` asks before the corpus is read (it once passed a placeholder pair cosine of 0.0)
    with pytest.raises(ValueError, match=r"guard='cross_encoder' needs a cross-encoder"):
        cross_encoder_guard_threshold(None, 0.5, 10.0, None)
    with pytest.raises(ValueError, match=r"pass cross_encoder_threshold=\.\.\."):
        cross_encoder_guard_threshold(cross_encoder, None, 10.0, None)  # not calibrated
    with pytest.raises(ValueError, match="check_size must be an integer of at least 2"):
        cross_encoder_guard_threshold(cross_encoder, 0.5, 10.0, 1)
    assert cross_encoder_guard_threshold(cross_encoder, 0.5, 10.0, None) == 0.5
    cross_encoder.config.threshold = 0.7
    assert cross_encoder_guard_threshold(cross_encoder, None, 0.0, 2) == 0.7  # its calibrated one


def test_assigning_without_the_cross_encoder_is_refused_before_any_row_is_written(cross_encoder, tmp_path):
    index = build(cross_encoder)
    index.find_groups(guard="cross_encoder", cross_encoder_threshold=ACCEPTS)
    index.save(tmp_path / "index")
    loaded = DuplicateIndex.load(tmp_path / "index", model())
    assert loaded.groups.settings == index.groups.settings  # the guard's options saved with the groups
    with pytest.raises(ValueError, match=r"found with guard='cross_encoder': open the index with cross_encoder="):
        loaded.add(["python 9"], assign_groups=True)
    assert len(loaded) == len(corpus())


def test_settings_of_groups_saved_before_the_guard_still_load():
    saved = {"threshold": 0.8, "guard": "mean", "canonical": "earliest", "k": 10}  # an earlier release's
    settings = GroupSettings.from_dict(saved)
    assert settings == GroupSettings(0.8, "mean", "earliest", 10) and settings.check_size is None


def test_the_judge_scores_in_batches_within_its_budget(cross_encoder):
    texts = {key: f"question {key}" for key in range(10)}
    judge = LinkJudge(cross_encoder, ACCEPTS, 3, lambda keys: [texts[key] for key in keys], batch_size=2)
    judge.deferring = True
    assert [judge.accepts(key, 0) for key in range(1, 5)] == [None] * 4  # noted, not scored
    assert judge.score_deferred() == 3 and judge.calls == 3
    judge.deferring = False
    assert [judge.accepts(key, 0) for key in range(1, 5)] == [True, True, True, None]  # the fourth: no budget left
    assert judge.calls == 3


def test_a_delete_without_the_cross_encoder_regroups_by_the_mean_guard_and_says_so(cross_encoder, tmp_path, caplog):
    index = build(cross_encoder)
    index.find_groups(guard="cross_encoder", cross_encoder_threshold=ACCEPTS)
    index.save(tmp_path / "index")
    loaded = DuplicateIndex.load(tmp_path / "index", model())
    with caplog.at_level("WARNING"):
        loaded.delete([1])  # chain a, the canonical of the whole chain
    assert "the mean guard decides its borderline links" in caplog.text
    assert ["chain b", "chain c"] in texts_of(loaded, loaded.groups) and ["chain d"] in texts_of(loaded, loaded.groups)


def test_the_questions_of_one_add_have_their_borderline_links_scored_in_one_batch(cross_encoder, monkeypatch):
    index = build(cross_encoder)
    index.find_groups(guard="cross_encoder", cross_encoder_threshold=ACCEPTS, cross_encoder_budget=1000)  # 1 a question
    index.model.vectors.update({"chain e": at_angle(140), "chain e2": at_angle(141)})  # both past chain d
    batches = []
    score_pairs = cross_encoder.score_pairs
    monkeypatch.setattr(
        cross_encoder, "score_pairs", lambda a, b, **kw: batches.append(len(a)) or score_pairs(a, b, **kw)
    )
    joined = index.add(["chain e", "chain e2"], assign_groups=True)
    # The rebuild's two; then the links known before placing (each one's to chain d) in one batch of two, and chain
    # e2's link to chain e, its nearest duplicate, once chain e is placed: it could not be known before.
    assert batches == [2, 1] and index.groups.cross_encoder_calls == 2 + 3
    assert {row["group"] for row in joined} == {index.groups.group_of(1)}  # both kept with the chain


# Two questions 40° apart (cosine 0.77): below the pair threshold, within 0.1 of it.
NEAR = {"near 1": at_angle(0, axes=(2, 7)), "near 2": at_angle(40, axes=(2, 7))}


def near_model() -> VectorModel:
    return VectorModel({**model().vectors, **NEAR})


def build_with_near_pair(cross_encoder) -> DuplicateIndex:
    return DuplicateIndex.build(corpus() + list(NEAR), near_model(), threshold=THRESHOLD, cross_encoder=cross_encoder)


@pytest.mark.parametrize(("decision", "joined"), [(ACCEPTS, True), (REJECTS, False)])
def test_links_below_the_bar_are_the_cross_encoders_to_decide(cross_encoder, decision, joined):
    """Links found down to a threshold under the guard's bar (`threshold` < `group_threshold`) are ones the bar
    refuses: the cross-encoder decides each (what lifted the LSTM's groups to its pairs on validation); the mean guard
    with the same settings refuses them, and the links above the bar group as before."""
    index = build_with_near_pair(cross_encoder)
    options = dict(threshold=THRESHOLD - 0.1, group_threshold=THRESHOLD, cross_encoder_threshold=decision)
    groups = index.find_groups(guard="cross_encoder", **options)
    assert (["near 1", "near 2"] in texts_of(index, groups)) is joined
    # The near pair and chain c into {a, b}; chain d into {a, b, c} where c joined (else into {c}, which it passes).
    assert groups.cross_encoder_calls == (3 if joined else 2)
    by_mean = index.find_groups(guard="mean", threshold=THRESHOLD - 0.1, group_threshold=THRESHOLD)
    assert ["near 1"] in texts_of(index, by_mean) and ["near 2"] in texts_of(index, by_mean)
    above = index.find_groups(guard="cross_encoder", cross_encoder_threshold=decision)
    assert [g for g in texts_of(index, groups) if "near 1" not in g and "near 2" not in g] == [
        g for g in texts_of(index, above) if "near 1" not in g and "near 2" not in g
    ]


def test_links_below_the_bar_are_assigned_as_a_rebuild_decides_them(cross_encoder):
    options = dict(threshold=THRESHOLD - 0.1, group_threshold=THRESHOLD, cross_encoder_threshold=ACCEPTS)
    rebuilt = build_with_near_pair(cross_encoder).find_groups(guard="cross_encoder", **options)
    index = DuplicateIndex(near_model(), threshold=THRESHOLD, cross_encoder=cross_encoder)
    texts = corpus() + list(NEAR)
    index.add(texts[:1], assign_groups=True)
    index.groups.settings = rebuilt.settings
    for text in texts[1:]:
        index.add([text], assign_groups=True)
    assert_same_groups(index.groups, rebuilt)
