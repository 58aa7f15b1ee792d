#!/usr/bin/env python
"""Malformed requests against a running `hfsiamese serve`: each must get a 4xx JSON error, and the service must keep
serving (a good search after each 100 must answer 200).

    hfsiamese serve --index_dir outputs/qqp_db_index --model_name_or_path outputs/lstm_qqp --port 8000 &
    python benchmarks/serving/malformed_requests.py --url http://127.0.0.1:8000 --requests 1000 --api_key KEY

`--requests` requests are generated from `--seed`, drawn in turn from the kinds the issue lists: bad JSON, wrong
types, empty, over-long, non-UTF-8, huge k, unknown ids (and unknown fields, a body over the size limit, a wrong
method). The report counts the answers by status class (2xx, 4xx, 5xx, and transport failures), those whose body was
not the service's JSON error, and the good requests that failed; the exit status is 0 only when every malformed
request got a 4xx JSON error and every good one a 200. `--api_key` (a write key, so that add and delete are
reached) where the service has keys.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, emit

# A request: (method, path, body bytes or None, content type). The bodies are bytes so that bad JSON and bad UTF-8
# reach the service as they are.
Request = tuple[str, str, bytes | None, str]
JSON = "application/json"
GOOD_SEARCH: Request = ("POST", "/v1/search", b'{"query": "how do i learn python ?", "k": 3}', JSON)


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def _bad_json(rng: random.Random) -> Request:
    path = rng.choice(["/v1/search", "/v1/check", "/v1/questions", "/v1/questions/delete"])
    body = rng.choice([b'{"query": ', b"{query: 'x'}", b"[1, 2", b'{"query": "a",}', b"not json", b"\x00\x01\x02"])
    return "POST", path, body, JSON


def _wrong_types(rng: random.Random) -> Request:
    choices: list[Request] = [
        ("POST", "/v1/search", _json({"query": rng.choice([1, 2.5, True, None, ["a"], {"a": 1}])}), JSON),
        ("POST", "/v1/search", _json({"queries": rng.choice(["one text", [1, 2], [None], {"a": "b"}])}), JSON),
        ("POST", "/v1/search", _json({"query": "a question", "k": rng.choice(["5", 2.5, True, [3]])}), JSON),
        ("POST", "/v1/check", _json({"pair": rng.choice([["a", "b"], "a", {"first": 1, "second": "b"}])}), JSON),
        ("POST", "/v1/questions", _json({"questions": [{"id": rng.choice([1.5, True, None, [1]]), "text": "a"}]}), JSON),
        ("POST", "/v1/questions", _json({"questions": [{"id": 10**9 + rng.randrange(10**6), "text": 7}]}), JSON),
        ("POST", "/v1/questions/delete", _json({"ids": rng.choice(["1", 3, [1.5], [[1]]])}), JSON),
        ("GET", f"/v1/groups/{rng.choice(['abc', '1.5', 'x1'])}", None, JSON),
        ("GET", f"/v1/groups?n={rng.choice(['ten', '0', '-3'])}", None, JSON),
        ("POST", "/v1/search", _json({"query": "a question", rng.choice(["kk", "top_k", "filter"]): 3}), JSON),
    ]  # fmt: skip
    return rng.choice(choices)


def _empty(rng: random.Random) -> Request:
    choices: list[Request] = [
        ("POST", rng.choice(["/v1/search", "/v1/check", "/v1/questions"]), b"", JSON),
        ("POST", "/v1/search", _json({}), JSON),
        ("POST", "/v1/search", _json({"query": rng.choice(["", " ", "\n\t"])}), JSON),
        ("POST", "/v1/search", _json({"queries": []}), JSON),
        ("POST", "/v1/check", _json({"pairs": []}), JSON),
        ("POST", "/v1/check", _json({"pair": {"first": "", "second": "b"}}), JSON),
        ("POST", "/v1/questions", _json({"questions": []}), JSON),
        ("POST", "/v1/questions", _json({"questions": [{"id": 10**9 + rng.randrange(10**6), "text": " "}]}), JSON),
        ("POST", "/v1/questions/delete", _json({"ids": []}), JSON),
    ]  # fmt: skip
    return rng.choice(choices)


def _over_long(rng: random.Random) -> Request:
    text = "why " * rng.randrange(3_000, 60_000)  # longer than the text limit, or the body limit
    choices: list[Request] = [
        ("POST", "/v1/search", _json({"query": text}), JSON),
        ("POST", "/v1/search", _json({"queries": ["a question"] * rng.randrange(1_000, 5_000)}), JSON),
        ("POST", "/v1/check", _json({"pair": {"first": text, "second": "b"}}), JSON),
        ("POST", "/v1/questions", _json({"questions": [{"id": 10**9 + rng.randrange(10**6), "text": text}]}), JSON),
        ("POST", "/v1/search", b'{"query": "' + b"a" * rng.randrange(2_000_000, 3_000_000) + b'"}', JSON),
    ]  # fmt: skip
    return rng.choice(choices)


def _non_utf8(rng: random.Random) -> Request:
    junk = bytes(rng.randrange(0x80, 0x100) for _ in range(rng.randrange(1, 20)))
    body = rng.choice([b'{"query": "' + junk + b'"}', b'{"queries": ["a", "' + junk + b'"]}', junk])
    return "POST", rng.choice(["/v1/search", "/v1/check", "/v1/questions"]), body, JSON


def _huge_k(rng: random.Random) -> Request:
    k = rng.choice([0, -1, -(10**6), 10**3, 10**9, 10**30, 2**63])
    return "POST", "/v1/search", _json({"query": "how do i learn python ?", "k": k}), JSON


def _unknown_ids(rng: random.Random) -> Request:
    unknown = rng.choice([10**12 + rng.randrange(10**6), f"no-such-id-{rng.randrange(10**6)}"])
    choices: list[Request] = [
        ("GET", f"/v1/questions/{unknown}/group", None, JSON),
        ("DELETE", f"/v1/questions/{unknown}", None, JSON),
        ("GET", f"/v1/groups/{10**12 + rng.randrange(10**6)}", None, JSON),
        ("GET", f"/v1/no/such/route/{rng.randrange(10**6)}", None, JSON),
        ("PUT", "/v1/search", _json({"query": "a"}), JSON),
    ]  # fmt: skip
    return rng.choice(choices)


KINDS: dict[str, Callable[[random.Random], Request]] = {
    "bad_json": _bad_json, "wrong_types": _wrong_types, "empty": _empty, "over_long": _over_long,
    "non_utf8": _non_utf8, "huge_k": _huge_k, "unknown_ids": _unknown_ids,
}  # fmt: skip


def generated(count: int, seed: int) -> list[tuple[str, Request]]:
    """`count` malformed requests, the kinds in turn, each drawn from `seed`'s generator."""
    rng = random.Random(seed)
    names = list(KINDS)
    return [(names[n % len(names)], KINDS[names[n % len(names)]](rng)) for n in range(count)]


def is_json_error(response: httpx.Response) -> bool:
    """The service's error shape: `{"error": {"code", "message"}}`, one line, no trace."""
    try:
        body = response.json()
    except ValueError:
        return False
    error = body.get("error") if isinstance(body, dict) else None
    return isinstance(error, dict) and {"code", "message"} <= set(error) and "Traceback" not in response.text


def send(client: httpx.Client, request: Request) -> httpx.Response:
    method, path, body, content_type = request
    return client.request(method, path, content=body, headers={"Content-Type": content_type})


def run(
    url: str, count: int, seed: int, api_key: str | None = None, *, transport: httpx.BaseTransport | None = None
) -> dict[str, Any]:
    """Send `count` malformed requests to the service at `url`, a good search after each 100 (and at the end);
    `transport`: httpx's (a test's stand-in service)."""
    statuses: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = {name: Counter() for name in KINDS}
    not_json, good_failed, first_failures = 0, 0, []
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(base_url=url, timeout=120, headers=headers, transport=transport) as client:
        for number, (kind, request) in enumerate(generated(count, seed), start=1):
            try:
                response = send(client, request)
                status = f"{response.status_code // 100}xx"
                if status != "4xx" or not is_json_error(response):
                    not_json += status == "4xx"
                    first_failures.append(f"{kind} {request[0]} {request[1][:60]} -> {response.status_code}")
            except httpx.TransportError as err:
                status = "transport_error"
                first_failures.append(f"{kind} {request[0]} {request[1][:60]} -> {type(err).__name__}")
            statuses[status] += 1
            by_kind[kind][status] += 1
            if number % 100 == 0 or number == count:
                try:
                    good_failed += send(client, GOOD_SEARCH).status_code != 200
                except httpx.TransportError:
                    good_failed += 1
    return {
        "malformed_requests": count,
        "statuses": dict(statuses),
        "by_kind": {name: dict(counts) for name, counts in by_kind.items()},
        "four_xx_not_json_error": not_json,
        "good_requests": count // 100 + (count % 100 != 0),
        "good_requests_failed": good_failed,
        "first_failures": first_failures[:5],
        "ok": statuses.get("4xx", 0) == count and not_json == 0 and good_failed == 0,
    }


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--url", required=True, help="the running service, e.g. http://127.0.0.1:8000")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--api_key", default=None, help="a write key, where the service has keys")
    args = parser.parse_args()
    if args.requests < 1:
        parser.error(f"--requests must be at least 1, got {args.requests}")
    report = run(args.url, args.requests, args.seed, args.api_key)
    emit(report)
    sys.exit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
