"""What a training run tells its user at the end: where the model went, how good it is, what to run next.

The Trainer's own end-of-run output is a table of every metric (runtime, FLOPs, samples per second...)
that never says where the model was saved. The recipe prints this summary instead; the full metrics
are in `<output_dir>/all_results.json`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

# (metric key without its prefix, how the summary names it), in the order printed.
THRESHOLD_FREE = (("average_precision", "average precision"), ("roc_auc", "ROC-AUC"))
AT_THRESHOLD = (("accuracy", "accuracy"), ("precision", "precision"), ("recall", "recall"), ("f1", "F1"))


def shown_path(path: str | os.PathLike) -> str:
    """`path` as a user types it from the current folder: relative below it, absolute elsewhere; shell-quoted."""
    absolute = Path(os.path.abspath(path))  # not resolve(): a venv's python is a link that must stay one
    try:
        shown = str(absolute.relative_to(Path.cwd()))
    except ValueError:
        shown = str(absolute)
    return shlex.quote(shown)


def metrics_line(metrics: Mapping[str, float], prefix: str) -> str | None:
    """`average precision 0.788, ROC-AUC 0.804; at threshold 0.463: accuracy 0.731, ...`, or None without metrics."""
    free = [f"{name} {metrics[f'{prefix}_{key}']:.3f}" for key, name in THRESHOLD_FREE if f"{prefix}_{key}" in metrics]
    fixed = [f"{name} {metrics[f'{prefix}_{key}']:.3f}" for key, name in AT_THRESHOLD if f"{prefix}_{key}" in metrics]
    if not free and not fixed:
        return None
    threshold = metrics.get(f"{prefix}_threshold")
    at = f"at threshold {threshold:.3f}: " if threshold is not None else ""
    return "; ".join(part for part in (", ".join(free), at + ", ".join(fixed) if fixed else "") if part)


def run_summary(
    output_dir: str | os.PathLike,
    metrics: Mapping[str, float],
    *,
    corpus_file: str | os.PathLike | None = None,
    reranker: bool = False,
    split_command: str | None = None,
) -> str:
    """
    The end-of-run summary: where the model was saved, its validation (and test) metrics, and the
    `hfsiamese` commands that evaluate it on labelled pairs and search a corpus with it (`corpus_file`, e.g. the
    training file; a placeholder when there is none), as typed from the current folder, and the `hfsiamese split`
    command (`split_command`) that writes the pairs the run held out; for a cross-encoder (`reranker`), the command
    that reranks a bi-encoder's candidates with it instead of the search.
    """
    model = shown_path(output_dir)
    runtime = metrics.get("train_runtime")
    took = f" after {_duration(runtime)} of training" if runtime is not None else ""
    lines = [f"Model saved to {model}{took}."]
    for prefix, label in (("eval", "Validation"), ("test", "Test")):
        line = metrics_line(metrics, prefix)
        if line is not None:
            pairs = _pairs_used(metrics, prefix)
            lines.append(f"{label}{pairs}: {line}")
    lines.append(f"All metrics: {shown_path(Path(output_dir) / 'all_results.json')}")
    corpus = shown_path(corpus_file) if corpus_file is not None else "QUESTIONS.txt"
    lines.append(f"Evaluate: hfsiamese evaluate --model_name_or_path {model} --test_file HELD_OUT_PAIRS.jsonl")
    if split_command is None:
        split_command = "hfsiamese split --output_file HELD_OUT_PAIRS.jsonl"
        whose = "with the run's config and data flags, "
    else:
        whose = ""
    lines.append(
        f"          (pairs it never trained on: `{split_command}` {whose}writes the validation pairs it held out)"
    )
    if reranker:
        lines.append(
            f"Rerank:   hfsiamese search --model_name_or_path BI_ENCODER --cross_encoder {model} --corpus {corpus} "
            "--query 'How do I learn Python?'"
        )
    else:
        lines.append(
            f"Search:   hfsiamese search --model_name_or_path {model} --corpus {corpus} --query 'How do I learn Python?'"
        )
    return "\n".join(lines)


def _pairs_used(metrics: Mapping[str, float], prefix: str) -> str:
    """` (1,000 pairs)`, or for a sample of a larger set (`<prefix>_pairs_total`) ` (20,000 of 396,010 pairs, ...)`."""
    count, total = metrics.get(f"{prefix}_num_pairs"), metrics.get(f"{prefix}_pairs_total")
    if count is None:
        return ""
    if total is not None and total > count:
        return f" ({int(count):,} of {int(total):,} pairs, a sample: --max_eval_pairs 0 evaluates all)"
    return f" ({int(count):,} pairs)"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{seconds:.1f}s"


__all__ = ["metrics_line", "run_summary", "shown_path"]
