#!/usr/bin/env python
"""How many pairs per second the training data loader can feed, without a model: is the loader the bottleneck?

    python benchmarks/training/loader_throughput.py --prepared PREPARED --num_workers 4 --batch_size 64

The loader a run from a prepared folder trains with (`hfsiamese prepare`): the training rows memory-mapped from the
folder's shards, batches drawn by the group-aware sampler (no two pairs of one duplicate group in a batch), read as
one Arrow table each and tokenised in the collator (`TokenizingPairCollator`), with `--num_workers` DataLoader
processes as `--dataloader_num_workers` sets them. It iterates `--batches` batches after `--warmup` and reports
pairs/s. Compare it with what the model trains: an H100 running a plain loop of all-MiniLM-L6-v2 takes about 30k
pairs/s, so a loader below that keeps such a GPU waiting (add workers, or cores). Results: one JSON line, and with
`--output_dir` FOLDER/loader_throughput.json and .md.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, command_line, emit, machine, markdown_table, today, write_results


def training_loader(prepared: str, tokenizer: Any, *, batch_size: int, num_workers: int, seed: int, max_length: int):
    """The DataLoader a bi-encoder run from `prepared` trains with (as `SiameseTrainer` builds it), and its rows."""
    import torch

    from hfsiamese.bi_encoder.batch_sampling import training_sampler
    from hfsiamese.data.arrow_batches import arrow_batch_dataset
    from hfsiamese.data.collator import PAIR_BATCH_COLUMNS
    from hfsiamese.data.preprocessing import untokenized_pairs
    from hfsiamese.data.tokenizing_collator import TEXT_SIDES, TokenizingPairCollator
    from hfsiamese.preparation import load_prepared_splits

    train = untokenized_pairs(load_prepared_splits(prepared)["train"])
    sampler = training_sampler(train, batch_size=batch_size, seed=seed)
    rows = arrow_batch_dataset(train, PAIR_BATCH_COLUMNS + tuple(column for _, column in TEXT_SIDES))
    loader = torch.utils.data.DataLoader(
        rows,
        batch_size=batch_size,
        sampler=sampler,
        collate_fn=TokenizingPairCollator(tokenizer, max_length=max_length),
        num_workers=num_workers,
        persistent_workers=num_workers > 0,
    )
    return loader, len(train)


def measure(args: Any) -> dict[str, Any]:
    """Pairs/s over `args.batches` batches after `args.warmup` (worker start-up and first reads excluded)."""
    from transformers import AutoTokenizer

    from hfsiamese.utils.minilm import resolve_minilm_path

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or resolve_minilm_path())
    loader, rows = training_loader(args.prepared, tokenizer, batch_size=args.batch_size, num_workers=args.num_workers,
                                   seed=args.seed, max_length=args.max_length)  # fmt: skip
    batches = iter(loader)
    pairs, started = 0, None
    for index in range(args.warmup + args.batches):
        if index == args.warmup:
            started, pairs = time.perf_counter(), 0
        try:
            batch = next(batches)
        except StopIteration:  # fewer batches than asked: an epoch is all there is
            break
        pairs += int(batch["input_ids_a"].shape[0])
    seconds = time.perf_counter() - (started or time.perf_counter())
    return {
        "training_pairs": rows,
        "batch_size": args.batch_size,
        "num_workers": args.num_workers,
        "max_length": args.max_length,
        "pairs_measured": pairs,
        "seconds": round(seconds, 3),
        "pairs_per_second": round(pairs / seconds, 1) if seconds > 0 else None,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argument_parser(__doc__)
    parser.add_argument("--prepared", required=True, help="a folder `hfsiamese prepare` wrote")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--num_workers", type=int, default=0, help="DataLoader processes (--dataloader_num_workers)")
    parser.add_argument("--batches", type=int, default=200, help="batches measured")
    parser.add_argument("--warmup", type=int, default=10, help="batches read before measuring")
    parser.add_argument("--max_length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--tokenizer", default=None, help="default: the bundled all-MiniLM-L6-v2's")
    parser.add_argument("--output_dir", default=None)
    args = parser.parse_args(argv)
    result = {"command": command_line(__file__, argv), "machine": machine(), "date": today(), **measure(args)}
    emit(result)
    if args.output_dir:
        columns = ["training pairs", "batch", "workers", "pairs/s"]
        row = [result["training_pairs"], args.batch_size, args.num_workers, result["pairs_per_second"]]
        write_results(Path(args.output_dir), "loader_throughput", result, markdown_table(columns, [row]),
                      f"{result['machine']}, {result['date']}")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
