"""
A calibrated copy of a model folder (what `hfsiamese calibrate` writes): a new folder whose weights
and tokenizer are the source's files copied byte for byte, whose config holds the new threshold and
calibration, whose code files are this library's (so the stored calibration is applied after
`trust_remote_code=True` loading too), and whose model card says on what data the decision was
calibrated. The source folder is only read; a non-empty output folder is refused.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hfsiamese.utils.deprecation import renamed_option
from hfsiamese.utils.output_dirs import ensure_writable_folder

__all__ = [
    "CARD_SECTION_TITLE",
    "CalibrationArguments",
    "calibration_card_section",
    "check_calibrated_folder",
    "write_calibrated_folder",
]

CARD_NAME = "README.md"
CARD_SECTION_TITLE = "## Calibration on a new domain"
# Training leftovers that a calibrated model does not need.
_NOT_COPIED = ("checkpoint-*", "runs", "training_args.bin", "trainer_state.json")


@dataclass
class CalibrationArguments:
    """Which trained model to recalibrate, on which labelled pairs of the new domain, and where the copy goes."""

    model_name_or_path: str = field(metadata={"help": "Folder of a trained Siamese model (only read)."})
    calibration_file: str = field(
        metadata={"help": "Labelled pairs of the new domain (any format hfsiamese.data.load_pairs reads; ~50+ pairs)."}
    )
    output_dir: str = field(metadata={"help": "New folder for the calibrated model (must not exist or be empty)."})
    calibration_method: str = field(
        default="threshold",
        metadata={
            "help": "'threshold' (move config.threshold), 'platt' or 'isotonic' (also store a score -> P(duplicate) map)."
        },
    )
    # Renamed calibration_method, as `hfsiamese evaluate`'s; kept for one release.
    method: str | None = field(default=None, metadata={"help": "Deprecated: use --calibration_method."})
    calibrate_for: str = field(
        default="accuracy", metadata={"help": "The threshold maximises 'accuracy' or 'f1', or reaches 'precision'."}
    )
    target_precision: float | None = field(
        default=None, metadata={"help": "With calibrate_for precision: the precision to reach (e.g. 0.9)."}
    )
    data_format: str | None = field(default=None, metadata={"help": "Force the file format."})
    question1_column: str | None = field(default=None, metadata={"help": "Column of the first texts."})
    question2_column: str | None = field(default=None, metadata={"help": "Column of the second texts."})
    label_column: str | None = field(default=None, metadata={"help": "Column of the 0/1 labels."})
    num_bootstrap: int = field(
        default=1000, metadata={"help": "Bootstrap resamples for the threshold's 90 percent interval."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of the bootstrap."})
    batch_size: int = field(default=256, metadata={"help": "Texts per encoding batch."})
    max_length: int | None = field(default=None, metadata={"help": "Tokens kept per text (default: tokenizer's)."})

    def __post_init__(self) -> None:
        renamed_option(self, "method", "calibration_method")


def write_calibrated_folder(model: Any, source_dir: str | Path, output_dir: str | Path, report: Any) -> Path:
    """
    Write `model` (loaded from `source_dir`, then calibrated, `report` its `CalibrationReport`) to the
    new folder `output_dir`. Returns the output folder.
    """
    source, output = check_calibrated_folder(source_dir, output_dir)
    shutil.copytree(source, output, ignore=shutil.ignore_patterns(*_NOT_COPIED), dirs_exist_ok=True)
    with tempfile.TemporaryDirectory() as saved:
        # The config and the modeling code as save_pretrained writes them; the weights saved there are dropped.
        model.save_pretrained(saved)
        for file in Path(saved).iterdir():
            if file.name == "config.json" or file.suffix == ".py":
                shutil.copy2(file, output / file.name)
    card = output / CARD_NAME
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    card.write_text(_with_section(text, calibration_card_section(report)), encoding="utf-8")
    return output


def check_calibrated_folder(source_dir: str | Path, output_dir: str | Path) -> tuple[Path, Path]:
    """The source folder and the new one, resolved; refuses a source that is no local folder and an output
    folder that is not empty or lies inside the source. Cheap: the recipe calls it before any scoring."""
    source, output = Path(source_dir).resolve(), Path(output_dir).resolve()
    if not source.is_dir():
        raise ValueError(
            f"{source_dir} is not a local model folder: a calibrated copy is made of a folder (download a Hub model "
            "first, e.g. with `hf download`)"
        )
    if output == source or source in output.parents:
        raise ValueError(
            f"output_dir {output_dir} is (inside) the model folder {source_dir}: choose a folder outside it"
        )
    ensure_writable_folder(
        output, label="output_dir", remedy="choose a new --output_dir (the source folder is never touched)"
    )
    return source, output


def calibration_card_section(report: Any) -> str:
    """The model card's Markdown section on the calibration: data, size, method, threshold and its interval."""
    low, high = report.threshold_interval
    target = report.target + (f" {report.target_precision}" if report.target_precision is not None else "")
    lines = [
        CARD_SECTION_TITLE,
        "",
        (
            f"The decision was recalibrated without retraining on {report.num_pairs} labelled pairs "
            f"({report.num_duplicates} duplicates) of `{report.data_name or 'an unnamed set'}`: method "
            f"`{report.method}`, for {target}. A pair is a duplicate when its score >= {report.threshold:.4f} "
            f"(bootstrap {report.interval_confidence:.0%} interval of that threshold: {low:.4f} to {high:.4f})."
        ),
    ]
    if report.method in ("platt", "isotonic"):
        lines.append(
            "Predictions also carry `probability`, the calibrated P(duplicate) on that data, and take "
            "`probability_threshold=`."
        )
    lines += ["", "| metric on the calibration pairs (in-sample) | value |", "|---|---|"]
    for name in ("accuracy", "precision", "recall", "f1", "average_precision", "roc_auc", "ece", "brier"):
        if name in report.metrics:
            lines.append(f"| {name} | {report.metrics[name]:.4f} |")
    if report.warnings:
        lines += ["", "Warnings of the calibration:", "", *(f"- {note}" for note in report.warnings)]
    return "\n".join(lines) + "\n"


def _with_section(card: str, section: str) -> str:
    """The card with its calibration section replaced (a model calibrated twice keeps only the last one)."""
    pattern = re.compile(rf"^{re.escape(CARD_SECTION_TITLE)}\n.*?(?=^## |\Z)", flags=re.MULTILINE | re.DOTALL)
    if pattern.search(card):
        return pattern.sub(lambda _: section + "\n", card, count=1).rstrip("\n") + "\n"
    return (card.rstrip("\n") + "\n\n" if card.strip() else "") + section
