#!/usr/bin/env python
"""What the group-aware sampler holds while it orders an epoch of a prepared folder's training pairs, a pair at a time.

    python benchmarks/training/sampler_memory.py --prepared PREPARED

The training split's group ids are read as training reads them, the sampler (`NoDuplicateGroupSampler`) is built
and one epoch ordered, with numpy's allocations traced (`tracemalloc`): the bytes a pair the sampler keeps for the
run, the epoch's peak (those included; the caller's group-id column excluded), and the seconds of each. The order's
checksum shows that two versions of the code make the same epoch. Results: one JSON line.
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, command_line, emit, machine, today


def measure(prepared: str, batch_size: int, seed: int, epoch: int) -> dict[str, Any]:
    """The sampler's kept and peak bytes a pair, and its seconds, over the training split of `prepared`."""
    import numpy as np

    from hfsiamese.data.question_identity import column_numpy
    from hfsiamese.data.sampler import NoDuplicateGroupSampler
    from hfsiamese.preparation import load_prepared_splits

    groups = column_numpy(load_prepared_splits(prepared)["train"], "group_id")
    pairs = len(groups)
    tracemalloc.start()
    try:
        started = time.perf_counter()
        sampler = NoDuplicateGroupSampler(groups, batch_size, seed=seed)
        built = time.perf_counter()
        kept = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        order = sampler.epoch_order(epoch)
        ordered = time.perf_counter()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    weights = np.arange(len(order), dtype=np.int64) % 1_000_003
    return {
        "training_pairs": pairs,
        "kept_bytes_per_pair": round(kept / pairs, 1),
        "epoch_peak_bytes_per_pair": round(max(peak, kept) / pairs, 1),
        "construction_s": round(built - started, 2),
        "epoch_s": round(ordered - built, 2),
        "order_checksum": int((order.astype(np.int64) * weights % 1_000_003).sum()),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argument_parser(__doc__)
    parser.add_argument("--prepared", required=True, help="a folder `hfsiamese prepare` wrote")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--epoch", type=int, default=0)
    args = parser.parse_args(argv)
    if not Path(args.prepared).is_dir():
        parser.error(f"--prepared {args.prepared} is not a folder")
    result = {"command": command_line(__file__, argv), "machine": machine(), "date": today(),
              **measure(args.prepared, args.batch_size, args.seed, args.epoch)}  # fmt: skip
    emit(result)
    return result


if __name__ == "__main__":
    main()
