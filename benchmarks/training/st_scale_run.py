#!/usr/bin/env python
"""sentence-transformers' trainer on a large pair file, as its documentation trains duplicate questions.

    python benchmarks/training/st_scale_run.py pairs.tsv OUTPUT_DIR --max_steps 30 --per_device_train_batch_size 64

The file (label, question1, question2, pair id; tab-separated, no header: `make_pairs_file.py`'s format) is read with
`load_dataset("csv")` into the datasets cache (memory-mapped Arrow), its duplicate pairs kept as (anchor, positive),
and all-MiniLM-L6-v2 trained with MultipleNegativesRankingLoss and NO_DUPLICATES batches; texts are tokenised in the
collator. `scale_training.py` runs it beside `hfsiamese train` and times it the same way.
"""

from __future__ import annotations

import argparse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs_file")
    parser.add_argument("output_dir")
    parser.add_argument("--max_steps", type=int, default=30)
    parser.add_argument("--per_device_train_batch_size", type=int, default=64)
    args = parser.parse_args()

    from datasets import load_dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
        losses,
    )
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    from hfsiamese.utils.minilm import resolve_minilm_path

    pairs = load_dataset(
        "csv",
        data_files=args.pairs_file,
        delimiter="\t",
        column_names=["label", "question1", "question2", "pair_id"],
        quoting=3,  # csv.QUOTE_NONE: the questions hold quotes
        keep_default_na=False,
        split="train",
    )
    duplicates = pairs.filter(lambda label: label == 1, input_columns="label")
    train_dataset = duplicates.select_columns(["question1", "question2"]).rename_columns(
        {"question1": "anchor", "question2": "positive"}
    )
    model = SentenceTransformer(resolve_minilm_path(), device="cpu")
    training_args = SentenceTransformerTrainingArguments(
        output_dir=args.output_dir,
        per_device_train_batch_size=args.per_device_train_batch_size,
        max_steps=args.max_steps,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        use_cpu=True,
        save_strategy="no",
        report_to="none",
        logging_steps=1,
        seed=42,
    )
    loss = losses.MultipleNegativesRankingLoss(model)
    SentenceTransformerTrainer(model=model, args=training_args, train_dataset=train_dataset, loss=loss).train()


if __name__ == "__main__":
    main()
