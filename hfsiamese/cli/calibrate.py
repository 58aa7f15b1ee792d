"""`hfsiamese calibrate`: recalibrate a trained Siamese model's (or a cross-encoder's) decision on a new domain; prints the report as ONE JSON object.

    hfsiamese calibrate --model_name_or_path outputs/lstm_qqp --calibration_file my_pairs.tsv \
        --output_dir outputs/lstm_qqp_mydomain --calibration_method platt

A few labelled pairs of the new domain (about 50 or more) move the threshold (`--calibration_method threshold`,
`--calibrate_for accuracy|f1|precision --target_precision P`) or also fit a map from score to
P(duplicate) (`platt`, `isotonic`), without retraining. The calibrated model is written to a NEW
folder: weights and tokenizer copied unchanged, config and model card updated with the calibration
set's name and size; the source folder is never touched and a non-empty `--output_dir` is refused.
The report: the chosen threshold, its bootstrap 90% interval, the metrics on the calibration pairs
(in-sample) and warnings when they are too few for what was asked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer

from hfsiamese.bi_encoder.calibrated_folder import (
    CalibrationArguments,
    check_calibrated_folder,
    write_calibrated_folder,
)
from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.command_parser import command_parser
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.data import load_pairs
from hfsiamese.loading import load_pair_model
from hfsiamese.utils.console import configure_quiet_console

DESCRIPTION = (
    "Recalibrate a trained model's decision on a new domain into a new folder; prints the report as one JSON object."
)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """`hfsiamese calibrate --model_name_or_path MODEL --calibration_file PAIRS --output_dir NEW`: the report."""
    parser = command_parser(CalibrationArguments, prog="hfsiamese calibrate", description=DESCRIPTION)
    (args,) = parse_config_and_flags(parser, argv)
    configure_quiet_console()
    check_calibrated_folder(args.model_name_or_path, args.output_dir)  # fail before scoring anything, not after
    model = load_pair_model(args.model_name_or_path)  # a Siamese model or a cross-encoder
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    pairs = load_pairs(
        args.calibration_file,
        format=args.data_format,
        question1_column=args.question1_column,
        question2_column=args.question2_column,
        label_column=args.label_column,
        deduplicate=False,  # the labelled pairs as given
    )
    report = model.calibrate(
        pairs,
        method=args.calibration_method,
        calibrate_for=args.calibrate_for,
        target_precision=args.target_precision,
        tokenizer=tokenizer,
        data_name=Path(args.calibration_file).name,
        num_bootstrap=args.num_bootstrap,
        seed=args.seed,
        batch_size=args.batch_size,
        max_length=args.max_length,
    )
    write_calibrated_folder(model, args.model_name_or_path, args.output_dir, report)
    result = {**report.to_dict(), "output_dir": str(args.output_dir)}
    print(json.dumps(result, sort_keys=True))
    # Said outside the JSON too (stdout stays one JSON object for scripts): where the calibrated copy went.
    print(
        f"Calibrated model saved to {args.output_dir} (threshold {report.threshold:.4f}, {report.method})",
        file=sys.stderr,
    )
    return result


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
