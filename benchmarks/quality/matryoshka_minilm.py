#!/usr/bin/env python
"""Matryoshka training on the MiniLM recipe: its shipped loss alone vs wrapped in `matryoshka`, at full size and cut.

    python benchmarks/quality/matryoshka_minilm.py --output_root outputs/matryoshka_minilm
    python benchmarks/quality/matryoshka_minilm.py --output_root /tmp/mat --max_steps 2 --max_train_pairs 64 --max_eval_pairs 64

Trains `recipes/train.py CONFIG` (default `recipes/configs/minilm_qqp.yaml`) twice, into OUTPUT_ROOT/shipped
and OUTPUT_ROOT/matryoshka: once as shipped, once with `--loss matryoshka --matryoshka_loss <the shipped loss>
--matryoshka_dims 384 256 128 64` (the shipped loss's options, from the config, go to it unchanged). Any flag
this script does not know goes to both trainings (after a `--` or not). A folder that already holds a finished
run (`all_results.json`) is evaluated again without retraining; each training's output is in OUTPUT_ROOT/NAME.log.

Both models are then scored on the recipe's validation slice (the pairs it split off and calibrated on, with the
same data flags), at full size and at `--eval_dim` dimensions (the embeddings' first d numbers, L2-normalised
again; done here on `encode`'s output rather than with an option of `encode`): pair average precision of the
cosine of the two sides, duplicate retrieval MRR@10 and recall@10 over the slice's distinct questions (each
searches all the others for the rest of its duplicate group), and the index memory per vector (float32, as
`DuplicateIndex` keeps its embeddings). Writes OUTPUT_ROOT/matryoshka_minilm.json and .md and prints the table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import (
    EMBEDDED_PAIRS,
    REPO,
    TRAIN_SCRIPT,
    argument_parser,
    command_line,
    emit,
    machine,
    markdown_table,
    write_results,
)

DEFAULT_CONFIG = REPO / "recipes" / "configs" / "minilm_qqp.yaml"
RUNS = ("shipped", "matryoshka")
COLUMNS = ("run", "loss", "dims", "val AP", "MRR@10", "recall@10", "bytes per vector", "MiB per 1M questions")


def recipe_arguments(config: str, flags: list[str]) -> tuple[Any, Any, Any]:
    """The model, data and training arguments `recipes/train.py CONFIG FLAGS` runs with (parsed as it parses them)."""
    from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
    from hfsiamese.cli.command_parser import command_parser
    from hfsiamese.cli.config_and_flags import parse_config_and_flags
    from hfsiamese.training.arguments import DataArguments, ModelArguments

    parser = command_parser((ModelArguments, DataArguments, SiameseTrainingArguments), prog="matryoshka_minilm.py")
    return parse_config_and_flags(parser, [config, *flags, "--output_dir", str(REPO / "outputs" / "unused")])


def train(name: str, config: str, flags: list[str], output_root: Path) -> dict[str, Any]:
    """Run the recipe into OUTPUT_ROOT/NAME (or reuse the finished run there); its all_results.json and wall time."""
    out = output_root / name
    if (out / "all_results.json").is_file():
        print(f"{name}: reusing the finished run in {out}", flush=True)
        return {"output_dir": str(out), "results": json.loads((out / "all_results.json").read_text()), "wall_s": None}
    command = [
        sys.executable,
        str(TRAIN_SCRIPT),
        config,
        *flags,
        "--output_dir",
        str(out),
        "--disable_tqdm",
        "true",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    log = output_root / f"{name}.log"
    print(f"{name}: {' '.join(command[1:])} (log: {log})", flush=True)
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as handle:
        result = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, cwd=REPO, env=env, check=False)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{name} training failed (exit {result.returncode}); the end of {log}:\n{log.read_text()[-4000:]}")
    return {
        "output_dir": str(out),
        "results": json.loads((out / "all_results.json").read_text()),
        "wall_s": round(wall, 1),
    }


def cut(embeddings: Any, dim: int) -> Any:
    """The first `dim` numbers of each row, L2-normalised again: the embedding at that size."""
    import torch.nn.functional as F

    return F.normalize(embeddings[:, :dim], p=2, dim=-1)


def evaluate_sizes(
    model_dir: str, validation: Any, dims: list[int | None], max_length: int | None, batch_size: int
) -> list[dict[str, Any]]:
    """Pair AP, retrieval and memory per vector of one trained folder at each size (None: the full one)."""
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    import hfsiamese  # noqa: F401  (registers the auto classes)
    from hfsiamese.evaluation import question_corpus, retrieval_of_embeddings
    from hfsiamese.metrics import pair_classification_metrics

    model = AutoModel.from_pretrained(model_dir).to("cuda" if torch.cuda.is_available() else "cpu").eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    encode = dict(batch_size=batch_size, max_length=max_length)
    side_a = model.encode(list(validation["question1"]), tokenizer, **encode)
    side_b = model.encode(list(validation["question2"]), tokenizer, **encode)
    questions, groups = question_corpus(validation)
    corpus = model.encode(questions, tokenizer, **encode)
    labels = np.asarray(validation["label"], dtype=np.int64)
    rows = []
    for dim in dims:
        dim = dim or corpus.shape[1]
        if dim > corpus.shape[1]:
            sys.exit(f"--eval_dim {dim} exceeds the model's embedding size {corpus.shape[1]}")
        scores = (cut(side_a, dim) * cut(side_b, dim)).sum(dim=-1).double().numpy()
        retrieval = retrieval_of_embeddings(cut(corpus, dim), groups, k=(10,))
        bytes_per_vector = dim * corpus.element_size()
        rows.append(
            {
                "dims": dim,
                "val_average_precision": round(pair_classification_metrics(scores, labels)["average_precision"], 4),
                "val_mrr@10": round(retrieval["mrr@10"], 4),
                "val_recall@10": round(retrieval["recall@10"], 4),
                "bytes_per_vector": bytes_per_vector,
                "mib_per_million": round(bytes_per_vector * 1e6 / 2**20, 1),
                "pairs": len(labels),
                "retrieval_queries": retrieval["num_queries"],
            }
        )
    return rows


def main() -> None:
    import hfsiamese  # noqa: F401  first: picks OpenMP's wait policy before torch loads

    # No prefix matching: a recipe flag must never be taken for one of these (`--eval` for `--eval_dim`).
    parser = argument_parser(__doc__, allow_abbrev=False)
    parser.add_argument("--output_root", required=True, help="folder of the two runs, their logs and the result files")
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="the recipe config (default: the MiniLM recipe)")
    parser.add_argument(
        "--dims", type=int, nargs="+", default=[384, 256, 128, 64], help="--matryoshka_dims of the second run"
    )
    parser.add_argument("--eval_dim", type=int, default=128, help="the cut size evaluated beside the full one")
    parser.add_argument("--batch_size", type=int, default=128, help="encode batch size of the evaluation")
    args, extra = parser.parse_known_args()
    flags = [flag for flag in extra if flag != "--"]  # everything else goes to recipes/train.py
    output_root = Path(args.output_root)
    output_root.mkdir(parents=True, exist_ok=True)

    model_args, data_args, training_args = recipe_arguments(args.config, flags)
    shipped_loss = training_args.loss
    if shipped_loss == "matryoshka":
        sys.exit("the config (or the flags) already train with the matryoshka loss: give the shipped one")
    matryoshka_flags = [
        "--loss",
        "matryoshka",
        "--matryoshka_loss",
        shipped_loss,
        "--matryoshka_dims",
        *map(str, args.dims),
    ]
    runs = {
        "shipped": (shipped_loss, train("shipped", args.config, flags, output_root)),
        "matryoshka": (
            f"matryoshka({shipped_loss}, {' '.join(map(str, args.dims))})",
            train("matryoshka", args.config, flags + matryoshka_flags, output_root),
        ),
    }

    from hfsiamese.training.preparation import load_splits

    validation = load_splits(data_args, default_train_file=EMBEDDED_PAIRS)["validation"]
    rows = []
    for name, (loss, run) in runs.items():
        for row in evaluate_sizes(
            run["output_dir"], validation, [None, args.eval_dim], model_args.max_length, args.batch_size
        ):
            rows.append({"run": name, "loss": loss, **row})
            emit(rows[-1])

    recipe_metrics = {
        name: {key: value for key, value in run["results"].items() if key.startswith("eval_") or key == "train_runtime"}
        for name, (_, run) in runs.items()
    }
    table = markdown_table(
        COLUMNS,
        (
            (
                r["run"],
                f"`{r['loss']}`",
                r["dims"],
                r["val_average_precision"],
                r["val_mrr@10"],
                r["val_recall@10"],
                r["bytes_per_vector"],
                r["mib_per_million"],
            )
            for r in rows
        ),
    )
    command = command_line(__file__)
    result = {
        "command": command,
        "machine": machine(),
        "config": args.config,
        "flags": flags,
        "matryoshka_dims": args.dims,
        "eval_dim": args.eval_dim,
        "validation_pairs": len(validation),
        "runs": {
            name: {"loss": loss, "output_dir": run["output_dir"], "wall_s": run["wall_s"]}
            for name, (loss, run) in runs.items()
        },
        "recipe_metrics": recipe_metrics,
        "rows": rows,
    }
    write_results(output_root, "matryoshka_minilm", result, table, f"{machine()}, {len(validation)} validation pairs")


if __name__ == "__main__":
    main()
