"""
An evaluation report on disk: the metrics as JSON, plots of the scores, and a Markdown summary.

Plots need matplotlib (the `report` extra: `pip install matplotlib`). They are drawn on Agg canvases
(`matplotlib.figure.Figure` + `FigureCanvasAgg`), never through `pyplot`: no display is needed
and a user's own pyplot state and backend are left alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sklearn.metrics

from hfsiamese.metrics.reliability import expected_calibration_error, reliability_curve
from hfsiamese.metrics.thresholds import check_pair_inputs, threshold_sweep
from hfsiamese.utils.extras import install_hint
from hfsiamese.utils.output_dirs import ensure_writable_folder

__all__ = ["REPORT_FILES", "check_report_dir", "write_evaluation_report"]

REPORT_FILES = {
    "metrics": "metrics.json",
    "histogram": "similarity_histogram.png",
    "precision_recall": "precision_recall_curve.png",
    "threshold_sweep": "threshold_sweep.png",
    "reliability": "reliability_diagram.png",  # only for a model calibrated to probabilities
    "summary": "report.md",
}


def write_evaluation_report(
    report_dir: str | Path,
    scores: Any,
    labels: Any,
    metrics: Mapping[str, Any],
    threshold: float,
    *,
    model_name: str | None = None,
    data_name: str | None = None,
    overwrite: bool = False,
    probabilities: Any | None = None,
    caveats: Sequence[str] = (),
) -> dict[str, Path]:
    """
    Write an evaluation report of scored pairs into `report_dir`:

    - `metrics.json`: `metrics` as given;
    - `similarity_histogram.png`: scores of duplicates and of non-duplicates, threshold drawn;
    - `precision_recall_curve.png`: the curve, with the operating point at `threshold`;
    - `threshold_sweep.png`: accuracy and F1 against the threshold, `threshold` marked;
    - `reliability_diagram.png`, when the pairs' calibrated `probabilities` are given: predicted
      P(duplicate) against the observed duplicate rate per probability bin, with the pairs behind
      each point, and the expected calibration error;
    - `report.md`: the model and data names, `caveats` (e.g. test pairs seen in training) above the
      figures they qualify, a table of the metrics and the plots.

    A non-empty `report_dir` is refused unless `overwrite=True` (the files above are then
    replaced; other files are left). Returns the path of every file written, by kind.
    """
    report_dir = Path(report_dir)
    check_report_dir(report_dir, overwrite=overwrite)
    scores, labels = check_pair_inputs(scores, labels)
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold}")
    if len(np.unique(labels)) < 2:
        raise ValueError("the report needs both duplicates and non-duplicates among the pairs")
    Figure, FigureCanvasAgg = _matplotlib()

    report_dir.mkdir(parents=True, exist_ok=True)
    drawings = [
        ("histogram", _draw_histogram, scores),
        ("precision_recall", _draw_precision_recall, scores),
        ("threshold_sweep", _draw_threshold_sweep, scores),
    ]
    if probabilities is not None:
        probabilities = np.asarray(probabilities, dtype=np.float64).reshape(-1)
        if len(probabilities) != len(labels):
            raise ValueError(f"got {len(probabilities)} probabilities for {len(labels)} pairs")
        drawings.append(("reliability", _draw_reliability, probabilities))
    written = ["metrics", "summary", *(kind for kind, _, _ in drawings)]
    paths = {kind: report_dir / REPORT_FILES[kind] for kind in written}
    paths["metrics"].write_text(json.dumps(dict(metrics), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    for kind, draw, values in drawings:
        figure = Figure(figsize=(6.4, 4.4), dpi=100, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure.add_subplot(), values, labels, threshold)
        figure.savefig(paths[kind], format="png")
    paths["summary"].write_text(
        _summary(
            metrics, threshold, labels, model_name=model_name, data_name=data_name, plots=written, caveats=caveats
        ),
        encoding="utf-8",
    )
    return paths


def check_report_dir(report_dir: str | Path, *, overwrite: bool = False) -> None:
    """Fail early (before any scoring) when the report could not be written: a non-empty folder
    without `overwrite`, or matplotlib missing."""
    ensure_writable_folder(
        report_dir,
        overwrite=overwrite,
        label="report_dir",
        remedy="pass overwrite=True (--overwrite_report_dir in hfsiamese evaluate) to replace the report "
        "there, or choose another folder",
    )
    _matplotlib()


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ImportError(f"the evaluation report draws its plots with matplotlib: {install_hint('report')}") from err
    return Figure, FigureCanvasAgg


def _draw_histogram(axes, scores: np.ndarray, labels: np.ndarray, threshold: float) -> None:
    bins = np.histogram_bin_edges(scores, bins=min(50, max(10, len(scores) // 20)))
    axes.hist(
        scores[labels == 0],
        bins=bins,
        alpha=0.6,
        color="tab:blue",
        label=f"non-duplicates ({int((labels == 0).sum())})",
    )
    axes.hist(scores[labels == 1], bins=bins, alpha=0.6, color="tab:orange", label=f"duplicates ({int(labels.sum())})")
    axes.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold:.4f}")
    axes.set_xlabel("similarity score")
    axes.set_ylabel("pairs")
    axes.set_title("Scores of duplicate and non-duplicate pairs")
    axes.legend()


def _draw_precision_recall(axes, scores: np.ndarray, labels: np.ndarray, threshold: float) -> None:
    precision, recall, _ = sklearn.metrics.precision_recall_curve(labels, scores)
    average_precision = sklearn.metrics.average_precision_score(labels, scores)
    axes.step(recall, precision, where="post", color="tab:blue", label=f"average precision {average_precision:.4f}")
    decisions = (scores >= threshold).astype(np.int64)
    point_precision = sklearn.metrics.precision_score(labels, decisions, zero_division=0)
    point_recall = sklearn.metrics.recall_score(labels, decisions, zero_division=0)
    axes.plot(
        [point_recall], [point_precision], "o", color="tab:red", markersize=8,
        label=f"threshold {threshold:.4f}: P {point_precision:.3f}, R {point_recall:.3f}",
    )  # fmt: skip
    axes.axhline(labels.mean(), color="grey", linestyle=":", label=f"duplicate rate {labels.mean():.3f}")
    axes.set_xlim(0.0, 1.02)
    axes.set_ylim(0.0, 1.02)
    axes.set_xlabel("recall")
    axes.set_ylabel("precision")
    axes.set_title("Precision-recall curve")
    axes.legend(loc="lower left")


def _draw_threshold_sweep(axes, scores: np.ndarray, labels: np.ndarray, threshold: float) -> None:
    sweep = threshold_sweep(scores, labels)
    # Each value holds from its cut down to the next lower score (thresholds descend).
    axes.plot(sweep.thresholds, sweep.accuracy, drawstyle="steps-post", color="tab:blue", label="accuracy")
    axes.plot(sweep.thresholds, sweep.f1, drawstyle="steps-post", color="tab:orange", label="F1")
    axes.axvline(threshold, color="black", linestyle="--", label=f"chosen threshold {threshold:.4f}")
    axes.set_xlabel("threshold (score >= threshold is a duplicate)")
    axes.set_ylabel("metric")
    axes.set_ylim(0.0, 1.02)
    axes.set_title("Accuracy and F1 against the threshold")
    axes.legend(loc="lower left")


def _draw_reliability(axes, probabilities: np.ndarray, labels: np.ndarray, threshold: float) -> None:
    curve = reliability_curve(probabilities, labels)
    ece = expected_calibration_error(probabilities, labels)
    axes.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfectly calibrated")
    axes.plot(curve.predicted, curve.observed, "o-", color="tab:blue", label=f"this model (ECE {ece:.4f})")
    for x, y, count in zip(curve.predicted, curve.observed, curve.counts):
        axes.annotate(f"{count}", (x, y), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    axes.set_xlim(0.0, 1.0)
    axes.set_ylim(-0.02, 1.08)
    axes.set_xlabel("predicted P(duplicate) (mean per bin; the numbers are the pairs in each bin)")
    axes.set_ylabel("observed duplicate rate")
    axes.set_title("Reliability of the calibrated probabilities")
    axes.legend(loc="upper left")


def _summary(
    metrics: Mapping[str, Any],
    threshold: float,
    labels: np.ndarray,
    *,
    model_name: str | None,
    data_name: str | None,
    plots: Sequence[str] = ("histogram", "precision_recall", "threshold_sweep"),
    caveats: Sequence[str] = (),
) -> str:
    lines = ["# Evaluation report", ""]
    for caveat in caveats:
        lines += [f"> **Caveat:** {caveat}.", ""]
    lines.append(f"- Model: `{model_name}`" if model_name else "- Model: (not named)")
    lines.append(f"- Data: `{data_name}`" if data_name else "- Data: (not named)")
    lines.append(f"- Pairs: {len(labels)} ({int(labels.sum())} duplicates, {int((labels == 0).sum())} non-duplicates)")
    lines.append(f"- Decision: a pair is a duplicate when its score >= {threshold:.4f}")
    lines += ["", "## Metrics", "", "| metric | value |", "|---|---|"]
    for name, value in sorted(metrics.items()):
        lines.append(f"| {name} | {_format_value(value)} |")
    lines += [
        "",
        "## Plots",
        "",
        f"![Similarity histogram]({REPORT_FILES['histogram']})",
        "",
        f"![Precision-recall curve]({REPORT_FILES['precision_recall']})",
        "",
        f"![Accuracy and F1 against the threshold]({REPORT_FILES['threshold_sweep']})",
        "",
    ]
    if "reliability" in plots:
        lines += [f"![Predicted probability against the observed duplicate rate]({REPORT_FILES['reliability']})", ""]
    lines += [
        f"All metrics: [{REPORT_FILES['metrics']}]({REPORT_FILES['metrics']})",
        "",
    ]
    return "\n".join(lines)


def _format_value(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return f"{float(value):.4f}"
