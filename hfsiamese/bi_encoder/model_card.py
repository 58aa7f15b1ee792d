"""Model cards for trained Siamese checkpoints: the README.md written beside the weights and pushed to the Hub.

The card follows the structure of the repository's `model_card.md`: Hub metadata (with a `model-index` of the
evaluation results, so the Hub shows them), what the model is, how it was trained (the arguments that matter,
as a config the recipe reads back), the metrics, the calibrated threshold, and how to use it with and without
hfsiamese. It is rendered by `huggingface_hub.ModelCard.from_template` from `templates/model_card_template.md`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from huggingface_hub import ModelCard, ModelCardData

from hfsiamese.base.model_card_rows import (  # shared with the cross-encoder's card; importable from here too
    METRICS,
    SPLITS,
    eval_results,
    hub_model_id,
    metric_rows,
    metrics_from_log_history,
)
from hfsiamese.losses import LOSSES, SiameseLoss, loss_name

TEMPLATE_PATH = Path(__file__).parent / "templates" / "model_card_template.md"
BASE_TAGS = ("hfsiamese", "siamese-network", "bi-encoder", "sentence-similarity", "duplicate-question-detection")

# Training arguments that shape the model (never paths, tokens or logging options), after the loss
# and its options (which `SiameseTrainingArguments.loss_options` gives, from the losses' own list).
TRAINING_ARGUMENTS = (
    "gradient_cache_mini_batch_size", "no_duplicate_batches", "train_sampling_strategy", "calibrate_threshold",
    "calibrate_for", "learning_rate", "weight_decay", "lr_scheduler_type", "warmup_steps", "optim",
    "num_train_epochs", "max_steps", "per_device_train_batch_size", "gradient_accumulation_steps", "fp16", "bf16",
    "seed",
)  # fmt: skip


def local_card_license(path: str | os.PathLike | None) -> str | None:
    """The license a local model folder's README.md declares, if any (a fine-tuned model inherits it)."""
    readme = Path(path) / "README.md" if path else None
    if readme is None or not readme.is_file():
        return None
    return ModelCard.load(readme, ignore_metadata_errors=True).data.license


def _loss_summary(name: str) -> str:
    """The first paragraph of the loss class's docstring (one place describes each loss)."""
    doc = (LOSSES[name].__doc__ or "").strip()
    return " ".join(doc.split("\n\n")[0].split()) if doc else name


def _trained_loss(loss: SiameseLoss | None, training_args: Any | None) -> tuple[str | None, dict[str, Any]]:
    """The loss's name and its options, all of them (`get_config_dict`): the trained loss, else the one the arguments name."""
    name = getattr(training_args, "loss", None)
    if loss is None and name in LOSSES and hasattr(training_args, "build_loss"):
        with warnings.catch_warnings():  # building it warned once already, where the arguments were read
            warnings.simplefilter("ignore")
            loss = training_args.build_loss()
    if loss is None:
        return name, {}
    return loss_name(loss) or name, loss.get_config_dict()


def _count(n: int) -> str:
    return f"{n / 1e6:.2f} M" if n >= 1e5 else f"{n:,}"


def _encoder_summary(config: Any, base_model: str | None) -> str:
    """The "encoder" row of the "Model" table: the architecture in one line."""
    if config.encoder_type == "lstm":
        directions = "bidirectional LSTM" if config.bidirectional else "LSTM"
        layers = f"{config.num_layers} layers of " if config.num_layers > 1 else ""
        return (
            f"word embedding {config.embedding_dim} → {layers}{directions}, {config.hidden_size} units per direction, "
            f"packed sequences → {config.pooling} pooling over real tokens"
        )
    if config.encoder_type == "static":
        pooling = "learned-weight mean" if config.pooling == "weighted_mean" else "mean"
        return f"static word embedding {config.embedding_dim} → {pooling} pooling over real tokens (no recurrence)"
    encoder_config = config.encoder_config or {}
    kind = encoder_config.get("model_type", "transformer")
    # A local folder's full path means nothing to a reader of the card: its name does.
    name = base_model or Path(encoder_config.get("_name_or_path") or kind).name
    return (
        f"{kind} ({name}), {encoder_config.get('num_hidden_layers', '?')} layers, "
        f"hidden size {encoder_config.get('hidden_size', '?')} → {config.pooling} pooling"
    )


def _model_rows(model: Any, tokenizer: Any | None, base_model: str | None = None) -> list[tuple[str, str]]:
    """The "Model" table: what the encoder is, and its size."""
    config = model.config
    rows = [("encoder", _encoder_summary(config, base_model))]
    if config.encoder_type in ("lstm", "static") and config.dropout:
        rows.append(("regularisation", f"dropout {config.dropout} on the embeddings"))
    if config.projection_dim:
        rows.append(("projection", f"linear layer to {config.projection_dim} dimensions"))
    rows.append(("embedding", f"{config.sentence_embedding_dim}-d, L2-normalised"))
    if tokenizer is not None:
        vocabulary = f"{len(tokenizer):,} tokens"
        vocabulary += f"; texts truncated to {model.default_max_length(tokenizer)} tokens"  # as encode cuts them
        rows.append(("vocabulary", vocabulary))
    if config.classifier_head:
        hidden = f", hidden layer {config.classifier_hidden_size}" if config.classifier_hidden_size else ""
        rows.append(("classification head", f"on `[u, v, |u − v|, u * v]`{hidden}; the score is its P(duplicate)"))
        rows.append(("output", "P(duplicate) in [0, 1]; duplicate when ≥ `config.threshold`"))
    else:
        rows.append(("output", "cosine similarity in [-1, 1]; duplicate when ≥ `config.threshold`"))
    rows.append(("parameters", _count(sum(p.numel() for p in model.parameters()))))
    return rows


def _training_arguments(training_args: Any | None) -> dict[str, Any]:
    if training_args is None:
        return {}
    values = {"loss": getattr(training_args, "loss", None)}
    if hasattr(training_args, "loss_options"):
        values.update(training_args.loss_options())
    values.update({name: getattr(training_args, name) for name in TRAINING_ARGUMENTS if hasattr(training_args, name)})
    values = {k: v for k, v in values.items() if v is not None and not (k in ("fp16", "bf16") and not v)}
    # max_steps > 0 overrides num_train_epochs; otherwise it is the "unset" -1.
    if values.get("max_steps", -1) > 0:
        values.pop("num_train_epochs", None)
    else:
        values.pop("max_steps", None)
    return {k: getattr(v, "value", v) for k, v in values.items()}  # enums (scheduler, optimiser) by value


def build_model_card(
    model: Any,
    *,
    model_name: str,
    metrics: Mapping[str, float] | None = None,
    training_args: Any | None = None,
    arguments: Mapping[str, Any] | None = None,
    loss: SiameseLoss | None = None,
    tokenizer: Any | None = None,
    repo_id: str | None = None,
    dataset_name: str | None = None,
    dataset_id: str | None = None,
    dataset_config: str | None = None,
    train_rows: int | None = None,
    eval_pairs: int | None = None,
    global_step: int | None = None,
    training_datasets: Sequence[Mapping[str, Any]] | None = None,
    base_model: str | None = None,
    language: str | list[str] | None = None,
    license: str | None = None,
    tags: Sequence[str] | None = None,
    sentence_transformers_path: str | None = None,
) -> ModelCard:
    """
    The model card of a trained Siamese model.

    Args:
        model: the trained model (its config gives the architecture and the calibrated threshold).
        model_name: the card's title and the `model-index` name.
        metrics: the run's metrics, Trainer-style (`eval_average_precision`, `test_f1`, `train_runtime`, ...).
        training_args: the `SiameseTrainingArguments`; only the options that shape the model are shown.
        arguments: further arguments of the run (e.g. the recipe's model and data arguments), shown with the
            training options as one config that `hfsiamese train` reads back.
        loss: the loss the model was trained with, whose options (`get_config_dict`) the card lists; default:
            the one `training_args` name.
        tokenizer: the model's tokenizer, for the vocabulary size and truncation length.
        repo_id: where the checkpoint will be found (Hub id or folder), for the usage snippets.
        dataset_name / dataset_id / dataset_config: a readable name of the training data, and its Hub data
            set id and configuration if it has one (they go to the `datasets` metadata and the `model-index`).
        train_rows / eval_pairs / global_step: sizes of the run, when known.
        training_datasets: a run on several data sets: each one's `name`, `rows`, `loss` (its name) and `weight`
            (None unless given), listed with the run's `multi_dataset_sampling`.
        base_model: the Hub id of the pretrained encoder; ignored unless it is a Hub id.
        language / license / tags: Hub metadata (`hfsiamese` and the task tags are always added).
        sentence_transformers_path: where a sentence-transformers export of the model lies, if any.
    """
    metrics = dict(metrics or {})
    config = model.config
    dataset_name = dataset_name or dataset_id or "question pairs"
    results = eval_results(
        metrics,
        dataset_type=dataset_id or _slug(dataset_name),
        dataset_name=dataset_name,
        dataset_config=dataset_config,
    )
    card_tags = list(dict.fromkeys([*BASE_TAGS, config.encoder_type, *(tags or [])]))
    if sentence_transformers_path is not None:
        card_tags.append("sentence-transformers")
    card_data = ModelCardData(
        library_name="transformers",
        pipeline_tag="sentence-similarity",
        tags=card_tags,
        datasets=[dataset_id] if dataset_id else None,
        base_model=hub_model_id(base_model),
        language=language,
        license=license,
        model_name=model_name,
        eval_results=results or None,
    )
    config_yaml = _recipe_config(arguments, training_args, several_datasets=bool(training_datasets))
    trained_loss_name, loss_options = _trained_loss(loss, training_args)
    card = ModelCard.from_template(
        card_data,
        template_path=str(TEMPLATE_PATH),
        model_name=model_name,
        repo_id=repo_id or model_name,
        encoder_type=config.encoder_type,
        model_rows=_model_rows(model, tokenizer, hub_model_id(base_model)),
        threshold=config.threshold,
        classifier_head=bool(config.classifier_head),
        dataset_name=dataset_name,
        train_rows=train_rows,
        eval_pairs=eval_pairs,
        global_step=global_step,
        training_datasets=list(training_datasets or []),
        multi_dataset_sampling=getattr(training_args, "multi_dataset_sampling", None),
        train_runtime=metrics.get("train_runtime"),
        loss=trained_loss_name,
        loss_summary=_loss_summary(trained_loss_name) if trained_loss_name in LOSSES else None,
        loss_options=loss_options,
        config_yaml=config_yaml,
        metric_columns=[(key, pretty.split(" at ")[0]) for key, _, pretty in METRICS],
        metric_rows=metric_rows(metrics, [str(part["name"]) for part in training_datasets or []]),
        sentence_transformers_path=sentence_transformers_path,
    )
    return card


def _recipe_config(
    arguments: Mapping[str, Any] | None, training_args: Any | None, *, several_datasets: bool = False
) -> str | None:
    values = {k: v for k, v in dict(arguments or {}).items() if v is not None}
    values.update(_training_arguments(training_args))
    if several_datasets and hasattr(training_args, "multi_dataset_sampling"):
        values["multi_dataset_sampling"] = training_args.multi_dataset_sampling
    if not values:
        return None
    return yaml.safe_dump(values, sort_keys=False, allow_unicode=True).strip()


def _slug(name: str) -> str:
    return "-".join("".join(c.lower() if c.isalnum() else " " for c in name).split()) or "pairs"


__all__ = [
    "METRICS",
    "SPLITS",
    "build_model_card",
    "eval_results",
    "hub_model_id",
    "local_card_license",
    "metrics_from_log_history",
    "TEMPLATE_PATH",
]
