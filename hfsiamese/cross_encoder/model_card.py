"""The model card of a trained cross-encoder: Hub metadata with its validation results, what it is, and how to load it.

Shorter than a Siamese model's card (`hfsiamese.bi_encoder.model_card`; the metric table and model-index both cards
show are `hfsiamese.base.model_card_rows`'): a
cross-encoder has no embedding, pooling or search to describe, but three ways to load it, each named here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from huggingface_hub import ModelCard, ModelCardData

from hfsiamese.base.model_card_rows import METRICS, eval_results, hub_model_id, metric_rows

TAGS = ("hfsiamese", "cross-encoder", "text-classification", "duplicate-question-detection")


def cross_encoder_card(
    cross_config: Any,
    *,
    model_name: str,
    repo_id: str,
    metrics: Mapping[str, float],
    base_model: str | None = None,
    dataset_name: str | None = None,
    dataset_id: str | None = None,
    license: str | None = None,
    language: str | None = None,
    train_rows: int | None = None,
) -> ModelCard:
    """The card (`huggingface_hub.ModelCard`) of a cross-encoder whose config is `cross_config`, trained to `metrics`."""
    data = ModelCardData(
        language=language,
        license=license,
        library_name="transformers",
        pipeline_tag="text-classification",
        tags=list(TAGS),
        base_model=hub_model_id(base_model),
        datasets=[dataset_id] if dataset_id else None,
        model_name=model_name,
        eval_results=eval_results(metrics, dataset_type=dataset_id or "pairs", dataset_name=dataset_name or "pairs")
        or None,
    )
    threshold = getattr(cross_config, "threshold", None)
    order = (
        "the mean of both orders' logits, so the score does not depend on which question comes first"
        if getattr(cross_config, "pair_order", "given") == "both"
        else "the pair in the order given"
    )
    lines = [
        "---",
        data.to_yaml(),
        "---",
        "",
        f"# {model_name}",
        "",
        f"A cross-encoder trained with [hfsiamese](https://github.com/hfsiamese/hfsiamese) to decide whether two "
        f"questions are duplicates: both are read together as one sequence{f', from {base_model}' if base_model else ''}"
        f"{f', on {train_rows:,} training rows' if train_rows else ''}. The score is sigmoid of its one logit, over {order}.",
        "",
        f"Calibrated threshold: **{threshold:.4f}** (`config.threshold`; a pair is a duplicate when its score reaches it)."
        if threshold is not None
        else "No calibrated threshold is stored.",
        "",
        "## Results",
        "",
        "| split | pairs | " + " | ".join(pretty for _, _, pretty in METRICS) + " |",
        "|---|---|" + "---|" * len(METRICS),
    ]
    for row in metric_rows(metrics):
        values = " | ".join("" if row[key] is None else f"{row[key]:.4f}" for key, _, _ in METRICS)
        lines.append(f"| {row['split']} | {row['pairs'] or ''} | {values} |")
    lines += [
        "",
        "## Use",
        "",
        "```python",
        "from hfsiamese.cross_encoder import CrossEncoder  # pip install git+https://github.com/hfsiamese/hfsiamese",
        "",
        f'cross = CrossEncoder.from_pretrained("{repo_id}")',
        'cross.predict(["How do I learn Python?"], ["What is the best way to learn Python?"])',
        "```",
        "",
        "Without hfsiamese it is a plain one-logit sequence-classification model "
        "(`AutoModelForSequenceClassification`; sentence-transformers' `CrossEncoder` loads it too, scoring the "
        "given order): `torch.sigmoid(model(**tokenizer(q1, q2, return_tensors='pt')).logits)`.",
        "",
        "To rerank a bi-encoder's candidates: `DuplicateIndex.build(..., cross_encoder=...)` or "
        "`hfsiamese search --cross_encoder`.",
        "",
    ]
    return ModelCard("\n".join(lines))


__all__ = ["cross_encoder_card"]
