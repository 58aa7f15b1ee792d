"""The dynamic batcher and the serial writer on their own (no HTTP): batches, limits, errors, order."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from hfsiamese.service.batching import DynamicBatcher, SerialWriter


def run(coroutine_function):
    with ThreadPoolExecutor(max_workers=1) as executor:
        return asyncio.run(coroutine_function(executor))


def test_concurrent_items_run_in_one_call_within_the_wait():
    calls: list[list[int]] = []

    def double(items: list[int]) -> list[int]:
        calls.append(items)
        return [2 * item for item in items]

    async def scenario(executor):
        batcher = DynamicBatcher(double, executor, max_batch=16, max_wait_s=0.5, on_batch=sizes.append)
        batcher.start()
        try:
            return await asyncio.gather(*(batcher.submit(i) for i in range(5)))
        finally:
            await batcher.stop()

    sizes: list[int] = []
    assert run(scenario) == [0, 2, 4, 6, 8]
    assert calls == [[0, 1, 2, 3, 4]] and sizes == [5]


def test_a_batch_holds_at_most_max_batch_texts():
    calls: list[list[list[str]]] = []

    def lengths(items: list[list[str]]) -> list[int]:
        calls.append(items)
        return [len(item) for item in items]

    async def scenario(executor):
        batcher = DynamicBatcher(lengths, executor, max_batch=4, max_wait_s=0.2, size_of=len)
        batcher.start()
        try:
            return await asyncio.gather(*(batcher.submit(["t"] * n) for n in (3, 2, 1, 5)))
        finally:
            await batcher.stop()

    assert run(scenario) == [3, 2, 1, 5]
    assert all(sum(map(len, call)) <= 4 or len(call) == 1 for call in calls)  # 5 texts: alone
    assert sorted(len(item) for call in calls for item in call) == [1, 2, 3, 5]


def test_an_error_answers_every_item_of_its_batch_and_the_next_batch_runs():
    def failing(items: list[int]) -> list[int]:
        if 0 in items:
            raise ValueError("zero refused")
        return items

    async def scenario(executor):
        batcher = DynamicBatcher(failing, executor, max_batch=8, max_wait_s=0.2)
        batcher.start()
        try:
            first = await asyncio.gather(batcher.submit(0), batcher.submit(1), return_exceptions=True)
            return first, await batcher.submit(2)
        finally:
            await batcher.stop()

    first, second = run(scenario)
    assert all(isinstance(answer, ValueError) for answer in first) and second == 2


def test_the_writer_runs_one_write_at_a_time_in_order():
    active, most, order = [0], [0], []
    guard = threading.Lock()

    def write(n: int):
        def operation() -> int:
            with guard:
                active[0] += 1
                most[0] = max(most[0], active[0])
            order.append(n)
            with guard:
                active[0] -= 1
            return n

        return operation

    async def scenario(executor):
        writer = SerialWriter(executor)
        writer.start()
        try:
            return await asyncio.gather(*(writer.submit(write(n)) for n in range(10)))
        finally:
            await writer.stop()

    assert run(scenario) == list(range(10))
    assert order == list(range(10)) and most[0] == 1


def test_submitting_before_start_is_an_error():
    async def scenario(executor):
        with pytest.raises(RuntimeError, match="not started"):
            await DynamicBatcher(lambda items: items, executor, max_batch=1, max_wait_s=0).submit(1)

    run(scenario)


def test_the_old_serving_names_still_import_beside_the_service():
    """`hfsiamese.serving` is a moved package (its old names warn and load one release): the service lives apart."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from hfsiamese.serving import OnnxSiameseModel

    from hfsiamese.bi_encoder.onnx_model import OnnxSiameseModel as moved

    assert OnnxSiameseModel is moved and any(issubclass(w.category, FutureWarning) for w in caught)


def recorder() -> tuple[list[list[int]], Callable[[list[int]], list[int]]]:
    """The batches a batch function is called with, and that function (each item its own result)."""
    calls: list[list[int]] = []

    def record(items: list[int]) -> list[int]:
        calls.append(items)
        return items

    return calls, record


def test_a_lone_item_never_waits_and_items_that_come_together_wait_for_company():
    calls, record = recorder()

    async def scenario(executor):
        loop = asyncio.get_running_loop()
        batcher = DynamicBatcher(record, executor, max_batch=16, max_wait_s=0.5)
        batcher.start()
        try:
            began = loop.time()
            await batcher.submit(1)  # nobody else: runs at once, not after the 0.5 s wait
            lone = loop.time() - began
            await asyncio.gather(batcher.submit(2), batcher.submit(3))  # queued together: one batch
            later = asyncio.ensure_future(batcher.submit(5))  # the last batch held two: this one waits for company

            async def arrives_after(delay: float, item: int) -> int:
                await asyncio.sleep(delay)
                return await batcher.submit(item)

            await asyncio.gather(later, arrives_after(0.1, 6))
            return lone
        finally:
            await batcher.stop()

    lone = run(scenario)
    assert lone < 0.25 and calls[0] == [1] and calls[1] == [2, 3]
    assert calls[2] == [5, 6]  # 6 came 0.1 s after 5 and joined its batch


def test_a_batch_waits_for_as_many_as_the_last_one_held_and_no_longer():
    """The clients of the last batch come back about together: once as many are queued the batch runs, without
    waiting out the rest of `max_wait_s`; fewer than that wait up to it and then run."""
    calls, record = recorder()

    async def scenario(executor):
        loop = asyncio.get_running_loop()
        batcher = DynamicBatcher(record, executor, max_batch=16, max_wait_s=1.0)
        batcher.start()

        async def arrives_after(delay: float, item: int) -> int:
            await asyncio.sleep(delay)
            return await batcher.submit(item)

        try:
            await asyncio.gather(batcher.submit(1), batcher.submit(2))  # queued together: the last batch held two
            began = loop.time()
            await asyncio.gather(batcher.submit(3), arrives_after(0.05, 4))  # as many as before: runs when 4 comes
            company = loop.time() - began
            began = loop.time()
            await batcher.submit(5)  # one of the two comes back: it waits the whole second for the other
            alone = loop.time() - began
            return company, alone
        finally:
            await batcher.stop()

    company, alone = run(scenario)
    assert calls == [[1, 2], [3, 4], [5]]
    assert 0.04 < company < 0.5 and alone >= 0.9
