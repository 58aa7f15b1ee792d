"""`hfsiamese serve` as a client sees it: a real service on a free loopback port, driven over HTTP with httpx."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from hfsiamese.service.client import ServiceCallError, ServiceClient
from tests.conftest import TEXTS
from tests.service.running_service import READ_KEY, WRITE_KEY, RunningService, lancedb_index_dir

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

MAX_BATCH, MAX_CHARS, MAX_K, MAX_BYTES = 8, 200, 20, 4096
WRITE = {"Authorization": f"Bearer {WRITE_KEY}"}
READ = {"X-API-Key": READ_KEY}


@pytest.fixture(scope="module")
def service(tmp_path_factory, model_dir, keys_file):
    index_dir = lancedb_index_dir(tmp_path_factory.mktemp("serve_index"), model_dir)
    running = RunningService(
        index_dir, model_dir, "--max_batch", str(MAX_BATCH), "--max_chars", str(MAX_CHARS), "--max_k", str(MAX_K),
        "--max_request_bytes", str(MAX_BYTES), "--batch_wait_ms", "50", keys_file=keys_file,
    )  # fmt: skip
    yield running
    running.stop()


@pytest.fixture
def http(service):
    with httpx.Client(base_url=service.url, headers=WRITE, timeout=60) as client:
        yield client


def error_of(response: httpx.Response, status: int) -> str:
    """The one-line message of an error answer of `status` (JSON, no trace)."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert "Traceback" not in response.text and "\n" not in body["error"]["message"]
    return body["error"]["message"]


def test_health_and_openapi(http):
    assert http.get("/health/live").json() == {"status": "live"}
    assert http.get("/health/ready").json() == {"status": "ready"}
    paths = http.get("/openapi.json").json()["paths"]
    assert {"/v1/search", "/v1/check", "/v1/questions", "/v1/groups/{group}"} <= set(paths)


def test_search_gives_matches_probability_verdict_and_group(http):
    response = http.post("/v1/search", json={"query": TEXTS[4], "k": 3})
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    assert result["query"] == TEXTS[4] and result["verdict"] == "duplicate"
    best, *rest = result["matches"]
    assert len(rest) == 2 and best["id"] == 4 and best["text"] == TEXTS[4] and best["score"] == pytest.approx(1.0)
    assert best["is_duplicate"] is True and best["probability"] == pytest.approx(0.9933, abs=1e-3)  # platt(1.0)
    assert isinstance(best["group"], int) and best["canonical_text"] == TEXTS[best["canonical_id"]]
    assert [m["score"] for m in result["matches"]] == sorted((m["score"] for m in result["matches"]), reverse=True)


def test_a_batch_of_queries_answers_each_in_order(http):
    response = http.post("/v1/search", json={"queries": [TEXTS[0], TEXTS[7]], "k": 1})
    results = response.json()["results"]
    assert [r["query"] for r in results] == [TEXTS[0], TEXTS[7]]
    assert [r["matches"][0]["id"] for r in results] == [0, 7]


def test_check_scores_pairs_like_the_model(http, model_dir):
    from hfsiamese import SiameseModel

    pairs = [(TEXTS[0], TEXTS[1]), (TEXTS[4], TEXTS[4])]
    response = http.post("/v1/check", json={"pairs": [{"first": a, "second": b} for a, b in pairs]})
    results = response.json()["results"]
    expected = SiameseModel.from_pretrained(model_dir).predict([a for a, _ in pairs], [b for _, b in pairs])
    assert [r["score"] for r in results] == pytest.approx(expected["scores"].tolist(), abs=1e-5)
    assert results[1]["verdict"] == "duplicate" and results[1]["is_duplicate"] is True
    one = http.post("/v1/check", json={"pair": {"first": TEXTS[0], "second": TEXTS[1]}}).json()["results"]
    assert one[0]["score"] == pytest.approx(results[0]["score"], abs=1e-6)


def test_an_added_question_is_searchable_at_once_grouped_and_deletable(service):
    text = "where can i learn to cook rice ?"
    with ServiceClient(service.url, api_key=WRITE_KEY) as client:
        size = client.info()["size"]
        added = client.add([text], [501])
        assert added["size"] == size + 1
        (assignment,) = added["added"]
        assert assignment["id"] == 501 and isinstance(assignment["group"], int)
        assert client.search(text, k=1)["results"][0]["matches"][0]["id"] == 501
        group = client.group_of(501)
        assert group["group"] == assignment["group"] and 501 in [m["id"] for m in group["members"]]
        with pytest.raises(ServiceCallError) as clash:
            client.add(["another text"], [501])
        assert clash.value.status == 409
        assert client.delete([501]) == {"deleted": 1, "size": size}
        assert all(m["id"] != 501 for m in client.search(text, k=5)["results"][0]["matches"])
        with pytest.raises(ServiceCallError) as gone:
            client.group_of(501)
        assert gone.value.status == 404


def test_delete_one_by_url_and_unknown_ids(http):
    assert http.post("/v1/questions", json={"questions": [{"id": 502, "text": "is rice a grain ?"}]}).status_code == 201
    assert http.delete("/v1/questions/502").json()["deleted"] == 1
    assert "502" in error_of(http.delete("/v1/questions/502"), 404)
    error_of(http.delete("/v1/questions/not-a-number"), 404)  # this index's ids are integers
    assert http.post("/v1/questions/delete", json={"ids": [123456]}).json()["deleted"] == 0


def test_groups_by_id_and_the_largest(http):
    largest = http.get("/v1/groups", params={"n": 3}).json()
    assert largest["num_groups"] >= 1 and len(largest["groups"]) <= 3
    sizes = [g["size"] for g in largest["groups"]]
    assert sizes == sorted(sizes, reverse=True) and all(size >= 2 for size in sizes)
    some = largest["groups"][0] if largest["groups"] else http.get("/v1/questions/0/group").json()
    group = http.get(f"/v1/groups/{some['group']}").json()
    assert group["size"] == len(group["members"]) and group["canonical_id"] in [m["id"] for m in group["members"]]
    assert "no group" in error_of(http.get("/v1/groups/99999"), 404)


def test_a_search_filter_keeps_the_questions_whose_metadata_match(service, http):
    questions = [
        {"id": 700 + n, "text": f"{TEXTS[0]} ({site})", "metadata": {"site": site}} for n, site in enumerate("xy")
    ]
    assert http.post("/v1/questions", json={"questions": questions}).status_code == 201
    try:
        found = http.post("/v1/search", json={"query": TEXTS[0], "k": 5, "filter": {"site": "x"}}).json()
        (match,) = found["results"][0]["matches"]
        assert match["id"] == 700 and match["site"] == "x"  # the metadata it was added with
        with ServiceClient(service.url, api_key=READ_KEY) as client:
            both = client.search([TEXTS[0], TEXTS[1]], k=5, filter={"site": ["x", "y"]})["results"]
        assert [sorted(m["id"] for m in result["matches"]) for result in both] == [[700, 701], [700, 701]]
        bad = {"query": TEXTS[0], "filter": {"bad field": "x"}}
        assert error_of(http.post("/v1/search", json=bad), 422).startswith("filter field 'bad field' is not")
        for value in (1.5, {"nested": "x"}, None):
            error_of(http.post("/v1/search", json={"query": TEXTS[0], "filter": {"site": value}}), 422)
    finally:
        assert http.post("/v1/questions/delete", json={"ids": [700, 701]}).json()["deleted"] == 2


def test_keys_are_required_and_a_read_key_cannot_write(service):
    anonymous = httpx.post(f"{service.url}/v1/search", json={"query": TEXTS[0]})
    assert "API key" in error_of(anonymous, 401) and anonymous.headers["www-authenticate"] == "Bearer"
    error_of(httpx.post(f"{service.url}/v1/search", json={"query": TEXTS[0]}, headers={"X-API-Key": "x" * 20}), 401)
    assert httpx.post(f"{service.url}/v1/search", json={"query": TEXTS[0]}, headers=READ).status_code == 200
    add = {"questions": [{"id": 503, "text": "a read key cannot add this"}]}
    assert "read-only" in error_of(httpx.post(f"{service.url}/v1/questions", json=add, headers=READ), 403)
    error_of(httpx.post(f"{service.url}/v1/questions/delete", json={"ids": [0]}, headers=READ), 403)
    error_of(httpx.get(f"{service.url}/metrics"), 401)


@pytest.mark.parametrize(
    "body, status, said",
    [
        ({"queries": [TEXTS[0]] * (MAX_BATCH + 1)}, 422, f"limit is {MAX_BATCH}"),
        ({"query": "why " * (MAX_CHARS // 4 + 1)}, 422, f"limit is {MAX_CHARS}"),
        ({"query": TEXTS[0], "k": MAX_K + 1}, 422, f"between 1 and {MAX_K}"),
        ({"query": TEXTS[0], "k": 0}, 422, "between 1"),
        ({"query": "   "}, 422, "empty"),
        ({"queries": []}, 422, "no queries"),
        ({"query": TEXTS[0], "queries": [TEXTS[1]]}, 422, "either"),
        ({"query": TEXTS[0], "kk": 3}, 422, "kk"),
        ({"query": "x" * (MAX_BYTES + 10)}, 413, f"{MAX_BYTES:,} bytes"),
    ],
)
def test_limits_are_clear_4xx_json_errors(http, body, status, said):
    assert said in error_of(http.post("/v1/search", json=body), status)


@pytest.mark.parametrize(
    "path, body, said",
    [
        ("/v1/check", {"pair": {"first": TEXTS[0], "second": " "}}, "the second question of the pair is empty"),
        (
            "/v1/check",
            {"pairs": [{"first": TEXTS[0], "second": TEXTS[1]}, {"first": TEXTS[2], "second": ""}]},
            "the second question of pair 2 is empty",  # was "question 4": the texts counted firsts, then seconds
        ),
        (
            "/v1/check",
            {"pairs": [{"first": "why " * (MAX_CHARS // 4 + 1), "second": TEXTS[1]}] * 2},
            f"the first question of pair 1 is {4 * (MAX_CHARS // 4 + 1):,} characters long",
        ),
        ("/v1/questions", {"questions": [{"id": 601, "text": "fine"}, {"id": 602, "text": ""}]}, "question 2 is empty"),
        ("/v1/search", {"queries": [TEXTS[0], "  "]}, "query 2 is empty"),
    ],
)
def test_an_empty_or_long_text_is_named_by_its_place_in_the_request(http, path, body, said):
    assert said in error_of(http.post(path, json=body), 422)
    if path == "/v1/questions":  # refused whole: the valid question beside the empty one was not stored
        assert http.post(path, json={"questions": [{"id": 601, "text": "fine"}]}).status_code == 201
        assert http.post("/v1/questions/delete", json={"ids": [601]}).json()["deleted"] == 1


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"", b"\xff\xfe\x00garbage", b"[1, 2, 3]", b'{"query": 3}', b'{"query": ["a"]}', b'{"k": "5"}',
     b'{"query": "a", "k": 1e9}', b'{"query": null}', b"null", b'{"query": "' + b"a" * 10_000 + b'"}'],
)  # fmt: skip
def test_malformed_requests_get_4xx_json_and_the_service_keeps_serving(http, content):
    for path in ("/v1/search", "/v1/check", "/v1/questions", "/v1/questions/delete"):
        response = http.post(path, content=content, headers={"Content-Type": "application/json"})
        assert 400 <= response.status_code < 500, (path, content[:40], response.status_code, response.text)
        error_of(response, response.status_code)
    assert http.post("/v1/search", json={"query": TEXTS[0], "k": 1}).status_code == 200


def test_bad_json_is_said_so(http):
    response = http.post("/v1/search", content=b'{"query": ', headers={"Content-Type": "application/json"})
    assert error_of(response, 422) == "the request body is not valid JSON"


def test_wrong_types_of_new_questions_are_refused(http):
    for question in ({"id": 1.5, "text": "a"}, {"id": True, "text": "a"}, {"id": 7, "text": 7}, {"text": "a"}):
        assert error_of(http.post("/v1/questions", json={"questions": [question]}), 422)
    error_of(http.post("/v1/questions", json={"questions": [{"id": "s", "text": "string id"}]}), 422)  # int ids


def batch_sizes(metrics: str) -> tuple[float, float]:
    """(search batches of one text, all search batches) from the Prometheus page."""
    ones = re.search(r'hfsiamese_batch_size_bucket\{kind="search",le="1\.0"\} (\S+)', metrics)
    count = re.search(r'hfsiamese_batch_size_count\{kind="search"\} (\S+)', metrics)
    assert ones and count, metrics
    return float(ones[1]), float(count[1])


def test_concurrent_searches_are_encoded_together(service, http):
    async def concurrent(n: int) -> list[int]:
        async with httpx.AsyncClient(base_url=service.url, headers=READ, timeout=60) as client:
            calls = [client.post("/v1/search", json={"query": TEXTS[i % len(TEXTS)], "k": 2}) for i in range(n)]
            return [r.status_code for r in await asyncio.gather(*calls)]

    for _ in range(5):  # bounded: concurrent requests reach a 50 ms batch window together
        before = batch_sizes(http.get("/metrics").text)
        assert asyncio.run(concurrent(8)) == [200] * 8
        ones, count = batch_sizes(http.get("/metrics").text)
        if (count - before[1]) - (ones - before[0]) > 0:
            assert count - before[1] < 8  # fewer model calls than requests
            return
    pytest.fail("8 concurrent searches never shared a batch")


def test_metrics_count_requests_latency_and_index_size(http):
    http.post("/v1/search", json={"query": TEXTS[1], "k": 1})
    page = http.get("/metrics", headers=READ)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    text = page.text
    assert re.search(r'hfsiamese_requests_total\{method="POST",route="/v1/search",status="200"\} [1-9]', text)
    assert re.search(r'hfsiamese_request_seconds_count\{method="POST",route="/v1/search"\} [1-9]', text)
    size = http.get("/v1/info").json()["size"]
    assert re.search(rf"hfsiamese_index_size {size}\.0", text)


def test_concurrent_adds_never_double_an_id_nor_lose_one(service, http):
    async def concurrent(questions: list[dict]) -> list[int]:
        async with httpx.AsyncClient(base_url=service.url, headers=WRITE, timeout=60) as client:
            calls = [client.post("/v1/questions", json={"questions": [q]}) for q in questions]
            return [r.status_code for r in await asyncio.gather(*calls)]

    size = http.get("/v1/info").json()["size"]
    same_id = [{"id": 700, "text": f"{TEXTS[i]} ?"} for i in range(6)]
    assert sorted(asyncio.run(concurrent(same_id))) == [201] + [409] * 5
    distinct = [{"id": 710 + i, "text": f"{TEXTS[i]} again"} for i in range(6)]
    assert asyncio.run(concurrent(distinct)) == [201] * 6
    assert http.get("/v1/info").json()["size"] == size + 7
    for question_id in [700, *range(710, 716)]:  # each in a group, kept by the one writer
        assert question_id in [m["id"] for m in http.get(f"/v1/questions/{question_id}/group").json()["members"]]
    deleted = http.post("/v1/questions/delete", json={"ids": [700, *range(710, 716)]})
    assert deleted.json() == {"deleted": 7, "size": size}, service.log()[-3000:]
