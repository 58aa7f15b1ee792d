#!/usr/bin/env python
"""`backend="auto"` decided again and again (issue 51): does it pick the fastest path, and does it keep its pick?

    python benchmarks/serving/backend_choice_repeat.py --model outputs/minilm_qqp --decisions 10

The model folder is copied into a scratch folder with exports side by side (`--exports`, default ONNX int8 dynamic
and OpenVINO fp32), as a user lays them out for `backend="auto"`. Then:

- the reference: every candidate scores the validation pairs (`--pairs_file`, default the MiniLM recipe's), in turn
  (A B C ... A B C) `--repeats` times, the best of each kept: the fastest there is the path to pick;
- `--decisions` fresh processes, each with its own empty cache (`XDG_CACHE_HOME`), decide as a user's first
  `load_model(folder, backend="auto")` does (its short probe); the share that picks the reference's fastest is the
  figure (target: 9 of 10);
- two more processes sharing one cache: the second reads the first's decision (no flip between processes).

Use the cores alone: another job on them changes which path is fastest.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, machine, write_json
from benchmarks.serving.cpu_backends import labelled_pairs
from hfsiamese import SiameseModel, load_model
from hfsiamese.base.calibration_sample import split_calibration_sample

EXPORTS = ("onnx_fp32", "onnx_int8_dynamic", "onnx_int8_static", "openvino_fp32", "openvino_int8")
# One decision as a user's process makes it: its chosen candidate's name on stdout, nothing else.
DECIDE = (
    "import sys\n"
    "from hfsiamese import load_model\n"
    "from hfsiamese.backend_choice import choose_backend\n"
    "print(choose_backend(sys.argv[1], load=load_model).name)\n"
)


def lay_out(source: str, exports: list[str], pairs: Any, scratch: Path) -> Path:
    """`source`'s own files copied to `scratch/model` (not its subfolders: exports it already carries would join the
    candidates, or collide with the ones asked for) with each export in a subfolder of its name."""
    from transformers import AutoTokenizer

    from hfsiamese.bi_encoder.onnx_export import export_onnx
    from hfsiamese.bi_encoder.openvino_export import export_openvino

    folder = scratch / "model"
    folder.mkdir()
    for path in Path(source).iterdir():
        if path.is_file():
            shutil.copy2(path, folder / path.name)
    model = SiameseModel.from_pretrained(source).eval()
    tokenizer = AutoTokenizer.from_pretrained(source)
    for name in exports:
        calibration = None
        if name.endswith("static") or name == "openvino_int8":
            sample = list(zip(pairs["question1"], pairs["question2"], strict=True))
            calibration = split_calibration_sample(sample, calibration_size=300)
        export = export_openvino if name.startswith("openvino") else export_onnx
        export(model, tokenizer, folder / name, quantize="int8" if "int8" in name else None, calibration=calibration)
    return folder


def reference(folder: Path, pairs: Any, repeats: int) -> dict[str, float]:
    """Pairs/s of each candidate on the pairs, best of `repeats` rounds taken in turn."""
    from hfsiamese.backend_choice import candidates

    texts_a, texts_b = list(pairs["question1"]), list(pairs["question2"])
    models = {candidate.name: load_model(candidate.path) for candidate in candidates(folder)}
    for model in models.values():
        model.score_pairs(texts_a[:64], texts_b[:64])  # warm-up
    best = {name: float("inf") for name in models}
    for _ in range(repeats):
        for name, model in models.items():
            start = time.perf_counter()
            model.score_pairs(texts_a, texts_b)
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: len(texts_a) / seconds for name, seconds in best.items()}


def decide(folder: Path, cache: Path) -> str:
    """The candidate a fresh process picks with `cache` as its XDG_CACHE_HOME."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run([sys.executable, "-c", DECIDE, str(folder)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"a decision failed: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argument_parser(__doc__)
    parser.add_argument("--model", required=True, help="A trained bi-encoder's folder (PyTorch).")
    parser.add_argument("--exports", nargs="+", default=["onnx_int8_dynamic", "openvino_fp32"], choices=EXPORTS)
    parser.add_argument("--pairs_file", default=None, help="Labelled pairs (default: the MiniLM recipe's validation).")
    parser.add_argument("--decisions", type=int, default=10, help="Fresh processes deciding (target: 9 of 10).")
    parser.add_argument("--repeats", type=int, default=3, help="Rounds of the reference timing.")
    parser.add_argument("--output_json", default=None)
    args = parser.parse_args(argv)
    pairs = labelled_pairs(args.pairs_file)
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        folder = lay_out(args.model, args.exports, pairs, scratch)
        rates = reference(folder, pairs, args.repeats)
        fastest = max(rates, key=rates.__getitem__)
        picks = [decide(folder, scratch / f"cache_{index}") for index in range(args.decisions)]
        first, second = decide(folder, scratch / "shared"), decide(folder, scratch / "shared")
    result = {
        "machine": machine(),
        "model": args.model,
        "pairs": len(pairs),
        "reference_pairs_per_s": {name: round(rate, 1) for name, rate in rates.items()},
        "reference_fastest": fastest,
        "decisions": dict(Counter(picks)),
        "picked_fastest": sum(pick == fastest for pick in picks),
        "of": len(picks),
        "kept_between_processes": first == second,
    }
    print(json.dumps(result, indent=2))
    if args.output_json:
        write_json(args.output_json, result)
    return result


if __name__ == "__main__":
    main()
