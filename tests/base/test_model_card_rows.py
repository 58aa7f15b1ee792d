"""The card rows both families share (`hfsiamese.base.model_card_rows`): one row per split and data set, the
model-index entries, and the last logged value of each metric."""

from __future__ import annotations

from hfsiamese.base.model_card_rows import METRICS, eval_results, metric_rows, metrics_from_log_history


def test_metric_rows_one_per_split_and_data_set_that_has_metrics() -> None:
    metrics = {
        "eval_f1": 0.8,
        "eval_num_pairs": 100,
        "eval_threshold": 0.5,
        "test_quora_accuracy": 0.7,
        "test_other_f1": None,
    }
    rows = metric_rows(metrics, ["quora", "other"])
    assert [row["split"] for row in rows] == ["validation", "test: quora"]
    assert rows[0]["pairs"] == 100 and rows[0]["threshold"] == 0.5 and rows[0]["f1"] == 0.8
    assert rows[1]["pairs"] is None and rows[1]["accuracy"] == 0.7 and rows[1]["f1"] is None
    assert set(rows[0]) == {"split", "threshold", "pairs", *(key for key, _, _ in METRICS)}


def test_eval_results_name_the_split_and_round() -> None:
    results = eval_results({"eval_f1": 0.123456, "test_roc_auc": 0.9}, dataset_type="pairs", dataset_name="qqp")
    assert [(r.dataset_split, r.metric_type, r.metric_value) for r in results] == [
        ("validation", "f1", 0.1235),
        ("test", "roc_auc", 0.9),
    ]


def test_metrics_from_log_history_keeps_the_latest_number() -> None:
    history = [{"eval_f1": 0.5, "epoch": 1}, {"eval_f1": 0.6, "flag": True, "name": "x"}]
    assert metrics_from_log_history(history) == {"eval_f1": 0.6, "epoch": 1}
