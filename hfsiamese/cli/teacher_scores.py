"""`hfsiamese teacher-scores`: a teacher's score of every (query, positive) and (query, negative) of mined groups.

    hfsiamese teacher-scores --groups outputs/mined.parquet --teacher outputs/cross_minilm_qqp \\
        --output_path outputs/mined_scored.parquet --batch_size 128
    # stopped (a crash, Ctrl-C)? run the same command again: it continues from the finished shards

The groups are `hfsiamese mine --format groups-with-scores`' output (columns query, positive, negatives; a .parquet,
.jsonl or `save_to_disk` folder). The teacher is a cross-encoder (its score in [0, 1]) or a bi-encoder (the cosine).
Rows are scored --shard_size at a time into --shards_dir (default: the output path + `.shards`), each shard a file
moved into place whole; a rerun skips the shards there, and refuses a folder of other rows, shard size or teacher.
When every shard is done the groups are written with their `teacher_scores` column to --output_path (an existing one
is refused unless --overwrite_output) and the shards folder is removed (--keep_shards keeps it). Prints one JSON line.
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
from hfsiamese.mining.dataset_files import OUTPUT_PATH_HELP, check_output_path, load_dataset_file, save_dataset_file
from hfsiamese.utils.console import configure_quiet_console

DESCRIPTION = (
    "Score mined groups with a teacher (cross-encoder or bi-encoder), resumably; a config file may come first."
)


@dataclass
class TeacherScoresArguments:
    """What `hfsiamese teacher-scores` scores, with which teacher, and where it writes."""

    _argument_group_name = "teacher scores: the groups, the teacher and the output"  # a --help section

    groups: str = field(metadata={"help": "Mined groups (query, positive, negatives): .parquet, .jsonl or a folder."})
    teacher: str = field(metadata={"help": "A cross-encoder or a bi-encoder (folder or Hub id)."})
    output_path: str = field(metadata={"help": OUTPUT_PATH_HELP})
    shards_dir: str | None = field(
        default=None, metadata={"help": "Folder of the resumable shards (default: --output_path + '.shards')."}
    )
    shard_size: int = field(default=10_000, metadata={"help": "Rows per shard: the work a stopped run can lose."})
    batch_size: int = field(default=64, metadata={"help": "Pairs (cross-encoder) or texts (bi-encoder) per batch."})
    max_length: int | None = field(default=None, metadata={"help": "Tokens kept (default: the teacher's)."})
    bf16: bool = field(
        default=False,
        metadata={"help": "Run the teacher under bfloat16 autocast (faster where the CPU has AMX or AVX512-BF16)."},
    )
    overwrite_output: bool = field(default=False, metadata={"help": "Replace an existing --output_path."})
    keep_shards: bool = field(default=False, metadata={"help": "Keep --shards_dir once the output is written."})


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """`hfsiamese teacher-scores --groups MINED --teacher MODEL --output_path OUT`: a summary (printed)."""
    parser = command_parser(TeacherScoresArguments, prog="hfsiamese teacher-scores", description=DESCRIPTION)
    (args,) = parse_config_and_flags(parser, list(sys.argv[1:] if argv is None else argv))
    output = check_output_path(args.output_path, overwrite=args.overwrite_output)
    shards_dir = Path(args.shards_dir) if args.shards_dir is not None else output.with_name(output.name + ".shards")
    configure_quiet_console()
    import torch

    from hfsiamese.loading import load_model
    from hfsiamese.mining.score_shards import remove_score_shards
    from hfsiamese.mining.teacher_scoring import check_groups, score_groups

    groups = load_dataset_file(args.groups)
    check_groups(groups, args.groups)  # before the teacher is loaded
    teacher = load_model(args.teacher)
    if torch.cuda.is_available() and hasattr(teacher, "to"):
        teacher = teacher.to("cuda")
    scored = score_groups(
        groups,
        teacher,
        shards_dir,
        shard_size=args.shard_size,
        batch_size=args.batch_size,
        max_length=args.max_length,
        show_progress_bar=True,
        dtype=torch.bfloat16 if args.bf16 else None,
    )
    save_dataset_file(scored, output, overwrite=args.overwrite_output)
    if not args.keep_shards:
        remove_score_shards(shards_dir)
    summary = {"output_path": str(output), "rows": len(scored), "teacher": args.teacher}
    print(json.dumps(summary, sort_keys=True))
    return summary


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
