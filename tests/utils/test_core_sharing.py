"""Core sharing: fewer threads while others use the cores, all again once they are free; off where the user chose."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import torch

from hfsiamese.utils import core_sharing
from hfsiamese.utils.core_sharing import RISE_AFTER, CoreSharing, read_cpu_seconds


class Machine:
    """Counters of a fake 2-core machine: advance the clock with how many cores we and the others keep busy."""

    def __init__(self, threads: int = 2) -> None:
        self.now = self.busy = self.idle = self.own = 0.0
        self.threads = threads
        self.set_calls: list[int] = []

    def run(self, seconds: float, *, ours: float, others: float) -> None:
        self.now += seconds
        self.own += ours * seconds
        self.busy += (ours + others) * seconds
        self.idle += max(0.0, 2 - ours - others) * seconds

    def set_threads(self, count: int) -> None:
        self.threads = count
        self.set_calls.append(count)

    def sharing(self, cores: int = 2, **kwargs) -> CoreSharing:
        return CoreSharing(
            cores=cores, read_cpu=lambda: (self.busy, self.idle), own_cpu=lambda: self.own, clock=lambda: self.now,
            set_threads=self.set_threads, get_threads=lambda: self.threads, **kwargs,
        )  # fmt: skip


def seconds_of(machine: Machine, sharing: CoreSharing, seconds: int, *, others: float) -> list[int]:
    """Step a second at a time, our threads busy, `others` cores used by someone else; the thread count after each."""
    counts = []
    for _ in range(seconds):
        machine.run(1.0, ours=min(machine.threads, 2 - min(others, 1.0)), others=others)
        counts.append(sharing.update())
    return counts


def test_alone_the_threads_stay():
    machine = Machine()
    sharing = machine.sharing()
    assert seconds_of(machine, sharing, 10, others=0.05) == [2] * 10
    assert machine.set_calls == [] and sharing.describe() == "threads unchanged (2)"


def test_another_run_on_the_cores_drops_to_one_thread_at_once_and_back_when_it_ends():
    machine = Machine()
    sharing = machine.sharing()
    assert seconds_of(machine, sharing, 3, others=1.0) == [1, 1, 1]
    # Freed cores must stay free for RISE_AFTER windows before the count rises.
    counts = seconds_of(machine, sharing, RISE_AFTER + 1, others=0.0)
    assert counts == [1] * (RISE_AFTER - 1) + [2, 2]
    assert machine.set_calls == [1, 2]
    assert "→1 at 1.0 s (others used 1.0 cores)" in sharing.describe()


def test_no_decision_inside_a_window():
    machine = Machine()
    sharing = machine.sharing()
    machine.run(0.4, ours=1.0, others=1.0)
    assert sharing.update() == 2  # less than a second of readings
    machine.run(0.7, ours=1.0, others=1.0)
    assert sharing.update() == 1


def test_a_rise_undone_at_once_makes_the_next_one_wait_longer():
    machine = Machine()
    sharing = machine.sharing()
    seconds_of(machine, sharing, 1, others=1.0)
    seconds_of(machine, sharing, RISE_AFTER, others=0.0)  # rises
    assert machine.threads == 2
    seconds_of(machine, sharing, 1, others=1.0)  # taken back at once
    assert machine.threads == 1
    counts = seconds_of(machine, sharing, 2 * RISE_AFTER, others=0.0)
    assert counts.index(2) == 2 * RISE_AFTER - 1


def test_a_light_neighbour_leaves_the_threads():
    machine = Machine()
    assert seconds_of(machine, machine.sharing(), 5, others=0.4) == [2] * 5


def test_restore_puts_back_the_count_it_started_with():
    machine = Machine()
    sharing = machine.sharing()
    seconds_of(machine, sharing, 1, others=1.0)
    sharing.restore()
    assert machine.threads == 2 and machine.set_calls == [1, 2]


def test_one_thread_is_never_touched_nor_read():
    machine = Machine(threads=1)
    sharing = CoreSharing(
        cores=2, read_cpu=lambda: pytest.fail("read with one thread"), own_cpu=lambda: 0.0,
        set_threads=machine.set_threads, get_threads=lambda: 1,
    )  # fmt: skip
    assert not sharing.active and sharing.update() == 1


def test_never_more_than_it_started_with():
    machine = Machine(threads=2)
    sharing = machine.sharing(cores=8)  # 8 cores, a run that chose 2 threads
    seconds_of(machine, sharing, 1, others=7.0)
    assert machine.threads == 1
    assert seconds_of(machine, sharing, RISE_AFTER + 2, others=0.0)[-1] == 2 and machine.set_calls == [1, 2]


def test_reads_only_the_allowed_cpus(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text(
        "cpu  9 9 9 9 9 9 9 9 0 0\n"
        "cpu0 100 0 50 1000 10 0 0 5 0 0\n"
        "cpu1 200 0 0 2000 0 0 0 0 0 0\n"
        "cpu7 999 0 0 0 0 0 0 0 0 0\n"
        "intr 1 2 3\n"
    )
    import os

    ticks = os.sysconf("SC_CLK_TCK")
    busy, idle = read_cpu_seconds({0, 1}, path=str(stat))
    assert busy == pytest.approx((155 + 200) / ticks) and idle == pytest.approx((1010 + 2000) / ticks)


def test_who_decides(monkeypatch):
    monkeypatch.delenv(core_sharing.OPT_OUT, raising=False)
    monkeypatch.setattr(core_sharing, "_choice", {})
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert not core_sharing.enabled()  # nothing opted in: a library call keeps torch's threads
    core_sharing.configure(
        True, "the commands' default (hfsiamese.cpu_policy checked the thread count is not the user's)"
    )
    assert core_sharing.enabled()
    monkeypatch.setenv(core_sharing.OPT_OUT, "0")
    assert not core_sharing.enabled()  # the opt-out wins over everything


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="not Linux: reads /proc/stat")
def test_real_busy_processes_take_a_thread_away(monkeypatch):
    """End to end on this machine: a busy process per CPU, and the real counters see it."""
    cpus = len(core_sharing._allowed_cpus())
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cpus)]
    try:
        time.sleep(0.5)
        sharing = CoreSharing(max_threads=2, cores=cpus, set_threads=lambda n: None, get_threads=lambda: 2)
        deadline = time.monotonic() + 10
        while sharing.threads == 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            sharing.update()
        assert sharing.threads == 1, sharing.changes
        assert sharing.changes[0][2] > cpus - 1.5  # the spinners' cores, measured
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_encode_adapts_between_batches_and_restores(tiny_lstm, word_tokenizer, monkeypatch):
    """
    The real CoreSharing in `encode`, with torch's real thread count read at every batch: another process
    takes both cores from the second batch on, so torch runs 2 threads, then 1, and 2 again after `encode`.
    Only the CPU counters and the clock are scripted (2 s pass per batch), so the machine's load cannot decide.
    """
    clock = [0.0]
    made = []

    def scripted_sharing():
        made.append(
            CoreSharing(cores=2, read_cpu=lambda: (2.0 * clock[0], 0.0), own_cpu=lambda: 0.0, clock=lambda: clock[0])
        )
        return made[-1]

    threads_per_batch = []
    embed_batch = tiny_lstm._embed_batch

    def recording_embed_batch(features):
        threads_per_batch.append(torch.get_num_threads())
        clock[0] += 2.0
        return embed_batch(features)

    monkeypatch.setattr(core_sharing, "CoreSharing", scripted_sharing)
    monkeypatch.setattr(core_sharing, "enabled", lambda: True)
    monkeypatch.setattr(tiny_lstm, "_embed_batch", recording_embed_batch)
    texts = [f"question number {i}" for i in range(10)]
    threads_before = torch.get_num_threads()
    torch.set_num_threads(2)  # the run's choice, which sharing must give back
    try:
        expected = tiny_lstm.encode(texts, word_tokenizer, batch_size=3)
        assert threads_per_batch == [2, 1, 1, 1], made[0].changes  # 4 batches; fewer threads from the second on
        assert torch.get_num_threads() == 2  # restored after encode
        assert len(made) == 1 and [threads for _, threads, _ in made[0].changes] == [1]

        threads_per_batch.clear()
        monkeypatch.setattr(core_sharing, "enabled", lambda: False)
        assert torch.allclose(tiny_lstm.encode(texts, word_tokenizer, batch_size=3), expected)
        assert len(made) == 1 and threads_per_batch == [2, 2, 2, 2]  # off: none made, the count untouched
    finally:
        torch.set_num_threads(threads_before)
