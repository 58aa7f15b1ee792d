#!/usr/bin/env python
"""CPU backends side by side (issue 51): texts/s of encode, pairs/s of scoring and validation AP of one model in each.

    python benchmarks/serving/cpu_backends.py --model outputs/minilm_qqp --output_json outputs/cpu_backends.json
    python benchmarks/serving/cpu_backends.py --model outputs/lstm_qqp --variants pytorch_fp32 openvino_fp32

For the model folder `--model` (a trained bi-encoder; `minilm` wraps the pretrained all-MiniLM-L6-v2), each variant
asked for (`--variants`, default all) is made in a temporary folder and measured on the same texts:

- pytorch_fp32, pytorch_bf16 (bf16 autocast; only where the CPU computes in bf16 natively);
- onnx_fp32, onnx_int8_dynamic, onnx_int8_static, openvino_fp32, openvino_int8 (static, NNCF): hfsiamese's exports,
  static int8 calibrated on `--calibration_pairs` pairs of the labelled file and checked on others;
- st_onnx_int8, st_openvino_int8: sentence-transformers' own ONNX (dynamic int8) and OpenVINO (static int8)
  backends, for a model sentence-transformers can load (MiniLM); a variant that cannot be made is reported with
  its reason instead of figures.

The labelled pairs are `--pairs_file` (default: the validation split of the MiniLM recipe, as `recipes/train.py`
makes it). Encoding times `--texts` texts (both sides of the pairs, in order), scoring the pairs; each variant runs
in turn (A B C ... A B C) `--repeats` times after a warm-up, the best run of each kept, and every figure is also given
as a ratio to pytorch_fp32 within the run. Use the cores alone: another job on them changes every figure.

Beside the variants, `tokenizing_alone` times what every one of them does before its model runs: the texts tokenised
in chunks on `encode`'s background thread and cut into padded batches (`encoding_batches`), with no model. Its texts/s
is the most any backend can encode through the library's pipeline, so its ratio to pytorch_fp32 bounds every
variant's (for a static student, whose model is a table lookup, the bound is under 2×).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.metrics import average_precision_score

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, machine, write_json
from hfsiamese import SiameseModel, load_model
from hfsiamese.base.calibration_sample import split_calibration_sample
from hfsiamese.data import load_pairs
from hfsiamese.utils.cpu_features import CpuFeatures, detected_features
from hfsiamese.utils.encode_precision import native_cpu_bf16

VARIANTS = (
    "pytorch_fp32",
    "pytorch_bf16",
    "onnx_fp32",
    "onnx_int8_dynamic",
    "onnx_int8_static",
    "openvino_fp32",
    "openvino_int8",
    "st_onnx_int8",
    "st_openvino_int8",
)


class Scorer:
    """One variant as measured: `encode(texts)` and `score(texts_a, texts_b)`."""

    def __init__(self, encode: Callable[[list[str]], Any], score: Callable[[list[str], list[str]], Any]) -> None:
        self.encode, self.score = encode, score


def hfsiamese_scorer(model: Any, **kwargs: Any) -> Scorer:
    return Scorer(lambda texts: model.encode(texts, **kwargs), lambda a, b: model.score_pairs(a, b, **kwargs))


def sentence_transformers_scorer(model: SiameseModel, tokenizer: Any, backend: str, scratch: Path) -> Scorer:
    """
    sentence-transformers' own `backend` with its own int8 export (ONNX dynamic, OpenVINO static) of the same
    model, written as a sentence-transformers folder by `export_sentence_transformers`.
    """
    import importlib.util

    import transformers

    if importlib.util.find_spec("optimum") is None:  # ST's ONNX and OpenVINO backends are optimum's
        raise ImportError(
            f"sentence-transformers' {backend} backend needs optimum"
            f"{'-intel' if backend == 'openvino' else ''}, not installed here (optimum 2.x requires "
            f"transformers<5; this environment has transformers {transformers.__version__})"
        )
    from sentence_transformers import (
        SentenceTransformer,
        export_dynamic_quantized_onnx_model,
        export_static_quantized_openvino_model,
    )

    from hfsiamese.bi_encoder.sentence_transformers_export import export_sentence_transformers

    folder = scratch / f"st_{backend}"
    export_sentence_transformers(model, folder, tokenizer)
    model = SentenceTransformer(str(folder), backend=backend, device="cpu")
    if backend == "onnx":
        config = st_onnx_config()
        export_dynamic_quantized_onnx_model(model, config, str(folder))
        file = f"onnx/model_qint8_{config}.onnx"
    else:
        from optimum.intel import OVQuantizationConfig

        export_static_quantized_openvino_model(model, OVQuantizationConfig(), str(folder))
        file = "openvino/openvino_model_qint8_quantized.xml"
    model = SentenceTransformer(str(folder), backend=backend, device="cpu", model_kwargs={"file_name": file})

    def score(a: list[str], b: list[str]) -> Any:
        first, second = model.encode(a, normalize_embeddings=True), model.encode(b, normalize_embeddings=True)
        return (first * second).sum(-1)

    return Scorer(lambda texts: model.encode(texts), score)


def st_onnx_config(features: CpuFeatures | None = None) -> str:
    """The dynamic int8 configuration sentence-transformers' docs advise for this CPU (its peer is quantised as a
    user of it would be): "avx512_vnni" with AVX-512 and VNNI, "avx512" with AVX-512, else "avx2"."""
    features = features or detected_features()
    if features.avx512:
        return "avx512_vnni" if features.vnni else "avx512"
    return "avx2"


def tokenizing_alone(model: SiameseModel, tokenizer: Any) -> Callable[[list[str]], int]:
    """`encode`'s work without its model: tokenised chunks (read one ahead on a background thread, as `encode` reads
    them) cut into padded batches of `encode`'s default size; the run returns the rows it batched."""
    from hfsiamese.models.siamese.encoding_batches import padded_batches, text_chunks

    max_length = model.default_max_length(tokenizer)
    batch_size = inspect.signature(model.encode).parameters["batch_size"].default
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    def run(texts: list[str]) -> int:
        rows = 0
        for chunk in text_chunks(texts, tokenizer, max_length):
            for batch in padded_batches(chunk, batch_size, pad_id, tokenizer.padding_side):
                rows += len(batch.positions)
        return rows

    return run


def make_variant(name: str, model: SiameseModel, tokenizer: Any, pairs, scratch: Path, args) -> Scorer:
    """The variant `name` of `model` (exported into `scratch` where it needs a folder)."""
    if name == "pytorch_fp32":
        return hfsiamese_scorer(model, tokenizer=tokenizer, dtype=torch.float32)
    if name == "pytorch_bf16":
        if not native_cpu_bf16():
            raise RuntimeError("this CPU has no native bf16")
        return hfsiamese_scorer(model, tokenizer=tokenizer, dtype=torch.bfloat16)
    if name.startswith("st_"):
        return sentence_transformers_scorer(model, tokenizer, name.split("_")[1], scratch)
    static = name in ("onnx_int8_static", "openvino_int8")
    calibration = None
    if static:
        sample = list(zip(pairs["question1"], pairs["question2"], strict=True))
        calibration = split_calibration_sample(sample, calibration_size=args.calibration_pairs)
    options = {"quantize": "int8" if "int8" in name else None, "calibration": calibration}
    folder = scratch / name
    if name.startswith("openvino"):
        from hfsiamese.bi_encoder.openvino_export import export_openvino

        export_openvino(model, tokenizer, folder, **options)
    else:
        from hfsiamese.bi_encoder.onnx_export import export_onnx

        export_onnx(model, tokenizer, folder, **options)
    return hfsiamese_scorer(load_model(folder))


def peer_rows(args, model, tokenizer, texts, texts_a, texts_b, labels, variants, scratch) -> dict[str, Any]:
    """
    sentence-transformers' variants measured by `st_backends_worker.py` in `--st_python` (an interpreter with
    sentence-transformers and optimum, which needs transformers<5), on a sentence-transformers export of `model`.
    """
    import subprocess

    from hfsiamese.bi_encoder.sentence_transformers_export import export_sentence_transformers

    folder = Path(scratch) / "st_folder"
    export_sentence_transformers(model, folder, tokenizer)
    pairs_json = Path(scratch) / "st_pairs.json"
    calibration = [text for pair in zip(texts_a, texts_b, strict=True) for text in pair][: 2 * args.calibration_pairs]
    content = {"texts": texts, "texts_a": texts_a, "texts_b": texts_b, "calibration": calibration}
    pairs_json.write_text(json.dumps(content), encoding="utf-8")
    worker = Path(__file__).with_name("st_backends_worker.py")
    command = [args.st_python, str(worker), "--folder", str(folder), "--pairs_json", str(pairs_json),
               "--repeats", str(args.repeats), "--onnx_config", st_onnx_config(),
               "--variants", "st_torch_fp32", *variants]  # fmt: skip
    finished = subprocess.run(command, capture_output=True, text=True, check=False)
    rows: dict[str, Any] = {}
    for line in finished.stdout.splitlines():
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        if "skipped" in row:
            rows.setdefault("peer_skipped", {})[row["variant"]] = row["skipped"]
            continue
        rows[row["variant"]] = {
            "texts_per_s": len(texts) / row["encode_seconds"],
            "pairs_per_s": len(labels) / row["score_seconds"],
            "average_precision": float(average_precision_score(labels, np.asarray(row["scores"]))),
            **({"onnx_config": row["onnx_config"]} if "onnx_config" in row else {}),
        }
    if finished.returncode != 0:
        tail = finished.stderr.strip().splitlines()[-1:] or ["no output"]
        rows.setdefault("peer_skipped", {})["st_backends_worker"] = f"exit {finished.returncode}: {tail[0]}"
    return rows


def timed(run: Callable[[], Any], times: list[float]) -> None:
    """Run `run` once, appending its seconds to `times`."""
    start = time.perf_counter()
    run()
    times.append(time.perf_counter() - start)


def labelled_pairs(pairs_file: str | None) -> Any:
    """The pairs a run scores: `pairs_file` as given, else the MiniLM recipe's validation split."""
    if pairs_file:
        return load_pairs(pairs_file, deduplicate=False)
    from benchmarks.common.qqp_slices import recipe_splits

    return recipe_splits()["validation"]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from transformers import AutoTokenizer

    peer_variants = [name for name in args.variants if name.startswith("st_")] if args.st_python else []
    if args.model == "minilm":
        from hfsiamese.utils.minilm import resolve_minilm_path

        source = resolve_minilm_path()
        model = SiameseModel.from_encoder_pretrained(source).eval()
    else:
        source = args.model
        model = SiameseModel.from_pretrained(source).eval()
    tokenizer = AutoTokenizer.from_pretrained(source)
    pairs = labelled_pairs(args.pairs_file)
    texts_a, texts_b = list(pairs["question1"]), list(pairs["question2"])
    texts = [text for pair in zip(texts_a, texts_b, strict=True) for text in pair][: args.texts]
    labels = np.asarray(pairs["label"])
    result: dict[str, Any] = {"machine": machine(), "model": args.model, "texts": len(texts), "pairs": len(labels)}
    scorers: dict[str, Scorer] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.variants:
            if name in peer_variants:
                continue
            try:
                scorers[name] = make_variant(name, model, tokenizer, pairs, Path(scratch), args)
            except (ImportError, RuntimeError, ValueError) as err:  # a variant this machine or model cannot make
                result.setdefault("skipped", {})[name] = f"{type(err).__name__}: {err}"
        encode_times: dict[str, list[float]] = {name: [] for name in scorers}
        score_times: dict[str, list[float]] = {name: [] for name in scorers}
        tokenize = tokenizing_alone(model, tokenizer)
        tokenize_times: list[float] = []
        for scorer in scorers.values():  # warm-up: kernels chosen, memory allocated
            scorer.encode(texts[:64])
        for _ in range(args.repeats):
            timed(lambda: tokenize(texts), tokenize_times)
            for name, scorer in scorers.items():
                timed(lambda scorer=scorer: scorer.encode(texts), encode_times[name])
                timed(lambda scorer=scorer: scorer.score(texts_a, texts_b), score_times[name])
        result["tokenizing_alone"] = {"texts_per_s": len(texts) / min(tokenize_times)}
        for name, scorer in scorers.items():
            scores = np.asarray(scorer.score(texts_a, texts_b), dtype=np.float64)
            row = {
                "texts_per_s": len(texts) / min(encode_times[name]),
                "pairs_per_s": len(labels) / min(score_times[name]),
                "average_precision": float(average_precision_score(labels, scores)),
            }
            result[name] = row
        if peer_variants:  # after ours, never beside them: the cores are the peer's alone while it runs
            result.update(peer_rows(args, model, tokenizer, texts, texts_a, texts_b, labels, peer_variants, scratch))
            result.setdefault("skipped", {}).update(result.pop("peer_skipped", {}))
    if "pytorch_fp32" in scorers:
        base = result["pytorch_fp32"]
        for name in [name for name in result if isinstance(result[name], dict) and "texts_per_s" in result[name]]:
            result[name]["encode_vs_pytorch_fp32"] = result[name]["texts_per_s"] / base["texts_per_s"]
            if "average_precision" in result[name]:  # not tokenizing_alone, which scores nothing
                result[name]["ap_minus_pytorch_fp32"] = result[name]["average_precision"] - base["average_precision"]
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argument_parser(__doc__)
    parser.add_argument("--model", required=True, help="A trained bi-encoder's folder, or 'minilm'.")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS, metavar="VARIANT")
    parser.add_argument("--pairs_file", default=None, help="Labelled pairs (default: the MiniLM recipe's validation).")
    parser.add_argument("--texts", type=int, default=20000, help="Texts encoded per timed run.")
    parser.add_argument("--repeats", type=int, default=3, help="Timed runs of each variant (the best is kept).")
    parser.add_argument("--calibration_pairs", type=int, default=300, help="Pairs static int8 calibrates on.")
    parser.add_argument(
        "--st_python",
        default=None,
        help="An interpreter with sentence-transformers, optimum and optimum-intel (they need transformers<5): "
        "the st_* variants run there, by st_backends_worker.py, after ours (st_torch_fp32 added as their anchor).",
    )
    parser.add_argument("--output_json", default=None)
    args = parser.parse_args(argv)
    result = measure(args)
    print(json.dumps(result, indent=2))
    if args.output_json:
        write_json(args.output_json, result)
    return result


if __name__ == "__main__":
    main()
