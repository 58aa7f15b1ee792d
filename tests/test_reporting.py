"""The evaluation report: real, non-blank plots, a summary that links them, and no silent overwrites."""

import json
import re
import sys

import matplotlib.image
import numpy as np
import pytest

from hfsiamese.metrics import pair_classification_metrics
from hfsiamese.reporting import REPORT_FILES, write_evaluation_report

PLOTS = ("histogram", "precision_recall", "threshold_sweep")


@pytest.fixture
def scored_pairs():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400)
    scores = np.tanh(labels * 0.8 + rng.normal(0, 0.4, 400))
    metrics = pair_classification_metrics(scores, labels, calibrate_for="f1")
    return scores, labels, metrics


def test_writes_metrics_plots_and_summary(tmp_path, scored_pairs):
    scores, labels, metrics = scored_pairs
    paths = write_evaluation_report(
        tmp_path / "report",
        scores,
        labels,
        metrics,
        metrics["threshold"],
        model_name="outputs/lstm",
        data_name="val.jsonl",
    )
    assert json.loads(paths["metrics"].read_text()) == pytest.approx(metrics)
    for kind in PLOTS:
        path = paths[kind]
        assert path.stat().st_size > 10_000, kind  # a drawn chart, not an empty canvas
        pixels = matplotlib.image.imread(path)[..., :3]
        assert pixels.shape[0] > 200 and pixels.shape[1] > 300
        assert pixels.std() > 0.05, kind  # not a single colour
        assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, kind  # lines, bars, text: many colours
    summary = paths["summary"].read_text()
    linked = set(re.findall(r"!\[[^\]]*\]\(([^)]+)\)", summary))
    assert linked == {REPORT_FILES[kind] for kind in PLOTS}
    assert all((tmp_path / "report" / name).is_file() for name in linked)
    assert "`outputs/lstm`" in summary and "`val.jsonl`" in summary
    assert f"| f1 | {metrics['f1']:.4f} |" in summary and f"| num_pairs | {len(labels)} |" in summary
    assert f"{metrics['threshold']:.4f}" in summary


def test_plots_differ_with_the_data(tmp_path, scored_pairs):
    scores, labels, metrics = scored_pairs
    first = write_evaluation_report(tmp_path / "a", scores, labels, metrics, metrics["threshold"])
    second = write_evaluation_report(tmp_path / "b", -scores, labels, metrics, 0.0)
    for kind in PLOTS:
        assert not np.array_equal(matplotlib.image.imread(first[kind]), matplotlib.image.imread(second[kind])), kind


def test_refuses_a_non_empty_folder_unless_told(tmp_path, scored_pairs):
    scores, labels, metrics = scored_pairs
    report = tmp_path / "report"
    report.mkdir()
    (report / "notes.txt").write_text("a user's file")
    with pytest.raises(FileExistsError, match="is not empty.*overwrite=True.*--overwrite_report_dir"):
        write_evaluation_report(report, scores, labels, metrics, 0.5)
    assert sorted(p.name for p in report.iterdir()) == ["notes.txt"]
    write_evaluation_report(report, scores, labels, metrics, 0.5, overwrite=True)
    assert (report / "notes.txt").read_text() == "a user's file"
    assert (report / "report.md").is_file()


def test_names_the_missing_extra(tmp_path, scored_pairs, monkeypatch):
    scores, labels, metrics = scored_pairs
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # as if matplotlib were not installed
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(ImportError, match=r'plots with matplotlib: .*pip install -e "\.\[report\]"'):
        write_evaluation_report(tmp_path / "report", scores, labels, metrics, 0.5)
    assert not (tmp_path / "report").exists()


def test_needs_both_classes(tmp_path):
    with pytest.raises(ValueError, match="both duplicates and non-duplicates"):
        write_evaluation_report(tmp_path / "r", [0.1, 0.9], [1, 1], {}, 0.5)


def test_calibrated_probabilities_add_a_reliability_diagram(tmp_path, scored_pairs):
    scores, labels, metrics = scored_pairs
    probabilities = 1 / (1 + np.exp(-4 * scores))
    paths = write_evaluation_report(
        tmp_path / "report", scores, labels, metrics, metrics["threshold"], probabilities=probabilities
    )
    pixels = matplotlib.image.imread(paths["reliability"])[..., :3]
    assert paths["reliability"].name == REPORT_FILES["reliability"] and pixels.std() > 0.05
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50
    assert f"]({REPORT_FILES['reliability']})" in paths["summary"].read_text()
    plain = write_evaluation_report(tmp_path / "plain", scores, labels, metrics, metrics["threshold"])
    assert "reliability" not in plain and not (tmp_path / "plain" / REPORT_FILES["reliability"]).exists()
