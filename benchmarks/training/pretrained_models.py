#!/usr/bin/env python
"""Any pretrained model through the MiniLM recipe's settings, beside sentence-transformers' trainer on the same base.

    python benchmarks/training/pretrained_models.py --output_root outputs/pretrained_models \\
        --model all-mpnet-base-v2=$(../shared/models/get_all_mpnet_base_v2.sh) --model all-MiniLM-L6-v2=minilm
    python benchmarks/training/pretrained_models.py --output_root /tmp/pm --model all-MiniLM-L6-v2=minilm --max_steps 2 --max_train_pairs 64

For each `NAME=PATH` (`minilm`: the bundled all-MiniLM-L6-v2), as a user runs it:

- hfsiamese: `python recipes/train.py recipes/configs/minilm_qqp.yaml --model_name_or_path PATH` into
  OUTPUT_ROOT/NAME-hfsiamese (a finished run there is reused); training pairs/s are the Trainer's own
  `train_samples_per_second` (a sample is one pair).
- sentence-transformers: `SentenceTransformerTrainer` from the same folder, on the same labelled training pairs
  (the recipe's split) with the same batch (32) for one epoch, with OnlineContrastiveLoss (its best recipe for
  pair AP on QQP, `st_baselines.py`) at its other defaults (its `max_seq_length`, lr 5e-5); pairs/s = pairs / train_runtime.
- the base model untouched (zero-shot).

All are scored on the recipe's validation slice: pair average precision of the cosine of the two sides, and
duplicate retrieval MRR@10 over the slice's distinct questions. Flags this script does not know go to both
trainings' data (e.g. `--max_train_pairs`) and to recipes/train.py (e.g. `--max_steps`). Writes
OUTPUT_ROOT/pretrained_models.json and .md. Time the runs on a quiet machine: they run one after the other.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import (
    EMBEDDED_PAIRS,
    REPO,
    argument_parser,
    command_line,
    emit,
    machine,
    markdown_table,
    write_results,
)
from benchmarks.quality.matryoshka_minilm import evaluate_sizes, recipe_arguments, train

CONFIG = str(REPO / "recipes" / "configs" / "minilm_qqp.yaml")
COLUMNS = ("model", "trained by", "val AP", "MRR@10", "training pairs/s", "train s", "max length")


def sentence_transformers_run(
    path: str, out: Path, train_pairs: Any, validation: Any, training_args: Any, max_steps: int
) -> dict[str, Any]:
    """sentence-transformers' trainer from `path` on the recipe's pairs; its scores on the validation slice."""
    import numpy as np

    from benchmarks.training.st_baselines import sentence_transformer_scores, train_sentence_transformers
    from hfsiamese.evaluation import question_corpus, retrieval_of_embeddings
    from hfsiamese.metrics import pair_classification_metrics

    batch = training_args.per_device_train_batch_size
    model, timing = train_sentence_transformers(
        "online_contrastive", str(out), batch_size=batch,
        max_steps=max_steps, num_train_epochs=training_args.num_train_epochs, seed=training_args.seed, model_path=path,
        train_pairs=train_pairs,
    )  # fmt: skip
    return {
        **_scores(
            model,
            validation,
            sentence_transformer_scores,
            question_corpus,
            retrieval_of_embeddings,
            pair_classification_metrics,
            np,
        ),
        "train_s": round(timing["train_s"], 1),
        # Pairs seen per second: every step takes a batch of pairs, the epoch's last one fewer.
        "pairs_per_s": round(
            min(timing["steps"] * batch, timing["pairs"] * training_args.num_train_epochs) / timing["train_s"], 1
        ),
        "max_length": model.max_seq_length,
    }


def _scores(
    model, validation, pair_scores, question_corpus, retrieval_of_embeddings, pair_metrics, np
) -> dict[str, float]:
    """AP and MRR@10 of a SentenceTransformer model on the validation slice."""
    import torch

    labels = np.asarray(validation["label"], dtype=np.int64)
    scores = pair_scores(model, list(validation["question1"]), list(validation["question2"]))
    questions, groups = question_corpus(validation)
    corpus = torch.nn.functional.normalize(
        model.encode(questions, batch_size=128, convert_to_tensor=True).cpu(), dim=-1
    )
    retrieval = retrieval_of_embeddings(corpus, groups, k=(10,))
    return {
        "val_average_precision": round(pair_metrics(scores, labels)["average_precision"], 4),
        "val_mrr@10": round(retrieval["mrr@10"], 4),
    }


def zero_shot(path: str, validation: Any) -> dict[str, Any]:
    """The base model as its authors ship it (sentence-transformers' own encode)."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from benchmarks.training.st_baselines import sentence_transformer_scores
    from hfsiamese.evaluation import question_corpus, retrieval_of_embeddings
    from hfsiamese.metrics import pair_classification_metrics

    model = SentenceTransformer(path, device="cpu")
    scores = _scores(
        model,
        validation,
        sentence_transformer_scores,
        question_corpus,
        retrieval_of_embeddings,
        pair_classification_metrics,
        np,
    )
    return {**scores, "max_length": model.max_seq_length}


def main() -> None:
    import hfsiamese  # noqa: F401  first: picks OpenMP's wait policy before torch loads

    parser = argument_parser(__doc__, allow_abbrev=False)
    parser.add_argument("--output_root", required=True)
    parser.add_argument(
        "--model", action="append", required=True, help="NAME=PATH (PATH 'minilm': the bundled all-MiniLM-L6-v2)"
    )
    parser.add_argument("--skip_sentence_transformers", action="store_true")
    args, extra = parser.parse_known_args()
    flags = [flag for flag in extra if flag != "--"]
    output_root = Path(args.output_root)
    output_root.mkdir(parents=True, exist_ok=True)
    model_args, data_args, training_args = recipe_arguments(CONFIG, flags)

    from hfsiamese.training.preparation import load_splits
    from hfsiamese.utils.minilm import resolve_minilm_path

    splits = load_splits(data_args, default_train_file=EMBEDDED_PAIRS)  # the recipe's split, data flags applied
    validation = splits["validation"]
    rows = []
    for spec in args.model:
        name, _, path = spec.partition("=")
        path = resolve_minilm_path() if path == "minilm" else path
        rows.append({"model": name, "trained_by": "none (zero-shot)", **zero_shot(path, validation)})
        emit(rows[-1])
        run = train(f"{name}-hfsiamese", CONFIG, [*flags, "--model_name_or_path", path], output_root)
        size = evaluate_sizes(run["output_dir"], validation, [None], model_args.max_length, 128)[0]
        config = json.loads((Path(run["output_dir"]) / "config.json").read_text())
        rows.append({
            "model": name, "trained_by": "hfsiamese (MiniLM recipe)",
            "val_average_precision": size["val_average_precision"], "val_mrr@10": size["val_mrr@10"],
            "pairs_per_s": round(run["results"]["train_samples_per_second"], 1), "train_s": round(run["results"]["train_runtime"], 1),
            "max_length": config.get("max_seq_length"),
        })  # fmt: skip
        emit(rows[-1])
        if not args.skip_sentence_transformers:
            st = sentence_transformers_run(
                path, output_root / f"{name}-st", splits["train"], validation, training_args, training_args.max_steps
            )
            rows.append({"model": name, "trained_by": "sentence-transformers (OnlineContrastiveLoss)", **st})
            emit(rows[-1])

    table = markdown_table(
        COLUMNS,
        ((r["model"], r["trained_by"], r["val_average_precision"], r["val_mrr@10"], r.get("pairs_per_s", "–"),
          r.get("train_s", "–"), r["max_length"]) for r in rows),
    )  # fmt: skip
    command = command_line(__file__)
    result = {
        "command": command,
        "machine": machine(),
        "validation_pairs": len(validation),
        "flags": flags,
        "rows": rows,
    }
    write_results(output_root, "pretrained_models", result, table, f"{machine()}, {len(validation)} validation pairs")


if __name__ == "__main__":
    main()
