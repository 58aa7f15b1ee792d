"""The malformed-requests script (benchmarks/serving/malformed_requests.py) against a real `hfsiamese serve`: each
of ~50 generated requests gets a 4xx JSON error and the service keeps answering good ones; a service that answers
a malformed request with 200 or a bare body is reported, not passed."""

from __future__ import annotations

import httpx
import pytest

from benchmarks.serving.malformed_requests import GOOD_SEARCH, KINDS, generated, run
from tests.service.running_service import (
    WRITE_KEY,
    RunningService,
    lancedb_index_dir,
    tiny_model_dir,
    write_keys_file,
)


@pytest.fixture(scope="module")
def service(tmp_path_factory, word_tokenizer):
    root = tmp_path_factory.mktemp("malformed")
    model_dir = tiny_model_dir(root / "model", word_tokenizer)
    keys_file = write_keys_file(root / "keys.txt")
    index_dir = lancedb_index_dir(tmp_path_factory.mktemp("malformed_index"), model_dir)
    running = RunningService(index_dir, model_dir, keys_file=keys_file)
    yield running
    running.stop()


def test_the_requests_are_seeded_and_cover_every_kind():
    requests = generated(70, seed=3)
    assert requests == generated(70, seed=3) and requests != generated(70, seed=4)
    assert {kind for kind, _ in requests} == set(KINDS)


@pytest.mark.slow
def test_every_malformed_request_gets_a_4xx_json_error_and_the_service_keeps_serving(service):
    report = run(service.url, 56, seed=0, api_key=WRITE_KEY)
    assert report["ok"], report
    assert report["statuses"] == {"4xx": 56} and report["good_requests"] == 1 and report["good_requests_failed"] == 0
    assert "Traceback" not in service.log()


def test_without_the_key_every_answer_is_a_401_json_error(service):
    report = run(service.url, 14, seed=1)
    # each a 401 JSON error (the key is checked first); the good search, keyless too, is refused and reported
    assert report["statuses"] == {"4xx": 14} and report["four_xx_not_json_error"] == 0
    assert report["good_requests_failed"] == 1 and not report["ok"]
    with httpx.Client(base_url=service.url) as client:
        assert client.post("/v1/search", json={"query": "a"}).status_code == 401


def test_a_plain_text_error_a_success_and_a_failing_good_request_are_reported():
    def handler(request: httpx.Request) -> httpx.Response:  # errors as plain text; searches succeed, or fail
        if request.url.path == "/v1/search" and request.content == GOOD_SEARCH[2]:
            return httpx.Response(503, json={"error": {"code": "not_ready", "message": "down"}})
        return httpx.Response(200 if request.url.path == "/v1/search" else 400, text="bad")

    report = run("http://test", 30, seed=0, transport=httpx.MockTransport(handler))
    assert not report["ok"] and report["good_requests_failed"] == 1
    assert report["statuses"]["4xx"] == report["four_xx_not_json_error"] > 0 and report["statuses"]["2xx"] > 0
