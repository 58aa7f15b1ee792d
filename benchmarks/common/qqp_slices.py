"""The recipe's data split, for benchmarks: computed by the package's `load_splits`, as `recipes/train.py` does.

The benchmarks train and validate on exactly the pairs a recipe does (by default
`recipes/configs/lstm_qqp.yaml`: the embedded QQP pairs split by connected question components,
validation fraction 0.1, seed 42), so their validation figures compare with the recipe runs and
the validation pairs are never trained on.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import datasets

from benchmarks.common.harness import EMBEDDED_PAIRS, REPO
from hfsiamese.cli.config_and_flags import read_config_file
from hfsiamese.training.arguments import DataArguments
from hfsiamese.training.preparation import load_splits

DEFAULT_CONFIG = REPO / "recipes" / "configs" / "lstm_qqp.yaml"


def recipe_splits(config: str | Path = DEFAULT_CONFIG) -> datasets.DatasetDict:
    """The splits `recipes/train.py` makes from the data keys of `config`."""
    data_keys = {f.name for f in dataclasses.fields(DataArguments)}
    data_args = DataArguments(**{k: v for k, v in read_config_file(str(config)).items() if k in data_keys})
    return load_splits(data_args, default_train_file=EMBEDDED_PAIRS)


def qqp_train_and_validation(config: str | Path = DEFAULT_CONFIG) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Training pairs (with `group_id`) and labelled validation pairs, as the recipe splits them."""
    splits = recipe_splits(config)
    return splits["train"], splits["validation"]


def validation_retrieval(model, tokenizer, validation: datasets.Dataset, **encode) -> dict[str, float]:
    """
    The second job on a validation slice: every distinct question searches the slice's others for the
    rest of its duplicate group (`hfsiamese.evaluation.evaluate_retrieval`); `retrieval_mrr@10` and
    `retrieval_recall@10`. `encode` goes to `model.encode` (batch_size, max_length).
    """
    from hfsiamese.evaluation import evaluate_retrieval, question_corpus

    questions, groups = question_corpus(validation)
    metrics = evaluate_retrieval(model, questions, groups, tokenizer, k=(10,), **encode)
    return {f"retrieval_{name}": metrics[name] for name in ("mrr@10", "recall@10")}
