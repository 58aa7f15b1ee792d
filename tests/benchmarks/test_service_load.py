"""The service load driver (benchmarks/serving/service_load.py) against a tiny in-process app: counts, errors, adds."""

from __future__ import annotations

import argparse
import asyncio
import json

import httpx
import psutil
from fastapi import FastAPI

from benchmarks.serving.service_load import cpu_seconds, folder_runtime, load, percentile, questions, run_client


def tiny_app() -> FastAPI:
    app, seen = FastAPI(), set()

    @app.post("/v1/search")
    async def search(body: dict) -> dict:
        return {"results": [{"query": body["query"], "matches": []}]}

    @app.post("/v1/questions", status_code=201)
    async def add(body: dict) -> dict:
        (question,) = body["questions"]
        if question["id"] in seen:
            raise ValueError("doubled id")
        seen.add(question["id"])
        return {"added": [{"id": question["id"]}]}

    return app


def test_the_driver_counts_requests_adds_and_latencies():
    async def run():
        transport = httpx.ASGITransport(app=tiny_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await load(client, ["a", "b", "c"], 4, requests=40, add_share=0.1)

    row = asyncio.run(run())
    assert row["requests"] == 40 and row["errors"] == 0 and row["concurrency"] == 4
    assert len(row["acknowledged_adds"]) == 4 and len(set(row["acknowledged_adds"])) == 4
    assert 0 < row["p50_ms"] <= row["p99_ms"] and row["requests_per_s"] > 0


def test_percentile_is_the_nearest_rank():
    assert percentile([], 0.99) == 0.0
    assert percentile([float(v) for v in range(1, 101)], 0.99) == 99.0 and percentile([5.0], 0.5) == 5.0


def test_the_queries_are_distinct_questions():
    texts = questions(50)
    assert len(texts) == 50 == len(set(texts)) and all(text.strip() for text in texts)


def test_cpu_seconds_count_what_the_process_used():
    process = psutil.Process()
    before = cpu_seconds(process)
    sum(i * i for i in range(2_000_000))
    assert cpu_seconds(process) > before


def test_the_client_runs_on_the_loop_asked_for():
    async def loop_kind() -> list[dict[str, str]]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=tiny_app()), base_url="http://test") as client:
            await load(client, ["a"], 2, requests=4)
        return [{"loop": type(asyncio.get_running_loop()).__module__}]

    for name, module in (("asyncio", "asyncio"), ("uvloop", "uvloop")):
        (row,) = run_client(loop_kind(), argparse.Namespace(client_loop=name))
        assert row["loop"].split(".")[0] == module, (name, row)


def test_several_clients_share_the_workers_in_turn():
    seen: list[int] = []

    def counting_app(number: int) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/search")
        async def search(body: dict) -> dict:
            seen.append(number)
            await asyncio.sleep(0.001)  # as a network round trip does, the other workers run meanwhile
            return {"results": [{"query": body["query"], "matches": []}]}

        return app

    async def run():
        clients = [
            httpx.AsyncClient(transport=httpx.ASGITransport(app=counting_app(number)), base_url="http://test")
            for number in range(4)
        ]
        try:
            return await load(clients, ["a", "b"], 4, requests=40)
        finally:
            for client in clients:
                await client.aclose()

    row = asyncio.run(run())
    assert row["requests"] == 40 and row["errors"] == 0
    assert sorted(set(seen)) == [0, 1, 2, 3]  # every client carried requests


def test_a_row_names_the_runtime_of_the_folder_as_it_is(tmp_path):
    """Without --backend a row says what the folder runs on: an OpenVINO or ONNX export's runtime, else PyTorch."""
    for name, entry, runtime in (("ov", "openvino", "openvino"), ("onnx", "onnx", "onnx"), ("pt", None, "pytorch")):
        folder = tmp_path / name
        folder.mkdir()
        config = {"model_type": "siamese", **({entry: {"file": "model"}} if entry else {})}
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        assert folder_runtime(str(folder)) == runtime
    assert folder_runtime("minilm") == "pytorch"  # a name, not a folder: the PyTorch model it names
