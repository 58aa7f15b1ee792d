"""
`load_model(folder, backend="auto")`: of the runtimes and precisions a model folder carries, the one that scores pairs
fastest on this CPU, timed once and kept.

A folder carries itself (a PyTorch checkpoint, or an ONNX or OpenVINO export) and the exports side by side in its
immediate subfolders (`hfsiamese export --model_name_or_path M --output_dir M/openvino_int8`, say): each subfolder
whose config.json has an `onnx` or `openvino` entry is a candidate. Each candidate is loaded and times `score_pairs`
on `PROBE_PAIRS` fixed question pairs (one warm-up, then the best of `REPEATS`); the fastest is loaded. Accuracy is
not timed here: a static int8 export met its accuracy bar when it was written (`hfsiamese.base.int8_accuracy`), or was
kept past it on the user's word (`--int8_on_failure warn`).

A timing is not a stable decision (two candidates within a few per cent swap places between processes), so the
decision is kept per CPU and folder in `$XDG_CACHE_HOME/hfsiamese/backend_choices.json` (beside the bf16 speed-ups,
`hfsiamese.utils.measurement_memory`), keyed by the CPU, the thread count, the folder's path and a fingerprint of each
candidate (its config.json and graph or weight files' sizes and times): a new or rewritten export is timed anew.
Delete the file to time again. What was chosen and why is logged.

Hand-written: sentence-transformers and optimum choose a backend by the caller's word, not by measurement.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hfsiamese.utils.measurement_memory import keep_first, machine_key, memory_file, read_kept
from hfsiamese.utils.onnx_runtime import onnx_entry
from hfsiamese.utils.openvino_runtime import openvino_entry

logger = logging.getLogger(__name__)

#: "auto": the fastest of everything the folder carries; a runtime's name: the fastest of that runtime's candidates
#: (the only one, untimed, where there is one), as sentence-transformers' `backend=` names a runtime.
BACKENDS = ("auto", "pytorch", "onnx", "openvino")
_RUNTIME_OF = {"pytorch": "PyTorch", "onnx": "ONNX", "openvino": "OpenVINO"}
#: What a command's `--backend` says of itself (evaluate, search, groups, app, serve).
RUNTIME_HELP = (
    "The model's runtime: auto, of the model folder and the ONNX/OpenVINO exports in its subfolders, the fastest on "
    "this CPU, timed once and kept; pytorch, onnx or openvino: the fastest of that runtime's (default: the folder as "
    "it is)."
)
CHOICES_FILE = "backend_choices.json"
REPEATS = 3
_QUESTIONS = [
    "how do i learn python quickly ?",
    "what is the best way to learn python for data science ?",
    "how can i lose weight fast without dieting ?",
    "why is the sky blue during the day and red at sunset ?",
    "how do i cook rice in a pot without a rice cooker ?",
    "what is the capital of france and why is it famous ?",
    "which programming language should a beginner learn first ?",
    "how do airplanes stay in the air ?",
]
# The timed pairs: each question against each other one (56 pairs), as scoring meets them.
PROBE_PAIRS = [(a, b) for a in _QUESTIONS for b in _QUESTIONS if a != b]
# Files whose change means another graph or other weights (their sizes and modification times are fingerprinted).
_WEIGHT_SUFFIXES = (".safetensors", ".onnx", ".xml", ".bin", ".data")


@dataclass(frozen=True)
class Candidate:
    """One way a folder can be run: `name` ("." for the folder itself, else its subfolder), its path, what it is."""

    name: str
    path: Path
    description: str

    def fingerprint(self) -> str:
        """The config.json and the graph or weight files, by content (config) and size and time (the rest)."""
        digest = hashlib.sha256((self.path / "config.json").read_bytes())
        for file in sorted(self.path.iterdir()):
            if file.is_file() and file.suffix in _WEIGHT_SUFFIXES:
                stat = file.stat()
                digest.update(f"{file.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        return digest.hexdigest()[:16]


def describe(values: dict[str, Any]) -> str:
    """What a config.json's values say a folder runs on: "OpenVINO int8 (static)", "ONNX fp32", "PyTorch fp32"."""
    for runtime, entry in (("OpenVINO", openvino_entry(values)), ("ONNX", onnx_entry(values))):
        if entry:
            precision = entry.get("quantization") or "fp32"
            mode = f" ({entry['int8_mode']})" if precision == "int8" and entry.get("int8_mode") else ""
            return f"{runtime} {precision}{mode}"
    return "PyTorch fp32"


def _config(folder: Path) -> dict[str, Any]:
    """A local folder's config.json (a folder without one, or unreadable JSON: one line naming the file)."""
    file = folder / "config.json"
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{file}: backend='auto' cannot read this model's config.json: {err}") from err


def candidates(folder: str | os.PathLike) -> list[Candidate]:
    """The folder itself and every immediate subfolder holding an ONNX or OpenVINO export, in name order."""
    root = Path(folder)
    found = [Candidate(".", root, describe(_config(root)))]
    for sub in sorted(path for path in root.iterdir() if (path / "config.json").is_file()):
        values = _config(sub)
        if openvino_entry(values) or onnx_entry(values):
            found.append(Candidate(sub.name, sub, describe(values)))
    return found


def time_candidate(candidate: Candidate, load: Callable[[Path], Any]) -> float:
    """
    Seconds `score_pairs` takes on `PROBE_PAIRS` with the candidate loaded by `load` (`hfsiamese.load_model`: passed
    in, so that this module does not import the loader that calls it), best of `REPEATS` after a warm-up.
    """
    model = load(candidate.path)
    texts_a, texts_b = (list(side) for side in zip(*PROBE_PAIRS, strict=True))
    model.score_pairs(texts_a, texts_b)
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        model.score_pairs(texts_a, texts_b)
        best = min(best, time.perf_counter() - start)
    return best


def choices_file() -> Path:
    """Where the decisions are kept: beside the bf16 speed-ups."""
    return memory_file().with_name(CHOICES_FILE)


def choose_backend(
    folder: str | os.PathLike,
    *,
    load: Callable[[Path], Any],
    timer: Callable[[Candidate], float] | None = None,
    path: Path | None = None,
    backend: str = "auto",
) -> Candidate:
    """
    The candidate of `folder` kept for this CPU, else the fastest by `timer` (default: `time_candidate` with `load`),
    kept in `path` (default `choices_file()`); see the module docstring. `backend` other than "auto" chooses among
    that runtime's candidates only (a folder without one: a one-line error naming what it carries).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if timer is None:

        def timer(candidate: Candidate) -> float:
            return time_candidate(candidate, load)

    found = candidates(folder)
    if backend != "auto":
        runtime = _RUNTIME_OF[backend]
        carried = ", ".join(f"{candidate.name} ({candidate.description})" for candidate in found)
        found = [candidate for candidate in found if candidate.description.startswith(runtime + " ")]
        if not found:
            raise ValueError(f"backend={backend!r}: {folder} carries no {runtime} model (it carries: {carried})")
    path = choices_file() if path is None else path
    fingerprints = ",".join(f"{candidate.name}={candidate.fingerprint()}" for candidate in found)
    entry = f"{machine_key()} | {Path(folder).resolve()} | {fingerprints}"
    if backend != "auto":  # a choice within one runtime is kept apart from the choice among all
        entry += f" | {backend}"
    by_name = {candidate.name: candidate for candidate in found}
    kept = read_kept(path).get(entry)
    if kept is not None and kept.get("chosen") in by_name:
        chosen = by_name[kept["chosen"]]
        logger.info(
            "backend auto: %s (%s), as measured %s (kept in %s)",
            chosen.name,
            chosen.description,
            kept["measured"],
            path,
        )
        return chosen
    if len(found) == 1:
        logger.info("backend auto: %s (%s), the only one %s carries", found[0].name, found[0].description, folder)
        return found[0]
    seconds = {candidate.name: timer(candidate) for candidate in found}
    fastest = min(found, key=lambda candidate: seconds[candidate.name])
    pairs_per_second = {name: round(len(PROBE_PAIRS) / max(value, 1e-9), 1) for name, value in seconds.items()}
    value = {
        "chosen": fastest.name,
        "pairs_per_second": pairs_per_second,
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    kept = keep_first(path, entry, value) or value
    chosen = by_name.get(kept["chosen"], fastest)
    logger.info(
        "backend auto: %s (%s), the fastest of %s on this CPU in pairs/s (kept in %s)",
        chosen.name,
        chosen.description,
        ", ".join(f"{by_name[name].description} [{name}] {rate}" for name, rate in pairs_per_second.items()),
        path,
    )
    return chosen


__all__ = [
    "BACKENDS",
    "RUNTIME_HELP",
    "PROBE_PAIRS",
    "Candidate",
    "candidates",
    "choices_file",
    "choose_backend",
    "describe",
    "time_candidate",
]
