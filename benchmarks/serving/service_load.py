#!/usr/bin/env python
"""Load on `hfsiamese serve` from a real HTTP client (httpx, asyncio) on loopback, beside a plain FastAPI endpoint.

    python benchmarks/serving/service_load.py --index_dir outputs/qqp_db_index --model_name_or_path outputs/lstm_qqp \\
        --concurrency 1 8 32 --requests 2000 --baseline
    python benchmarks/serving/service_load.py --index_dir outputs/qqp_db_index --model_name_or_path outputs/lstm_qqp \\
        --concurrency 32 --seconds 600 --add_share 0.1            # mixed load: 90% search, 10% add

For each concurrency, `--requests` searches (or `--seconds` of them) are sent by that many concurrent clients, each
one request at a time on its own connection (as separate users; `--client_pool shared` sends them all through one
httpx connection pool, whose bookkeeping cost this client ~3.5x the CPU a request at 32 clients, on the cores the
service shares), the queries drawn in turn from QQP dev's questions: throughput (requests/s) and latency
percentiles (p50, p99, ms), errors counted. `--add_share` makes that share of the requests adds of new questions
(ids never used before; at the end every acknowledged id is looked up). `--baseline` measures the same model
behind a plain FastAPI endpoint that calls `index.search` per request (no batching) on its own port. Each service
runs in its own process (`hfsiamese serve`, or this script with `--plain_server`), started and stopped here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import EMBEDDED_PAIRS, argument_parser, emit, machine, today

START_SECONDS = 600


def questions(limit: int = 5000) -> list[str]:
    """The first `limit` distinct questions of the embedded QQP pairs (each once, as everywhere in hfsiamese)."""
    from hfsiamese.data import distinct_questions, load_pairs

    texts, _ = distinct_questions(load_pairs(str(EMBEDDED_PAIRS)))
    return list(texts[:limit])


def percentile(values: list[float], share: float) -> float:
    """The `share` percentile (nearest rank) of `values`, 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


async def load(
    client: httpx.AsyncClient | Sequence[httpx.AsyncClient],
    texts: list[str],
    concurrency: int,
    *,
    requests: int | None = None,
    seconds: float | None = None,
    add_share: float = 0.0,
    first_id: int = 10_000_000,
) -> dict[str, Any]:
    """Drive `client` with `concurrency` workers until `requests` are sent or `seconds` pass: throughput, latency
    percentiles, errors, and the ids whose adds were acknowledged. Given several clients, worker `i` sends through
    client `i % len(clients)` (one client a worker: each its own connection, as separate users have)."""
    clients = [client] if isinstance(client, httpx.AsyncClient) else list(client)
    latencies: list[float] = []
    errors, sent, acknowledged = 0, 0, []
    stop_at = None if seconds is None else time.perf_counter() + seconds
    every = round(1 / add_share) if add_share > 0 else 0

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal errors, sent
        while (requests is None or sent < requests) and (stop_at is None or time.perf_counter() < stop_at):
            number = sent
            sent += 1
            text = texts[number % len(texts)]
            start = time.perf_counter()
            if every and number % every == every - 1:
                new_id = first_id + number
                body = {"questions": [{"id": new_id, "text": f"{text} ({new_id})"}]}
                response = await client.post("/v1/questions", json=body)
                if response.status_code == 201:
                    acknowledged.append(new_id)
            else:
                response = await client.post("/v1/search", json={"query": text, "k": 5})
            latencies.append(time.perf_counter() - start)
            errors += response.status_code >= 400

    began = time.perf_counter()
    await asyncio.gather(*(worker(clients[number % len(clients)]) for number in range(concurrency)))
    elapsed = time.perf_counter() - began
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "errors": errors,
        "requests_per_s": round(len(latencies) / elapsed, 1) if elapsed else 0.0,
        "p50_ms": round(1000 * statistics.median(latencies), 2) if latencies else 0.0,
        "p99_ms": round(1000 * percentile(latencies, 0.99), 2),
        "acknowledged_adds": acknowledged,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(command: list[str], port: int, **popen: Any) -> subprocess.Popen:
    """A service process, once its `/health/ready` answers 200 (`popen`: where its output goes, as `Popen` takes)."""
    process = subprocess.Popen(command, **popen)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{command[:4]} exited with {process.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health/ready", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    process.kill()
    raise RuntimeError(f"{command[:4]} was not ready within {START_SECONDS} s")


def folder_runtime(model_name_or_path: str) -> str:
    """The runtime a model folder runs on as it is (no `--backend`), as `--backend` names it: the runtime word of
    what `backend="auto"` says the folder is (`backend_choice.describe`: "OpenVINO int8 (static)" -> "openvino")."""
    import json

    from hfsiamese.backend_choice import describe

    config_file = Path(model_name_or_path) / "config.json"
    if not config_file.is_file():
        return "pytorch"
    return describe(json.loads(config_file.read_text(encoding="utf-8"))).split()[0].lower()


def plain_app(index_dir: str, model_name_or_path: str, backend: str | None = None) -> Any:
    """The baseline: the model (on `backend`'s runtime, as `hfsiamese serve --backend`) and index behind one FastAPI
    endpoint calling `index.search` per request."""
    from fastapi import FastAPI
    from pydantic import BaseModel

    from hfsiamese.search.index_opening import open_index

    index = open_index(model_name_or_path, index_dir, None, backend=backend)
    app = FastAPI()

    class Query(BaseModel):
        query: str
        k: int = 5

    def search(body: Query) -> dict[str, Any]:  # a thread per request, as a user's 20 lines would do
        return {"results": [{"query": body.query, "matches": index.search(body.query, k=body.k)}]}

    # This module's annotations are strings (`from __future__ import annotations`), which FastAPI resolves in the
    # module's globals, where this local `Query` is not: without the class itself it takes `body` for a query
    # parameter and answers every request 422.
    search.__annotations__["body"] = Query
    app.post("/v1/search")(search)

    @app.get("/health/ready")
    def ready() -> dict[str, str]:
        return {"status": "ready"}

    return app


def cpu_seconds(process: psutil.Process) -> float:
    """The user and system CPU seconds `process` has used so far."""
    times = process.cpu_times()
    return times.user + times.system


async def measure(
    url: str, texts: list[str], args: argparse.Namespace, name: str, server: psutil.Process
) -> list[dict[str, Any]]:
    """Each concurrency's row, with the CPU milliseconds a request cost the server and this client (on 2 cores they
    share, the client's own CPU is part of what limits the throughput measured)."""
    rows = []
    client_process = psutil.Process()
    most = max(args.concurrency)
    async with contextlib.AsyncExitStack() as stack:
        if args.client_pool == "shared":  # one client, one pool of connections for every worker
            limits = httpx.Limits(max_connections=most + 4)
            clients = [await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=120, limits=limits))]
        else:  # a client (and its one connection) a worker, as separate users
            one = httpx.Limits(max_connections=1)
            clients = [
                await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=120, limits=one))
                for _ in range(most)
            ]
        client = clients[0]
        await load(clients, texts, most, requests=max(20, most))  # warm-up: every connection opened
        for concurrency in args.concurrency:
            server_before, client_before = cpu_seconds(server), cpu_seconds(client_process)
            row = await load(clients, texts, concurrency, requests=args.requests, seconds=args.seconds,
                             add_share=args.add_share if name == "serve" else 0.0)  # fmt: skip
            served = max(1, row["requests"])
            row["server_cpu_ms"] = round(1000 * (cpu_seconds(server) - server_before) / served, 2)
            row["client_cpu_ms"] = round(1000 * (cpu_seconds(client_process) - client_before) / served, 2)
            acknowledged = row.pop("acknowledged_adds")
            if acknowledged:  # the first 64 acknowledged adds are there (each deleted once)
                found = await client.post("/v1/questions/delete", json={"ids": acknowledged[:64]})
                row["acknowledged_adds"], row["adds_checked"] = len(acknowledged), min(64, len(acknowledged))
                row["adds_found"] = found.json().get("deleted")
            rows.append(
                {
                    "service": name,
                    "backend": args.backend or folder_runtime(args.model_name_or_path),
                    "client_pool": args.client_pool,
                    "client_loop": args.client_loop,
                    "onnx_thread_spinning": args.onnx_thread_spinning if name == "serve" else None,
                    "date": today(),
                    "machine": machine(),
                    **row,
                }
            )
            emit(rows[-1])
    return rows


def run_client(coroutine: Coroutine[Any, Any, list[dict[str, Any]]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The load client on asyncio's own event loop, or on uvloop's (`--client_loop uvloop`: on 2 shared cores the
    client's CPU a request is part of what limits the throughput measured, and uvloop's is smaller)."""
    if args.client_loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coroutine)
    return asyncio.run(coroutine)


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--index_dir", required=True)
    parser.add_argument("--model_name_or_path", required=True)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--requests", type=int, default=None, help="requests per concurrency (default 2000)")
    parser.add_argument("--seconds", type=float, default=None, help="instead of --requests: seconds per concurrency")
    parser.add_argument("--add_share", type=float, default=0.0, help="share of requests that add a question")
    parser.add_argument("--baseline", action="store_true", help="also the plain FastAPI endpoint")
    parser.add_argument(
        "--batch_wait_ms", type=float, default=None, help="hfsiamese serve's flag (default: its own default)"
    )
    parser.add_argument(
        "--client_pool",
        choices=("per_client", "shared"),
        default="per_client",
        help="a connection a client (default), or one httpx pool shared by all (costs more CPU at 32)",
    )
    parser.add_argument("--client_loop", choices=("asyncio", "uvloop"), default="asyncio", help="the client's loop")
    parser.add_argument("--backend", default=None, help="the model's runtime in both services (e.g. auto: the fastest)")
    parser.add_argument(
        "--onnx_thread_spinning",
        action="store_true",
        help="hfsiamese serve's flag: an ONNX model's threads spin between batches (its default: they do not)",
    )
    parser.add_argument("--plain_server", type=int, default=None, help=argparse.SUPPRESS)  # the baseline's process
    args = parser.parse_args()
    if args.plain_server is not None:
        import uvicorn

        app = plain_app(args.index_dir, args.model_name_or_path, args.backend)
        uvicorn.run(app, port=args.plain_server, log_level="warning")
        return
    if args.requests is None and args.seconds is None:
        args.requests = 2000
    texts = questions()
    services = [("serve", [sys.executable, "-m", "hfsiamese.cli.serve", "--index_dir", args.index_dir,
                           "--model_name_or_path", args.model_name_or_path, "--log_level", "warning",
                           *(["--batch_wait_ms", str(args.batch_wait_ms)] if args.batch_wait_ms is not None else []),
                           *(["--onnx_thread_spinning"] if args.onnx_thread_spinning else [])])]  # fmt: skip
    if args.baseline:
        services.append(("plain", [sys.executable, __file__, "--index_dir", args.index_dir,
                                   "--model_name_or_path", args.model_name_or_path]))  # fmt: skip
    runtime = [] if args.backend is None else ["--backend", args.backend]
    for name, command in services:
        port = free_port()
        flag = ["--port", str(port)] if name == "serve" else ["--plain_server", str(port)]
        process = start(command + runtime + flag, port)
        try:
            run_client(measure(f"http://127.0.0.1:{port}", texts, args, name, psutil.Process(process.pid)), args)
        finally:
            process.terminate()
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
