#!/usr/bin/env python
"""Mixed load on `hfsiamese serve` (90% search, 10% add) for `--minutes`, then its correctness: no error, no id lost
or doubled, and the service's duplicate groups equal to those a rebuild finds on the same rows.

    python benchmarks/serving/mixed_load.py --model_name_or_path outputs/lstm_qqp --minutes 10

The index is built here (a grouped LanceDB index of the first `--corpus_size` questions of the embedded QQP pairs,
under `--work_dir`), served by `hfsiamese serve` on a free loopback port and driven by `--concurrency` clients; each
request is an add with probability `--add_share` (a question the index does not hold, under a new id), else a search
(seeded: `--seed`). After the load the service is stopped and the saved index read back. This reports correctness,
not speed: the counts are whatever the machine managed.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import emit, machine, today
from benchmarks.serving.served_index import (
    ServiceProcess,
    build_index,
    copied_index,
    rebuilt_groups,
    rows_and_groups,
    script_parser,
    work_folder,
)
from benchmarks.serving.service_load import questions


async def drive(url: str, texts: list[str], new_texts: list[str], first_new: int, args: Any) -> dict[str, Any]:
    """`args.concurrency` clients for `args.minutes`: counts of searches and adds (`new_texts` under ids from
    `first_new` on), errors, and the acknowledged adds (id -> the group the answer gave)."""
    rng = random.Random(args.seed)
    counts = {"searches": 0, "adds": 0, "errors": 0}
    acknowledged: dict[int, int | None] = {}
    stop_at = time.monotonic() + 60 * args.minutes
    next_new = 0
    first_error: list[str] = []

    async def client_loop(client: httpx.AsyncClient) -> None:
        nonlocal next_new
        while time.monotonic() < stop_at:
            try:
                if rng.random() < args.add_share and next_new < len(new_texts):
                    new_id, next_new = first_new + next_new, next_new + 1
                    body = {"questions": [{"id": new_id, "text": new_texts[new_id - first_new]}]}
                    response = await client.post("/v1/questions", json=body)
                    counts["adds"] += 1
                    if response.status_code == 201:
                        (added,) = response.json()["added"]
                        acknowledged[new_id] = added.get("group")
                else:
                    response = await client.post("/v1/search", json={"query": rng.choice(texts), "k": 5})
                    counts["searches"] += 1
            except httpx.HTTPError as err:
                counts["errors"] += 1
                first_error.append(f"{type(err).__name__}: {err}")
                continue
            if response.status_code >= 400:
                counts["errors"] += 1
                first_error.append(f"{response.status_code}: {response.text[:200]}")

    limits = httpx.Limits(max_connections=args.concurrency + 2)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(args.concurrency)))
    return {**counts, "acknowledged": acknowledged, "first_error": first_error[:1]}


def check(
    index_dir: Path, model: str, initial: int, acknowledged: dict[int, Any], *, rebuild: bool = True
) -> dict[str, Any]:
    """What the saved index holds against what was acknowledged, and its groups against a rebuild's."""
    ids, texts, groups = rows_and_groups(index_dir, model)
    held = set(ids)
    report: dict[str, Any] = {
        "rows": len(ids),
        "expected_rows": initial + len(acknowledged),
        "ids_doubled": len(ids) - len(held),
        "acknowledged_ids_lost": sum(i not in held for i in acknowledged),
        "grouped_questions": sum(len(g) for g in groups),
    }
    if rebuild and groups:  # an index without groups has none to compare
        rebuilt = rebuilt_groups(model, ids, texts, index_dir.parent / "rebuild_db")
        differing = groups ^ rebuilt
        report["groups_equal_rebuild"] = groups == rebuilt
        report["groups"], report["rebuild_groups"] = len(groups), len(rebuilt)
        report["questions_in_differing_groups"] = len(set().union(*differing)) if differing else 0
    return report


def main() -> None:
    parser = script_parser(__doc__, corpus_size=2000, concurrency=8)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--add_share", type=float, default=0.1)
    args = parser.parse_args()
    if not 0 <= args.add_share <= 1:
        parser.error(f"--add_share must be between 0 and 1, got {args.add_share}")
    work = work_folder(parser, args.work_dir, "hfsiamese-mixed-load-")
    every = questions(limit=1_000_000)
    if args.index_dir:  # a site's index, copied: its rows are searched; the adds are QQP's questions under new ids
        index_dir = copied_index(args.index_dir, args.model_name_or_path, work)
        held_ids, texts, _ = rows_and_groups(index_dir, args.model_name_or_path)
        first_new, new_texts = max(int(i) for i in held_ids) + 1, every
    else:
        texts, new_texts = every[: args.corpus_size], every[args.corpus_size :]
        index_dir, first_new = build_index(args.model_name_or_path, texts, work), args.corpus_size
    service = ServiceProcess(index_dir, args.model_name_or_path, work / "serve.log")
    try:
        driven = asyncio.run(drive(service.url, texts, new_texts, first_new, args))
    finally:
        service.stop()
    acknowledged = driven.pop("acknowledged")
    report = check(index_dir, args.model_name_or_path, len(texts), acknowledged)
    ok = (
        driven["errors"] == 0
        and report["ids_doubled"] == 0
        and report["acknowledged_ids_lost"] == 0
        and report["rows"] == report["expected_rows"]
        and report.get("groups_equal_rebuild", report["grouped_questions"] == 0)  # no groups: none to differ
    )
    emit({"check": "mixed_load", "date": today(), "machine": machine(), "minutes": args.minutes,
          "concurrency": args.concurrency, "add_share": args.add_share, "corpus_size": len(texts), "index_dir": args.index_dir, **driven,
          "acknowledged_adds": len(acknowledged), **report, "ok": ok})  # fmt: skip
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
