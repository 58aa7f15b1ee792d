#!/usr/bin/env python
"""Does a decision recalibrated from a few labelled pairs transfer, and are the probabilities calibrated?

    OMP_NUM_THREADS=1 python benchmarks/quality/calibration_transfer.py /tmp/h14/lstm_qqp [/tmp/ckpt/minilm_qqp ...]

For each QQP-trained model folder:

(a) Another domain (QQP -> MRPC): the model is recalibrated on 100 pairs drawn from MRPC's training
    split (`/work/shared/data/msrp/msr-para-train.tsv`) and scored on MRPC's validation split
    (`msr-para-val.tsv`). Accuracy at the recalibrated threshold is compared with the oracle: the
    best-accuracy threshold chosen on the validation pairs themselves. Repeated over `--draws` random
    draws of the 100 pairs (mean and worst gap), per method (threshold, platt, isotonic), beside the
    accuracy at the stored QQP threshold.
(b) In domain (QQP): the recipe's validation slice (1,000 pairs split off by question, never trained
    on) is cut in two at random; platt/isotonic are fitted on each half and applied to the other
    (cross-fitting: every pair's probability comes from a map that never saw it), and the expected
    calibration error (10 equal-width bins) and Brier score are measured over all 1,000 pairs, over
    `--draws` cuts. On 1,000 pairs the ECE is itself noisy, so each figure comes with its floor: the
    ECE the same probabilities get against labels drawn from them (a perfectly calibrated model).

Pairs are scored once per model; each calibration then runs the library's own fitting
(`calibration_fitting.fit_threshold`, what `model.calibrate` does after scoring). Prints one JSON
object per model; `--markdown` also prints the README table rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, emit
from benchmarks.common.qqp_slices import qqp_train_and_validation

MRPC = Path("/work/shared/data/msrp")
METHODS = ("threshold", "platt", "isotonic")


def accuracy_at(scores: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    return float(((scores >= threshold).astype(np.int64) == labels).mean())


def transfer(model, tokenizer, draws: int, size: int, seed: int) -> dict:
    from hfsiamese.calibration_fitting import fit_threshold
    from hfsiamese.data import load_pairs
    from hfsiamese.evaluation import score_labelled_pairs
    from hfsiamese.metrics.thresholds import best_threshold

    train = load_pairs(str(MRPC / "msr-para-train.tsv"), deduplicate=False)
    validation = load_pairs(str(MRPC / "msr-para-val.tsv"), deduplicate=False)
    train_scores, train_labels = score_labelled_pairs(model, train, tokenizer)
    val_scores, val_labels = score_labelled_pairs(model, validation, tokenizer)
    oracle = accuracy_at(val_scores, val_labels, best_threshold(val_scores, val_labels))
    rng = np.random.default_rng(seed)
    gaps: dict[str, list[float]] = {method: [] for method in METHODS}
    for _ in range(draws):
        rows = rng.choice(len(train_labels), size=size, replace=False)
        for method in METHODS:
            threshold, _ = fit_threshold(train_scores[rows], train_labels[rows], method)
            gaps[method].append(oracle - accuracy_at(val_scores, val_labels, threshold))
    return {
        "mrpc_validation_pairs": len(val_labels),
        "oracle_accuracy": oracle,
        "stored_threshold_accuracy": accuracy_at(val_scores, val_labels, model.config.threshold),
        "majority_accuracy": float(max(val_labels.mean(), 1 - val_labels.mean())),
        **{f"{method}_gap_mean": float(np.mean(gaps[method])) for method in METHODS},
        **{f"{method}_gap_worst": float(np.max(gaps[method])) for method in METHODS},
        **{f"{method}_accuracy_mean": oracle - float(np.mean(gaps[method])) for method in METHODS},
    }


def in_domain(model, tokenizer, draws: int, seed: int) -> dict:
    from hfsiamese.calibration_fitting import fit_calibrator
    from hfsiamese.evaluation import score_labelled_pairs
    from hfsiamese.metrics.reliability import calibration_metrics

    _, validation = qqp_train_and_validation()
    scores, labels = score_labelled_pairs(model, validation, tokenizer)
    rng = np.random.default_rng(seed)
    found: dict[str, list[dict]] = {"platt": [], "isotonic": []}
    for _ in range(draws):
        order = rng.permutation(len(labels))
        halves = (order[: len(order) // 2], order[len(order) // 2 :])
        for method, runs in found.items():
            probabilities = np.empty(len(labels))
            for fit, held in (halves, halves[::-1]):
                probabilities[held] = fit_calibrator(scores[fit], labels[fit], method).probability(scores[held]).numpy()
            measured = calibration_metrics(probabilities, labels)
            drawn = (rng.random(len(labels)) < probabilities).astype(np.int64)
            measured["ece_floor"] = calibration_metrics(probabilities, drawn)["ece"]
            runs.append(measured)
    out: dict = {"qqp_validation_pairs": len(labels)}
    for method, runs in found.items():
        eces = [run["ece"] for run in runs]
        out[f"{method}_ece_mean"] = float(np.mean(eces))
        out[f"{method}_ece_worst"] = float(np.max(eces))
        out[f"{method}_brier_mean"] = float(np.mean([run["brier"] for run in runs]))
        out[f"{method}_ece_floor_mean"] = float(np.mean([run["ece_floor"] for run in runs]))
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argument_parser(__doc__)
    parser.add_argument("models", nargs="+", help="QQP-trained Siamese model folders.")
    parser.add_argument("--draws", type=int, default=20, help="Random draws (a) / random halvings (b).")
    parser.add_argument("--calibration_pairs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)

    import datasets
    import transformers
    from transformers import AutoModel, AutoTokenizer

    import hfsiamese  # noqa: F401

    datasets.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    results = []
    for folder in args.models:
        model = AutoModel.from_pretrained(folder).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        result = {
            "model": folder,
            "draws": args.draws,
            "calibration_pairs": args.calibration_pairs,
            **transfer(model, tokenizer, args.draws, args.calibration_pairs, args.seed),
            **in_domain(model, tokenizer, args.draws, args.seed),
        }
        emit(result, sort_keys=True)
        results.append(result)
    if args.markdown:
        for r in results:
            gaps = ", ".join(f"{m} {r[f'{m}_gap_mean']:+.3f} / {r[f'{m}_gap_worst']:+.3f}" for m in METHODS)
            print(
                f"| {r['model']} | {r['oracle_accuracy']:.3f} | {r['stored_threshold_accuracy']:.3f} | {gaps} | "
                f"platt {r['platt_ece_mean']:.3f} / {r['platt_ece_worst']:.3f} (floor {r['platt_ece_floor_mean']:.3f}), "
                f"isotonic {r['isotonic_ece_mean']:.3f} / {r['isotonic_ece_worst']:.3f} "
                f"(floor {r['isotonic_ece_floor_mean']:.3f}) |"
            )
    return results


if __name__ == "__main__":
    main()
