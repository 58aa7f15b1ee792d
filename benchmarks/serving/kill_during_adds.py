#!/usr/bin/env python
"""Durability of `hfsiamese serve`: SIGKILL the service `--kills` times while clients add questions, restart it each
time, then check that every acknowledged add is searchable, that no row is half written and that the acknowledged
adds' duplicate groups are intact.

    python benchmarks/serving/kill_during_adds.py --model_name_or_path outputs/lstm_qqp --kills 3

The index is a grouped LanceDB index of the first `--corpus_size` questions of the embedded QQP pairs (built under
`--work_dir`). In each round `--concurrency` clients add new questions (new ids, one a request) until the service is
killed, a seeded 1 to 4 seconds into the round. An add is acknowledged when its 201 answer arrived; one cut off by the
kill may or may not be stored, and either is right. After the last restart: every acknowledged id is in the index
with the text that was sent, found by a search for that text, and in the group its answer named (or, where a later
add merged groups, still grouped with every question it was grouped with). Correctness only, not speed.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import emit, machine, today
from benchmarks.serving.served_index import (
    ServiceProcess,
    build_index,
    copied_index,
    rows_and_groups,
    script_parser,
    work_folder,
)
from benchmarks.serving.service_load import questions


async def adds_until_killed(
    service: ServiceProcess, new_texts: dict[int, str], ids: list[int], concurrency: int, kill_after_s: float
) -> dict[int, int | None]:
    """Clients add `ids` (one a request) while a timer SIGKILLs `service` after `kill_after_s`: the acknowledged
    ids and the group each answer gave."""
    acknowledged: dict[int, int | None] = {}
    queue = list(reversed(ids))

    async def adder(client: httpx.AsyncClient) -> None:
        while queue:
            question_id = queue.pop()
            body = {"questions": [{"id": question_id, "text": new_texts[question_id]}]}
            try:
                response = await client.post("/v1/questions", json=body)
            except httpx.HTTPError:  # cut off by the kill: not acknowledged
                return
            if response.status_code == 201:
                (added,) = response.json()["added"]
                acknowledged[question_id] = added.get("group")

    async def killer() -> None:
        await asyncio.sleep(kill_after_s)
        await asyncio.to_thread(service.kill)

    async with httpx.AsyncClient(base_url=service.url, timeout=60) as client:
        await asyncio.gather(killer(), *(adder(client) for _ in range(concurrency)))
    return acknowledged


def searchable(url: str, texts: dict[int, str]) -> int:
    """How many of `texts`' ids a search for their own text finds (among the largest k the service allows)."""
    found = 0
    with httpx.Client(base_url=url, timeout=120) as client:
        for question_id, text in texts.items():
            response = client.post("/v1/search", json={"query": text, "k": 100})
            found += response.status_code == 200 and any(
                m["id"] == question_id for m in response.json()["results"][0]["matches"]
            )
    return found


def main() -> None:
    parser = script_parser(__doc__, corpus_size=500, concurrency=4)
    parser.add_argument("--kills", type=int, default=3)
    args = parser.parse_args()
    if args.kills < 1:
        parser.error(f"--kills must be at least 1, got {args.kills}")
    work = work_folder(parser, args.work_dir, "hfsiamese-kill-during-adds-")
    rng = random.Random(args.seed)
    every = questions(limit=1_000_000)
    if args.index_dir:  # a site's index, copied: the adds are QQP's questions under ids after its own
        index_dir = copied_index(args.index_dir, args.model_name_or_path, work)
        held_ids, held_texts, initial_groups = rows_and_groups(index_dir, args.model_name_or_path)
        first_new = max(int(i) for i in held_ids) + 1
        text_before = dict(zip(held_ids, held_texts, strict=True))
        new_texts = {first_new + n: text for n, text in enumerate(every)}
    else:
        texts = every[: args.corpus_size]
        text_before = dict(enumerate(texts))
        new_texts = {len(texts) + n: text for n, text in enumerate(every[args.corpus_size :])}
        index_dir, initial_groups = build_index(args.model_name_or_path, texts, work), None
    acknowledged: dict[int, int | None] = {}
    attempted: list[int] = []
    pending = sorted(new_texts)
    model, log = args.model_name_or_path, work / "serve.log"
    for _ in range(args.kills):
        service = ServiceProcess(index_dir, model, log)
        round_ids, pending = pending[:2000], pending[2000:]
        got = asyncio.run(adds_until_killed(service, new_texts, round_ids, args.concurrency, rng.uniform(1, 4)))
        acknowledged.update(got)
        attempted += round_ids
    service = ServiceProcess(index_dir, model, log)
    try:
        with httpx.Client(base_url=service.url, timeout=120) as client:
            answered_groups = {i: client.get(f"/v1/questions/{i}/group").json() for i in acknowledged}
        found = searchable(service.url, {i: new_texts[i] for i in acknowledged})
    finally:
        service.stop()
    ids, held_texts, partition = rows_and_groups(index_dir, model)
    text_of = dict(zip(ids, held_texts, strict=True))
    group_members = {member: group for group in partition for member in group}
    stored_unacknowledged = [i for i in ids if i in new_texts and i not in acknowledged]
    report = {
        "check": "kill_during_adds", "date": today(), "machine": machine(), "kills": args.kills,
        "corpus_size": len(text_before), "index_dir": args.index_dir, "acknowledged_adds": len(acknowledged),
        "acknowledged_missing": sum(i not in text_of for i in acknowledged),
        "acknowledged_searchable": found,
        "half_written_rows": sum(text_of[i] != (new_texts[i] if i in new_texts else text_before[i]) for i in ids),
        "ids_doubled": len(ids) - len(set(ids)),
        "cut_off_adds_stored": len(stored_unacknowledged),
        "acknowledged_in_answered_group": sum(
            answered_groups[i].get("group") == group for i, group in acknowledged.items() if group is not None
        ),
        "acknowledged_grouped": sum(i in group_members for i in acknowledged),
    }  # fmt: skip
    report["ok"] = (
        report["acknowledged_missing"] == 0
        and found == len(acknowledged)
        and report["half_written_rows"] == 0
        and report["ids_doubled"] == 0
        # an index without groups (`--index_dir` of one) gives its adds none: there is nothing to keep
        and report["acknowledged_grouped"] == (0 if initial_groups == set() else len(acknowledged))
    )
    emit(report)
    sys.exit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
