"""Acknowledged adds outlive a SIGKILL of the service: a LanceDB index has each add durably before the answer."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.conftest import TEXTS
from tests.service.running_service import RunningService, lancedb_index_dir

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real


def text_of(question_id: int) -> str:
    return f"{TEXTS[question_id % len(TEXTS)]} {question_id}"


def test_acknowledged_adds_survive_a_sigkill_and_restart(tmp_path, model_dir):
    index_dir = lancedb_index_dir(tmp_path, model_dir)
    service = RunningService(index_dir, model_dir)
    acknowledged: dict[int, int] = {}  # id -> group, as the answers said
    lock = threading.Lock()

    def add(question_id: int) -> None:
        try:
            response = httpx.post(
                f"{service.url}/v1/questions", json={"questions": [{"id": question_id, "text": text_of(question_id)}]},
                timeout=60,
            )  # fmt: skip
        except httpx.TransportError:  # killed before it answered: not acknowledged
            return
        if response.status_code == 201:
            (assignment,) = response.json()["added"]
            with lock:
                acknowledged[question_id] = assignment["group"]

    try:
        for question_id in range(100, 106):  # acknowledged one by one
            add(question_id)
        assert sorted(acknowledged) == list(range(100, 106))
        in_flight = [threading.Thread(target=add, args=(question_id,)) for question_id in range(106, 112)]
        for thread in in_flight:
            thread.start()
        time.sleep(0.3)  # some answered, some under way
        service.kill()
        for thread in in_flight:
            thread.join(timeout=60)
    finally:
        service.kill()
    with lock:
        acked = dict(acknowledged)
    restarted = RunningService(index_dir, model_dir)
    try:
        with httpx.Client(base_url=restarted.url, timeout=60) as http:
            size = http.get("/v1/info").json()["size"]
            unanswered = range(106, 112)
            assert len(TEXTS) + len(acked) <= size <= len(TEXTS) + len(acked) + sum(i not in acked for i in unanswered)
            for question_id, group in acked.items():
                found = http.post("/v1/search", json={"query": text_of(question_id), "k": 100}).json()["results"][0]
                match = next(m for m in found["matches"] if m["id"] == question_id)
                assert match["text"] == text_of(question_id)  # the whole row, not half of it
                assert http.get(f"/v1/questions/{question_id}/group").json()["group"] == group
            # the service still takes adds, and an id acknowledged before the kill is still taken
            assert http.post("/v1/questions", json={"questions": [{"id": 100, "text": "again"}]}).status_code == 409
            assert http.post("/v1/questions", json={"questions": [{"id": 200, "text": TEXTS[0]}]}).status_code == 201
    finally:
        restarted.stop()
