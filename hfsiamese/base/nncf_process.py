"""
NNCF's static int8 of an OpenVINO graph, run in a child process of its own so that it leaves the caller's process as
it found it.

In the caller's process NNCF did not: `nncf.quantize` asks every backend whether the model is its own, and the torch
one imports `nncf.torch` to ask (whenever torch is installed), which loads its graph hooks, extensions and their
dependencies into a process that trains with torch; NNCF also starts its telemetry's thread pools and its progress
bars' threads there. With those left behind, a later training run in one pytest process ended in a segmentation
fault (issue 51; the crash itself was OpenVINO's, see `hfsiamese.utils.openvino_runtime`, but what NNCF leaves is
not this library's to leave either). The child gets the graph and the calibration batches as files, quantises, writes
the int8 graph, and exits; the parent reads the graph back. The child is this file run as a script (`python -P`,
standard library, numpy, openvino and nncf only) with torch hidden from it, so NNCF takes its OpenVINO backend
without loading torch at all. NNCF's log lines and progress bars stay in the child's captured output: its warnings are
logged here, and a failure is one error with the child's last line.

Run by `quantize_in_child` as `python -P .../nncf_process.py FOLDER [--transformer]`; not a user command.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

SOURCE_FILE, QUANTIZED_FILE, FEEDS_FILE = "model.xml", "quantized.xml", "feeds.npz"
# How a calibration batch's arrays are named in the .npz file: batch number and input name.
_KEY_SEPARATOR = "::"
# The child's log lines the parent reads back as warnings.
_WARNING_PREFIX = "NNCF WARNING: "


def quantize_in_child(model: Any, feeds: list[dict[str, np.ndarray]], *, transformer: bool) -> Any:
    """
    The OpenVINO `model` quantised by NNCF on the calibration batches `feeds` (input name to array, every batch used;
    a transformer with NNCF's transformer scheme), computed in a child process (see the module docstring).
    """
    from hfsiamese.utils.openvino_runtime import require_openvino, shared_core

    openvino = require_openvino()
    with tempfile.TemporaryDirectory(prefix="hfsiamese-nncf-") as scratch:
        folder = Path(scratch)
        openvino.save_model(model, str(folder / SOURCE_FILE), compress_to_fp16=False)
        arrays = {
            f"{number}{_KEY_SEPARATOR}{name}": value
            for number, feed in enumerate(feeds)
            for name, value in feed.items()
        }
        np.savez(folder / FEEDS_FILE, **arrays)
        command = [sys.executable, "-P", __file__, str(folder), *(["--transformer"] if transformer else [])]
        finished = subprocess.run(command, capture_output=True, text=True, check=False)
        for line in finished.stderr.splitlines():
            if line.startswith(_WARNING_PREFIX):
                logger.warning("NNCF: %s", line.removeprefix(_WARNING_PREFIX))
        if finished.returncode != 0:
            last = (finished.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"NNCF's static int8 quantisation failed (exit {finished.returncode}): {last}")
        # Read into memory, not mapped from the scratch folder that is removed below.
        return shared_core().read_model(str(folder / QUANTIZED_FILE), config={"ENABLE_MMAP": False})


def _read_feeds(path: Path) -> list[dict[str, np.ndarray]]:
    """The calibration batches `quantize_in_child` wrote, in their order."""
    batches: dict[int, dict[str, np.ndarray]] = {}
    with np.load(path) as saved:
        for key in saved.files:
            number, name = key.split(_KEY_SEPARATOR, 1)
            batches.setdefault(int(number), {})[name] = saved[key]
    return [batches[number] for number in sorted(batches)]


def _quantize(folder: Path, *, transformer: bool) -> None:
    """The child's work: read the graph and batches in `folder`, quantise, write the int8 graph beside them."""
    # NNCF asks its torch backend about every model, which imports torch and nncf.torch: hidden, it answers no.
    sys.modules["torch"] = None  # type: ignore[assignment]  # the import system's "not importable" marker
    import nncf
    import openvino

    nncf_logger = logging.getLogger("nncf")
    for handler in list(nncf_logger.handlers):  # NNCF's own handler writes to stdout
        nncf_logger.removeHandler(handler)
    to_parent = logging.StreamHandler(sys.stderr)
    to_parent.setLevel(logging.WARNING)
    to_parent.setFormatter(logging.Formatter(_WARNING_PREFIX + "%(message)s"))
    nncf_logger.addHandler(to_parent)
    nncf_logger.propagate = False
    feeds = _read_feeds(folder / FEEDS_FILE)
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters, OverflowFix

    # 7-bit weights on every CPU (NNCF's overflow fix for every layer, not only a first convolution): without VNNI the
    # CPU plugin sums pairs of u8 x s8 products in int16 and saturates full-range weights (a one-MatMul graph quantised
    # as a transformer's: up to 25% of its output off on an AVX2 EPYC, 1.4% with the fix). An export is made on one CPU
    # and served on others, so one setting right on all of them, as the ONNX exports' reduced range.
    options: dict[str, Any] = {
        "subset_size": max(1, len(feeds)),
        "advanced_parameters": AdvancedQuantizationParameters(overflow_fix=OverflowFix.ENABLE),
    }
    if transformer:
        options["model_type"] = nncf.ModelType.TRANSFORMER
    else:
        # An LSTM or static encoder's only matrix product is its projection after pooling: NNCF put that product's
        # input quantizer before a max pooling, on outputs whose padded steps are -inf, an infinite range that lost
        # every embedding (the distilled LSTM recipe: mean cosine 0.005 to fp32). Left in fp32 (a small product:
        # nothing to gain in int8); validate=False: a graph without a projection has no MatMul to ignore.
        options["ignored_scope"] = nncf.IgnoredScope(types=["MatMul"], validate=False)
    model = openvino.Core().read_model(str(folder / SOURCE_FILE))
    quantized = nncf.quantize(model, nncf.Dataset(feeds), **options)
    openvino.save_model(quantized, str(folder / QUANTIZED_FILE), compress_to_fp16=False)


if __name__ == "__main__":
    _quantize(Path(sys.argv[1]), transformer="--transformer" in sys.argv[2:])


__all__ = ["quantize_in_child"]
