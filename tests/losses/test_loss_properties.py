"""
Property-based tests (hypothesis) of all losses: invariances, and the cross-process scaling simulated
in one process for any number of processes, batch size and group layout.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings, strategies as st

from hfsiamese.losses import distributed, get_loss, hard_negative_triplet, multiple_negatives_ranking, triplet

IN_BATCH_CONFIGS = [
    ("hard_negative_triplet", {"margin": 0.3}),
    ("hard_negative_triplet", {"margin": 0.4, "negative_selection": "semi_hard"}),
    ("hard_negative_triplet", {"margin": 0.2, "negative_selection": "hard", "use_mean_negative": False}),
    ("triplet", {"margin": 0.5, "in_batch_negatives": True}),
    ("multiple_negatives_ranking", {"temperature": 0.2}),
    ("multiple_negatives_ranking", {"temperature": 0.2, "symmetric": True}),
]
ALL_CONFIGS = IN_BATCH_CONFIGS + [
    ("triplet", {"margin": 0.3}),
    ("contrastive", {"margin": 0.7}),
    ("online_contrastive", {"margin": 0.7}),
]
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


def _embeddings(seed: int, size: int, dim: int = 5) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    a = F.normalize(torch.randn(size, dim, generator=g, dtype=torch.float64), dim=-1)
    p = F.normalize(a + 0.9 * torch.randn(size, dim, generator=g, dtype=torch.float64), dim=-1)
    n = F.normalize(a + 1.3 * torch.randn(size, dim, generator=g, dtype=torch.float64), dim=-1)
    labels = torch.randint(0, 2, (size,), generator=g)
    return a, p, n, labels


def _inputs(loss_fn, labels, groups, negatives) -> dict:
    inputs = {"group_ids": groups}
    if loss_fn.requires_labels:
        inputs["labels"] = labels
    else:
        inputs["negatives"] = negatives
    return inputs


@contextlib.contextmanager
def simulated_processes(num_processes: int, full: dict[int, torch.Tensor]):
    """
    Run the loss modules as if on one of ``num_processes`` processes, in this one.

    ``gather_with_grad(local)`` returns the full tensor ``local`` was sliced from: one autograd graph
    then routes the gradient of every simulated process's loss to every slice, which is what the
    differentiable all-gather does across processes. Counts are summed over the simulated processes
    by a first pass that records them.
    """
    state = {"rank": 0, "counts": [], "total": None}

    def sum_across(count):
        if state["total"] is None:
            state["counts"].append(count)
            return count
        return state["total"]

    with pytest.MonkeyPatch.context() as monkeypatch:
        for module in (hard_negative_triplet, triplet, multiple_negatives_ranking, distributed):
            monkeypatch.setattr(module, "world_size", lambda: num_processes)
            for name, value in {
                "rank_offset": lambda batch_size: state["rank"] * batch_size,
                "check_equal_batch_sizes": lambda batch_size, device: None,
                "gather_with_grad": lambda tensor: full[id(tensor)],
                "gather": lambda tensor: full[id(tensor)],
            }.items():
                if hasattr(module, name):
                    monkeypatch.setattr(module, name, value)
        monkeypatch.setattr(distributed, "sum_across_processes", sum_across)
        yield state


def _run_processes(loss_fn, num_processes, batch_size, tensors, groups, labels, with_negatives):
    """Mean over simulated processes of the loss, with the counting pass first."""
    a, p, n = tensors
    slices = [slice(r * batch_size, (r + 1) * batch_size) for r in range(num_processes)]
    locals_ = [(a[s], p[s], n[s], groups[s]) for s in slices]
    full = {}
    for la, lp, ln, lg in locals_:
        full.update({id(la): a, id(lp): p, id(ln): n, id(lg): groups})
    with simulated_processes(num_processes, full) as state:
        for counting_pass in (True, False):
            if not counting_pass:
                state["total"] = sum(state["counts"]) if state["counts"] else None
            losses = []
            for r, (la, lp, ln, lg) in enumerate(locals_):
                state["rank"] = r
                losses.append(
                    loss_fn(la, lp, **_inputs(loss_fn, labels[slices[r]], lg, ln if with_negatives else None))
                )
    return sum(losses) / num_processes


@SETTINGS
@given(
    config=st.sampled_from(IN_BATCH_CONFIGS),
    num_processes=st.integers(1, 3),
    batch_size=st.integers(1, 4),
    group_values=st.lists(st.integers(0, 4), min_size=12, max_size=12),
    with_negatives=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_split_over_processes_equals_one_process(config, num_processes, batch_size, group_values, with_negatives, seed):
    """Mean over processes of the loss, and the DDP-averaged gradient, equal one process on the whole batch."""
    size = num_processes * batch_size
    groups = torch.tensor(group_values[:size])
    assume(size >= 2 or with_negatives)
    assume(with_negatives or len(set(group_values[:size])) > 1)
    name, kwargs = config
    tensors = [t.requires_grad_(True) for t in _embeddings(seed, size)[:3]]
    labels = torch.ones(size, dtype=torch.long)
    loss_fn = get_loss(name, **kwargs)
    negatives = tensors[2] if with_negatives else None

    single = loss_fn(tensors[0], tensors[1], group_ids=groups, negatives=negatives)
    expected = torch.autograd.grad(single, tensors, allow_unused=True)
    split = _run_processes(loss_fn, num_processes, batch_size, tensors, groups, labels, with_negatives)
    got = torch.autograd.grad(split, tensors, allow_unused=True)
    assert split.item() == pytest.approx(single.item(), abs=1e-10)
    for g, e in zip(got, expected):
        g = torch.zeros_like(tensors[0]) if g is None else g
        e = torch.zeros_like(tensors[0]) if e is None else e
        torch.testing.assert_close(g, e, atol=1e-10, rtol=0)


@SETTINGS
@given(
    config=st.sampled_from(ALL_CONFIGS),
    size=st.integers(2, 7),
    group_values=st.lists(st.integers(0, 3), min_size=7, max_size=7),
    seed=st.integers(0, 10_000),
    data=st.data(),
)
def test_permuting_the_pairs_changes_nothing(config, size, group_values, seed, data):
    a, p, n, labels = _embeddings(seed, size)
    groups = torch.tensor(group_values[:size])
    assume(len(set(group_values[:size])) > 1)
    order = torch.tensor(data.draw(st.permutations(range(size))))
    loss_fn = get_loss(*config[:1], **config[1])
    output = loss_fn.compute(a, p, **_inputs(loss_fn, labels, groups, n))
    permuted = loss_fn.compute(a[order], p[order], **_inputs(loss_fn, labels[order], groups[order], n[order]))
    assert permuted.loss.item() == pytest.approx(output.loss.item(), abs=1e-10)
    assert permuted.stats_as_floats() == output.stats_as_floats()


@SETTINGS
@given(
    selection=st.sampled_from(["all", "semi_hard", "hard"]),
    margin=st.floats(0.0, 1.0),
    size=st.integers(2, 7),
    group_values=st.lists(st.integers(0, 3), min_size=7, max_size=7),
    with_negatives=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_candidate_classes_partition_the_candidates(selection, margin, size, group_values, with_negatives, seed):
    a, p, n, _ = _embeddings(seed, size)
    groups = torch.tensor(group_values[:size])
    assume(with_negatives or len(set(group_values[:size])) > 1)
    loss_fn = get_loss("hard_negative_triplet", margin=margin, negative_selection=selection)
    output = loss_fn.compute(a, p, group_ids=groups, negatives=n if with_negatives else None)
    loss, stats = output.loss, output.stats_as_floats()
    candidates = int((groups.view(-1, 1) != groups.view(1, -1)).sum()) + (size if with_negatives else 0)
    assert stats["negatives_easy"] + stats["negatives_semi_hard"] + stats["negatives_hard"] == candidates
    used = {"all": candidates, "semi_hard": stats["negatives_semi_hard"], "hard": stats["negatives_hard"]}[selection]
    assert stats["negatives_used"] == used
    assert (loss.item() == 0.0) or stats["anchors_used"] > 0
