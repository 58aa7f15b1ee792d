#!/usr/bin/env python
"""Quality on the QQP validation slice (suite 4): every recipe of both libraries and the seeds' model.

    python benchmarks/quality_table.py [--only NAME ...] [--append]

All runs train on the training side of the recipes' QQP split (`qqp_slices.py`: 9,000 labelled
pairs of `recipes/data/qqp_dev.tsv`, split by duplicate group) and are scored on the same 1,000
validation pairs, never trained on. Each row is its own process. Rows:

- `zero-shot MiniLM`: all-MiniLM-L6-v2 untrained (mean pooling), the floor every MiniLM run must beat.
- `st mnrl`, `st online_contrastive`: sentence-transformers' trainer and losses (`st_baselines.py`)
  on the same MiniLM folder, one epoch over the rows their loss takes, batch 32 like our recipe.
- `hfsiamese MiniLM <loss>`: `recipes/train.py recipes/configs/minilm_qqp.yaml --loss <loss>`, one
  epoch over the rows each loss takes (`--train_view auto`); the recipe's own loss is `contrastive_ranking`.
- `hfsiamese LSTM random` / `glove`: `recipes/configs/lstm_qqp.yaml` as shipped (contrastive_ranking),
  and with GloVe 6B 50d embeddings (`--embedding_init glove --embedding_dim 50`, the `glove` extra);
  `hfsiamese LSTM random <loss>`: the same with another loss.
- `seeds`: `seeds_siamese.py` (the seeds' Trax model re-implemented), 10 epochs.

Figures: AP and ROC-AUC of the cosine similarities (the head's P(duplicate) for
verification_identification), accuracy and F1 at the threshold that maximises accuracy on these
same pairs (one protocol for every row; optimistic for all alike), train time (the Trainer's
train_runtime; the seeds' loop time), and the second job, duplicate retrieval: MRR@10 and
recall@10 of every validation question searching the slice's other questions for the rest of its
duplicate group (`hfsiamese.evaluation.evaluate_retrieval`; not computed for the seeds' model).
For mean ± sd over seeds of the recipes, see `both_jobs.py`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
sys.path.insert(0, str(BENCHMARKS))

MINILM_LOSSES = (
    "hard_negative_triplet",
    "triplet",
    "contrastive",
    "online_contrastive",
    "contrastive_ranking",
    "multiple_negatives_ranking",
    "verification_identification",
)
BATCH_SIZE = 32  # the MiniLM recipe's


def configurations() -> dict[str, list[str]]:
    """Row name → the command that produces its JSON line."""
    python = sys.executable
    rows = {"zero-shot MiniLM": [python, __file__, "--worker", "zero_shot"]}
    for loss in ("mnrl", "online_contrastive"):
        rows[f"st {loss}"] = [python, __file__, "--worker", f"st:{loss}"]
    for loss in MINILM_LOSSES:
        rows[f"hfsiamese MiniLM {loss}"] = [python, __file__, "--worker", "recipe:minilm_qqp.yaml", "--loss", loss]
    rows["hfsiamese LSTM random"] = [python, __file__, "--worker", "recipe:lstm_qqp.yaml"]
    rows["hfsiamese LSTM glove"] = [
        python,
        __file__,
        "--worker",
        "recipe:lstm_qqp.yaml",
        "--embedding_init",
        "glove",
        "--embedding_dim",
        "50",
    ]
    for loss in ("hard_negative_triplet", "contrastive"):
        rows[f"hfsiamese LSTM random {loss}"] = [python, __file__, "--worker", "recipe:lstm_qqp.yaml", "--loss", loss]
    rows["seeds"] = [python, str(BENCHMARKS / "seeds_siamese.py"), "--epochs", "10"]
    return rows


def _scored(scores, labels, train_s: float | None, steps: int | None) -> dict:
    from recipe_runs import eval_figures

    from hfsiamese.metrics import pair_classification_metrics

    metrics = pair_classification_metrics(scores, labels)
    figures = eval_figures({f"eval_{name}": value for name, value in metrics.items()})  # the recipes' keys
    return {"train_s": None if train_s is None else round(train_s, 1), "steps": steps, **figures}


def _retrieval(model, tokenizer, validation) -> dict:
    """MRR@10 and recall@10 of duplicate retrieval over the validation pairs' distinct questions, rounded."""
    from qqp_slices import validation_retrieval

    return {name: round(value, 4) for name, value in validation_retrieval(model, tokenizer, validation).items()}


class _SentenceTransformerEncoder:
    """`encode(texts, tokenizer, ...)` as `evaluate_retrieval` calls it, over a SentenceTransformer."""

    def __init__(self, model) -> None:
        self.model = model

    def encode(self, texts, tokenizer=None, *, batch_size: int = 256, **_):
        import torch

        return torch.from_numpy(self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True))


def worker(kind: str, extra: list[str]) -> dict:
    from qqp_slices import qqp_train_and_validation

    _, validation = qqp_train_and_validation()
    question1, question2, labels = (
        list(validation["question1"]),
        list(validation["question2"]),
        list(validation["label"]),
    )
    if kind == "zero_shot":
        from transformers import AutoTokenizer

        from hfsiamese import SiameseModel
        from hfsiamese.bi_encoder.minilm import resolve_minilm_path

        model = SiameseModel.from_encoder_pretrained(resolve_minilm_path())
        tokenizer = AutoTokenizer.from_pretrained(resolve_minilm_path())
        scored = _scored(model.similarity(question1, question2, tokenizer).numpy(), labels, None, 0)
        return {**scored, **_retrieval(model, tokenizer, validation)}
    if kind.startswith("st:"):
        from st_baselines import sentence_transformer_scores, train_sentence_transformers

        with tempfile.TemporaryDirectory() as tmp:
            model, timing = train_sentence_transformers(kind[3:], tmp, batch_size=BATCH_SIZE, num_train_epochs=1)
            scores = sentence_transformer_scores(model, question1, question2)
            retrieval = _retrieval(_SentenceTransformerEncoder(model), None, validation)
        return {**_scored(scores, labels, timing["train_s"], timing["steps"]), **retrieval}
    from recipe_runs import eval_figures, trained_recipe

    config = REPO / "recipes" / "configs" / kind.removeprefix("recipe:")
    with trained_recipe(config, ["--eval_strategy", "no", "--save_strategy", "no", *extra]) as run:
        results, steps = run["results"], run["steps"]
        from transformers import AutoModel, AutoTokenizer

        model_dir = run["output_dir"]
        retrieval = _retrieval(
            AutoModel.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir), validation
        )
    # The recipe scores its own validation split, the same pairs (checked by eval_num_pairs).
    if results["eval_num_pairs"] != len(labels):
        sys.exit(f"the recipe scored {results['eval_num_pairs']} validation pairs, expected {len(labels)}")
    return {"train_s": round(results["train_runtime"], 1), "steps": steps, **eval_figures(results), **retrieval}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", help="run only these rows (names as printed)")
    parser.add_argument("--append", action="store_true", help="append the table to benchmarks/README.md")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args, extra = parser.parse_known_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    if args.worker:
        print(json.dumps(worker(args.worker, extra)))
        return

    from machine_info import machine
    from readme_tables import append_section, markdown_table

    rows = []
    for name, command in configurations().items():
        if args.only and name not in args.only:
            continue
        result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
        if result.returncode != 0:
            sys.exit(f"{name} failed:\n{result.stderr[-4000:]}")
        row = {"name": name, **json.loads(result.stdout.strip().splitlines()[-1])}
        if name == "seeds":  # seeds_siamese.py reports accuracy at 0.7 and at the calibrated threshold
            row = {
                "name": name,
                "steps": row["steps"],
                "train_s": round(row["train_s"], 1),
                "eval_accuracy": row["eval_accuracy_calibrated"],
                "eval_f1": row["eval_f1_calibrated"],
                **{k: row[k] for k in ("eval_average_precision", "eval_roc_auc", "eval_threshold")},
            }
        rows.append(row)
        print(json.dumps(row), flush=True)
    if not args.append:
        return
    command = "python benchmarks/quality_table.py " + " ".join(a for a in sys.argv[1:] if a != "--append")
    lines = [
        "",
        f"### {dt.date.today().isoformat()}, {machine()}: `{command.strip()}`",
        "",
        *markdown_table(
            ["model", "steps", "train s", "val AP", "ROC-AUC", "accuracy", "F1", "τ", "MRR@10", "recall@10"],
            [
                [
                    r["name"],
                    r["steps"],
                    r["train_s"],
                    r["eval_average_precision"],
                    r["eval_roc_auc"],
                    r["eval_accuracy"],
                    r["eval_f1"],
                    r["eval_threshold"],
                    r.get("retrieval_mrr@10", ""),
                    r.get("retrieval_recall@10", ""),
                ]
                for r in rows
            ],
        ),
    ]
    append_section(lines)


if __name__ == "__main__":
    main()
