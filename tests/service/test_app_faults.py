"""The app in-process (FastAPI's TestClient): loading that fails, a fault inside a search, read-only, no keys."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from hfsiamese import SiameseModel
from hfsiamese.search import DuplicateIndex
from hfsiamese.service.app import create_app
from hfsiamese.service.auth import ApiKeys
from hfsiamese.service.service import DuplicateService
from hfsiamese.service.settings import ServeSettings
from tests.conftest import TEXTS

SETTINGS = ServeSettings(index_dir="unused", model_name_or_path="unused")


def ready(client: TestClient, seconds: float = 60) -> int:
    """The status /health/ready settles on (bounded wait)."""
    deadline = time.monotonic() + seconds
    while True:
        response = client.get("/health/ready")
        if response.json()["status"] != "loading" or time.monotonic() > deadline:
            return response.status_code
        time.sleep(0.05)


@pytest.fixture
def service(model_dir, word_tokenizer):
    return DuplicateService(DuplicateIndex.build(TEXTS, SiameseModel.from_pretrained(model_dir), word_tokenizer))


def test_a_failed_load_is_said_on_readiness_and_every_route_answers_503():
    def opener() -> DuplicateService:
        raise FileNotFoundError("outputs/missing holds no index\nsecond line")

    with TestClient(create_app(SETTINGS, keys=ApiKeys(), opener=opener)) as client:
        assert ready(client) == 503
        assert client.get("/health/ready").json() == {"status": "failed", "error": "outputs/missing holds no index"}
        assert client.get("/health/live").status_code == 200
        response = client.post("/v1/search", json={"query": "a"})
        assert response.status_code == 503 and "could not be loaded" in response.json()["error"]["message"]


def test_a_fault_inside_a_search_is_a_500_without_a_trace(service, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(service.index, "search", broken)
    with TestClient(
        create_app(SETTINGS, keys=ApiKeys(), opener=lambda: service), raise_server_exceptions=False
    ) as client:
        assert ready(client) == 200
        response = client.post("/v1/search", json={"query": TEXTS[0]})
        assert response.status_code == 500 and "secret" not in response.text and "Traceback" not in response.text
        assert response.json()["error"]["code"] == "internal"
        assert client.post("/v1/check", json={"pair": {"first": TEXTS[0], "second": TEXTS[1]}}).status_code == 200


def test_a_read_only_service_refuses_writes_and_loopback_needs_no_key(service):
    settings = ServeSettings(index_dir="unused", model_name_or_path="unused", read_only=True)
    with TestClient(create_app(settings, keys=ApiKeys(), opener=lambda: service)) as client:
        assert ready(client) == 200
        assert client.post("/v1/search", json={"query": TEXTS[0], "k": 1}).status_code == 200  # no key needed
        refused = client.post("/v1/questions", json={"questions": [{"id": 100, "text": "new"}]})
        assert refused.status_code == 403 and "read-only" in refused.json()["error"]["message"]
        assert client.get("/v1/info").json()["read_only"] is True
        assert client.get("/v1/nothing-here").json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    "content_type",
    ["application/x-www-form-urlencoded", "text/plain; charset=utf-8", "multipart/form-data", "text/vnd.a+json"],
)
def test_a_body_sent_as_another_media_type_is_a_415_that_says_to_send_json(service, content_type):
    with TestClient(create_app(SETTINGS, keys=ApiKeys(), opener=lambda: service)) as client:
        assert ready(client) == 200
        for path in ("/v1/search", "/v1/check", "/v1/questions"):
            response = client.post(path, content=b'{"query": "a"}', headers={"Content-Type": content_type})
            error = response.json()["error"]
            assert response.status_code == 415 and error["code"] == "unsupported_media_type", (path, response.text)
            assert error["message"].startswith("send the body as JSON with the header Content-Type: application/json")
        for json_type in ("application/json", "application/json; charset=utf-8", "application/merge-patch+json"):
            response = client.post("/v1/search", content=b'{"query": "a", "k": 1}', headers={"Content-Type": json_type})
            assert response.status_code == 200, (json_type, response.text)
        wrong_field = client.post("/v1/search", content=b'{"kk": 1}', headers={"Content-Type": "application/json"})
        assert wrong_field.status_code == 422  # a JSON body that is wrong stays a 422
        untyped = client.post("/v1/search", content=b'{"query": "a"}')  # FastAPI parses JSON only when told it is
        assert untyped.status_code == 415 and untyped.json()["error"]["message"].endswith("(it came without one)")


def test_a_filter_on_an_index_without_metadata_is_a_422_and_an_empty_one_no_filter(service):
    with TestClient(create_app(SETTINGS, keys=ApiKeys(), opener=lambda: service)) as client:
        assert ready(client) == 200
        refused = client.post("/v1/search", json={"query": TEXTS[0], "filter": {"site": "a"}})
        assert refused.status_code == 422 and "needs a database store" in refused.json()["error"]["message"]
        assert client.post("/v1/search", json={"query": TEXTS[0], "k": 1, "filter": {}}).status_code == 200
