#!/usr/bin/env python
"""ONNX serving figures: equivalence with PyTorch, validation AP, encoding speed, and the app's search latency.

    python benchmarks/serving/onnx_inference.py --model lstm=outputs/lstm_qqp --model minilm=minilm \\
        --output_json outputs/onnx_inference.json

`NAME=PATH` names a trained Siamese model folder; `PATH` = `minilm` wraps the pretrained all-MiniLM-L6-v2
(`SiameseModel.from_encoder_pretrained`) instead. For each model, its fp32 and int8 ONNX exports
(`hfsiamese.bi_encoder.onnx_export`, into a temporary folder) are compared with PyTorch on:

- the distinct questions of the recipe's validation pairs (`recipes/configs/lstm_qqp.yaml`'s split):
  max abs embedding difference ONNX fp32 vs PyTorch, cosine of int8 to fp32 (mean and min);
- the validation pairs' average precision (scores of `score_pairs`), PyTorch vs each export;
- encoding the 20,000 question texts of QQP dev (both sides of its 10,000 pairs) with each of
  `--threads` thread counts (torch and onnxruntime alike): PyTorch fp32, PyTorch bf16 autocast
  (transformers), ONNX fp32, ONNX int8, run in turn (A B C D A B C D ...) `--repeats` times so that a
  slow spell of the shared machine hits all alike; the best run of each is compared;
- `--app_corpus_size` (default 100,000) texts: the app's search (`hfsiamese.cli.app_page.DuplicateSearch.search`:
  query encoding, exact top-k, the page's table) per query, median and 95th percentile over
  `--app_queries` queries, with the model's int8 export. The corpus is QQP dev's 19,056 distinct
  questions plus synthetic variants of them (one word dropped and two neighbouring words swapped, at
  random positions, seed 0) until it holds that many distinct texts.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime
import torch
from sklearn.metrics import average_precision_score
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
import hfsiamese  # noqa: F401
from benchmarks.common.harness import EMBEDDED_PAIRS as REPO_QQP, argument_parser, write_json
from benchmarks.common.qqp_slices import recipe_splits
from hfsiamese import SiameseModel, load_siamese_model
from hfsiamese.bi_encoder.onnx_export import export_onnx
from hfsiamese.cli.app_page import DuplicateSearch
from hfsiamese.search import DuplicateIndex
from hfsiamese.utils.minilm import resolve_minilm_path

QQP_DEV = Path("/work/shared/data/qqp/dev.tsv")


def qqp_texts() -> list[str]:
    """Both sides of every QQP dev pair, in file order (20,000 texts)."""
    path = QQP_DEV if QQP_DEV.is_file() else REPO_QQP
    texts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        texts += [fields[1], fields[2]]
    return texts


def synthetic_corpus(questions: list[str], size: int, seed: int = 0) -> list[str]:
    """`questions` plus variants (one word dropped, two neighbours swapped) until `size` distinct texts."""
    rng = random.Random(seed)
    corpus = dict.fromkeys(questions)
    while len(corpus) < size:
        words = rng.choice(questions).split()
        if len(words) < 4:
            continue
        del words[rng.randrange(len(words))]
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
        corpus.setdefault(" ".join(words))
    return list(corpus)[:size]


def load_pytorch(path: str) -> tuple[SiameseModel, object]:
    if path == "minilm":
        source = resolve_minilm_path()
        return SiameseModel.from_encoder_pretrained(source).eval(), AutoTokenizer.from_pretrained(source)
    return SiameseModel.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def timed_encode(model, texts, tokenizer, **kwargs) -> tuple[float, torch.Tensor]:
    start = time.perf_counter()
    embeddings = model.encode(texts, tokenizer, batch_size=64, **kwargs)
    return time.perf_counter() - start, embeddings


def onnx_models(folders: dict[str, Path], threads: int) -> dict[str, object]:
    """The exported models, each on an onnxruntime session of `threads` intra-op threads."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    return {key: load_siamese_model(folder, session_options=options) for key, folder in folders.items()}


def measure(name: str, path: str, args: argparse.Namespace, scratch: Path) -> dict:
    most = max(args.threads)
    torch.set_num_threads(most)
    model, tokenizer = load_pytorch(path)
    folders = {}
    for quantize in (None, "int8"):
        folders[quantize or "fp32"] = out = scratch / f"{name}_{quantize or 'fp32'}"
        start = time.perf_counter()
        config = export_onnx(model, tokenizer, out, quantize=quantize, source_dir=None if path == "minilm" else path)
        print(f"[{name}] export {quantize or 'fp32'}: {time.perf_counter() - start:.1f} s, {config.onnx}", flush=True)
    exported = onnx_models(folders, most)
    onnx_fp32, onnx_int8 = exported["fp32"], exported["int8"]
    result: dict = {"model": path}

    validation = recipe_splits()["validation"]
    questions = list(dict.fromkeys(list(validation["question1"]) + list(validation["question2"])))
    reference = model.encode(questions, tokenizer)
    fp32 = onnx_fp32.encode(questions, tokenizer)
    int8 = onnx_int8.encode(questions, tokenizer)
    cosine = (int8 * fp32).sum(-1)
    result["validation_questions"] = len(questions)
    result["fp32_max_abs_diff"] = float((fp32 - reference).abs().max())
    result["int8_cosine_to_fp32_mean"] = float(cosine.mean())
    result["int8_cosine_to_fp32_min"] = float(cosine.min())
    labels = np.asarray(validation["label"])
    a, b = list(validation["question1"]), list(validation["question2"])
    for label, scorer in (("pytorch", model), ("onnx_fp32", onnx_fp32), ("onnx_int8", onnx_int8)):
        scores = scorer.score_pairs(a, b, tokenizer).numpy()
        result[f"validation_ap_{label}"] = float(average_precision_score(labels, scores))
    result["validation_pairs"] = len(labels)
    print(f"[{name}] {json.dumps(result)}", flush=True)

    texts = qqp_texts()[: args.encode_texts]
    result["encode_texts"] = len(texts)
    result["encode_seconds"], result["speedup_vs_pytorch_fp32"] = {}, {}
    for threads in args.threads:
        torch.set_num_threads(threads)
        sessions = onnx_models(folders, threads)
        variants = {
            "pytorch_fp32": (model, {}),
            "onnx_fp32": (sessions["fp32"], {}),
            "onnx_int8": (sessions["int8"], {}),
        }
        if model.config.encoder_type == "transformer":
            variants["pytorch_bf16"] = (model, {"dtype": torch.bfloat16})
        timings: dict[str, list[float]] = {key: [] for key in variants}
        for encoder, kwargs in variants.values():  # warm-up: tokenizer thread, allocator, session kernels
            timed_encode(encoder, texts[:512], tokenizer, **kwargs)
        for _ in range(args.repeats):
            for key, (encoder, kwargs) in variants.items():
                seconds, _ = timed_encode(encoder, texts, tokenizer, **kwargs)
                timings[key].append(seconds)
                print(f"[{name}] {threads} threads, encode {len(texts)} texts {key}: {seconds:.1f} s", flush=True)
        best = {key: min(values) for key, values in timings.items()}
        result["encode_seconds"][threads] = timings
        result["speedup_vs_pytorch_fp32"][threads] = {key: best["pytorch_fp32"] / value for key, value in best.items()}
        del sessions

    if args.app_corpus_size:
        corpus = synthetic_corpus(list(dict.fromkeys(qqp_texts())), args.app_corpus_size)
        start = time.perf_counter()
        torch.set_num_threads(most)
        index = DuplicateIndex.build(corpus, onnx_int8, tokenizer, batch_size=256)
        result["app_index_build_seconds"] = time.perf_counter() - start
        app = DuplicateSearch(onnx_int8, index, k=5)
        queries = qqp_texts()[1::2][: args.app_queries]
        app.search(queries[0])
        latencies = []
        for query in queries:
            start = time.perf_counter()
            app.search(query)
            latencies.append(time.perf_counter() - start)
        result["app_corpus_size"] = len(index)
        result["app_latency_ms_median"] = 1000 * statistics.median(latencies)
        result["app_latency_ms_p95"] = 1000 * float(np.percentile(latencies, 95))
    print(f"[{name}] {json.dumps(result)}", flush=True)
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argument_parser(__doc__)
    parser.add_argument(
        "--model", action="append", required=True, help="NAME=PATH (PATH 'minilm': the pretrained one)."
    )
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="Thread counts to time encoding with.")
    parser.add_argument("--encode_texts", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--app_corpus_size", type=int, default=100_000)
    parser.add_argument("--app_queries", type=int, default=100)
    parser.add_argument("--output_json", default=None)
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for spec in args.model:
            name, _, path = spec.partition("=")
            results[name] = measure(name, path, args, Path(scratch))
    print(json.dumps(results, indent=2))
    if args.output_json:
        write_json(args.output_json, results)
    return results


if __name__ == "__main__":
    main()
