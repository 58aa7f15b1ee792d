"""`hfsiamese mine`: hard negatives for each duplicate pair, found by a bi-encoder, written as training data.

    hfsiamese split minilm_qqp --output_file outputs/qqp_validation.jsonl     # the recipe's held-out pairs
    hfsiamese mine --pairs train.tsv --model_name_or_path outputs/minilm_qqp --output_path outputs/mined.parquet \\
        --num_negatives 4 --skip_top 2 --max_rank 30 --relative_margin 0.05 \\
        --held_out_file outputs/qqp_validation.jsonl --format groups-with-scores
    hfsiamese mine mine.yaml --cross_encoder outputs/cross_minilm_qqp      # a config file, then flags

The pairs (any file `hfsiamese.data.load_pairs` reads, or a `save_to_disk` folder; `is_duplicate` is read as the
label) give the queries (question1 of each duplicate pair) and the candidates (all their questions). Every question is
embedded once by --model_name_or_path and searched (--store exact or faiss) in chunks of --query_chunk_size queries.
A negative is never of the query's duplicate group (duplicates are transitive) nor a held-out question (--held_out_file:
a pair file such as `hfsiamese split`'s, or a .txt file of question texts or ids, one a line; pairs holding one give
no query either). --skip_top, --max_rank, --margin, --relative_margin and --max_score filter the candidates;
--cross_encoder drops those it calls duplicates (score at or above its calibrated threshold, or
--cross_encoder_threshold; --bf16 runs it in bfloat16). --output_path's suffix picks the file: .parquet, .jsonl, or
none (a `save_to_disk` folder); an existing one is refused unless --overwrite_output. --format: triplet, n-tuple,
labeled-pair or groups-with-scores (score them with a teacher by `hfsiamese teacher-scores`). Prints one JSON line: the
counts.

Resumable: the questions are embedded --shard_size at a time and each chunk of queries is written as it is found, into
--shards_dir (default: the output path + `.shards`); stopped anywhere (a crash, a killed job, Ctrl-C), the same
command run again skips what it finished and writes what an unstopped run writes. A folder of another run (other
pairs, model, filters, search or cross-encoder) is refused before any work. The folder is removed once the output is
written (--keep_shards keeps it).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.command_parser import command_parser
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.data.negative_filters import NegativeFilters
from hfsiamese.mining.dataset_files import OUTPUT_PATH_HELP, check_output_path, load_dataset_file, save_dataset_file
from hfsiamese.mining.mined_formats import OUTPUT_FORMATS
from hfsiamese.mining.negative_mining import MINING_BACKENDS
from hfsiamese.search.backends import store_and_runtime
from hfsiamese.utils.console import configure_quiet_console

DESCRIPTION = "Mine hard negatives for each duplicate pair with a bi-encoder; a config file may come first."


@dataclass
class MineArguments:
    """What `hfsiamese mine` reads, how it filters, and what it writes."""

    _argument_group_name = "mine: the pairs, the models, the filters and the output"  # a --help section

    pairs: str = field(metadata={"help": "Pair file (any format load_pairs reads) or a save_to_disk folder."})
    model_name_or_path: str = field(metadata={"help": "The bi-encoder that searches (a Siamese checkpoint)."})
    output_path: str = field(metadata={"help": OUTPUT_PATH_HELP})
    format: str = field(default="triplet", metadata={"help": "Layout of the output.", "choices": OUTPUT_FORMATS})
    overwrite_output: bool = field(default=False, metadata={"help": "Replace an existing --output_path."})
    num_negatives: int = field(default=1, metadata={"help": "Negatives per query."})
    skip_top: int = field(default=0, metadata={"help": "Skip the best that many candidates (likely duplicates)."})
    max_rank: int = field(default=50, metadata={"help": "Look no further than this rank."})
    margin: float | None = field(
        default=None, metadata={"help": "A negative scores at most s(query, positive) - margin."}
    )
    relative_margin: float | None = field(
        default=None, metadata={"help": "A negative scores at most s(query, positive) * (1 - relative_margin)."}
    )
    max_score: float | None = field(default=None, metadata={"help": "A negative scores at most this (cosine)."})
    held_out_file: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Questions never mined: a pair file (e.g. hfsiamese split's) or a .txt of texts or ids; repeatable.",
            "action": "extend",
        },
    )
    cross_encoder: str | None = field(
        default=None, metadata={"help": "A cross-encoder that drops the candidates it calls duplicates."}
    )
    cross_encoder_threshold: float | None = field(
        default=None, metadata={"help": "Its score at or above which a candidate is a duplicate (default: its own)."}
    )
    bf16: bool = field(
        default=False,
        metadata={
            "help": "Run the cross-encoder under bfloat16 autocast (faster where the CPU has AMX or AVX512-BF16); "
            "the bi-encoder's search is unchanged."
        },
    )
    store: str | None = field(
        default=None, metadata={"help": "The search's store: exact (default) or faiss.", "choices": MINING_BACKENDS}
    )
    backend: str | None = field(default=None, metadata={"help": "Deprecated: use --store.", "choices": MINING_BACKENDS})
    batch_size: int = field(default=64, metadata={"help": "Texts per encoding batch, pairs per cross-encoder batch."})
    max_length: int | None = field(default=None, metadata={"help": "Tokens kept per text (default: the model's)."})
    query_chunk_size: int = field(
        default=1024,
        metadata={"help": "Queries searched at once (bounds memory): the search work a stopped run can lose."},
    )
    shards_dir: str | None = field(
        default=None, metadata={"help": "Folder of the resumable work (default: --output_path + '.shards')."}
    )
    shard_size: int = field(
        default=10_000, metadata={"help": "Questions per embedding shard: the encoding work a stopped run can lose."}
    )
    keep_shards: bool = field(default=False, metadata={"help": "Keep --shards_dir once the output is written."})

    def __post_init__(self) -> None:
        store, _ = store_and_runtime(self.store, self.backend, flag=True)  # one vocabulary with `hfsiamese search`
        self.store, self.backend = store or "exact", None
        self.filters()  # a filter out of range is a usage error, said before any work
        for name in ("shard_size", "query_chunk_size", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be a positive integer, got {getattr(self, name)}")
        if self.bf16 and self.cross_encoder is None:
            raise ValueError("--bf16 runs the cross-encoder in bfloat16: pass --cross_encoder too")

    def filters(self) -> NegativeFilters:
        return NegativeFilters(
            num_negatives=self.num_negatives,
            skip_top=self.skip_top,
            max_rank=self.max_rank,
            margin=self.margin,
            relative_margin=self.relative_margin,
            max_score=self.max_score,
        )


def read_pairs(path: str) -> Any:
    """The pairs: a `save_to_disk` folder as it is, any other file through `load_pairs`."""
    if Path(path).is_dir():
        return load_dataset_file(path)
    from hfsiamese.data.pair_loading import load_pairs

    return load_pairs(path)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """`hfsiamese mine --pairs PAIRS --model_name_or_path MODEL --output_path OUT`: the counts (printed)."""
    parser = command_parser(MineArguments, prog="hfsiamese mine", description=DESCRIPTION)
    (args,) = parse_config_and_flags(parser, list(sys.argv[1:] if argv is None else argv))
    filters = args.filters()
    output = check_output_path(args.output_path, overwrite=args.overwrite_output)
    shards_dir = Path(args.shards_dir) if args.shards_dir is not None else output.with_name(output.name + ".shards")
    configure_quiet_console()
    import torch

    from hfsiamese.loading import load_siamese_model
    from hfsiamese.mining.held_out import HeldOutQuestions
    from hfsiamese.mining.mining_shards import MiningFolder
    from hfsiamese.mining.negative_mining import mine_negatives

    held_out = HeldOutQuestions()
    for file in args.held_out_file:
        held_out |= HeldOutQuestions.from_file(file)
    pairs = read_pairs(args.pairs)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cross_encoder = None
    if args.cross_encoder is not None:
        from hfsiamese.cross_encoder.model import CrossEncoder

        cross_encoder = CrossEncoder.from_pretrained(args.cross_encoder).to(device)
    model = load_siamese_model(args.model_name_or_path)
    if hasattr(model, "to"):
        model = model.to(device)
    mined = mine_negatives(
        pairs,
        model,
        filters=filters,
        held_out=held_out,
        cross_encoder=cross_encoder,
        cross_encoder_threshold=args.cross_encoder_threshold,
        cross_encoder_dtype=torch.bfloat16 if args.bf16 else None,
        store=args.store,
        index_options={"max_length": args.max_length},
        batch_size=args.batch_size,
        query_chunk_size=args.query_chunk_size,
        shards_dir=shards_dir,
        shard_size=args.shard_size,
        show_progress_bar=True,
    )
    dataset = mined.to_dataset(args.format)
    save_dataset_file(dataset, output, overwrite=args.overwrite_output)
    if not args.keep_shards:
        MiningFolder(shards_dir).remove()
    summary = {"output_path": str(output), "format": args.format, "rows": len(dataset), **mined.summary()}
    print(json.dumps(summary, sort_keys=True))
    return summary


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
