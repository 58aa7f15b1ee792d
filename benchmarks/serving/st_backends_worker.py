#!/usr/bin/env python
"""
sentence-transformers' CPU backends timed on given texts: the peer side of `cpu_backends.py --st_python`.

    python benchmarks/serving/st_backends_worker.py --folder ST_FOLDER --pairs_json PAIRS.json --repeats 3

It imports neither hfsiamese nor the repository, because it runs in another interpreter: sentence-transformers'
ONNX and OpenVINO backends come from optimum, which requires transformers<5, and hfsiamese requires transformers>=5.
`--folder` is a sentence-transformers folder (`hfsiamese export --format sentence-transformers` writes one);
`PAIRS.json` holds `{"texts": [...], "texts_a": [...], "texts_b": [...], "calibration": [...]}` (static int8
calibrates on "calibration"). For each variant (st_torch_fp32; st_onnx_int8, ST's dynamic int8 in the
configuration `--onnx_config`, which the caller chooses for the CPU; st_openvino_int8, ST's static int8 through
NNCF), it prints one JSON object: the best of `--repeats` timed runs after a warm-up, the pair scores (cosine) for
the caller's AP, and for st_onnx_int8 the configuration used.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

VARIANTS = ("st_torch_fp32", "st_onnx_int8", "st_openvino_int8")


def readable_copy(source: Path, scratch: Path) -> Path:
    """
    `source` copied under `scratch`, its modules.json naming modules this sentence-transformers can import: a v6
    export names `sentence_transformers.base.modules.*`, which v5 (the one optimum installs beside) calls
    `sentence_transformers.models.*`.
    """
    import importlib

    folder = scratch / "st_source"
    if folder.exists():
        return folder
    shutil.copytree(source, folder)
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    for module in modules:
        package, class_name = module["type"].rsplit(".", 1)
        try:
            getattr(importlib.import_module(package), class_name)
        except (ImportError, AttributeError):
            module["type"] = f"sentence_transformers.models.{class_name}"
        if class_name == "Transformer" and module["path"]:  # v5's ONNX/OpenVINO backends read the root folder
            for item in (folder / module["path"]).iterdir():
                item.rename(folder / item.name)
            (folder / module["path"]).rmdir()
            module["path"] = ""
    (folder / "modules.json").write_text(json.dumps(modules, indent=2), encoding="utf-8")
    return folder


def load(name: str, source: Path, scratch: Path, calibration: list[str], onnx_config: str) -> Any:
    """sentence-transformers' model for `name`, its int8 export written into a copy of `source` under `scratch`."""
    from sentence_transformers import SentenceTransformer

    source = readable_copy(source, scratch)
    if name == "st_torch_fp32":
        return SentenceTransformer(str(source), device="cpu")
    backend = name.split("_")[1]
    folder = scratch / name
    shutil.copytree(source, folder)
    model = SentenceTransformer(str(folder), backend=backend, device="cpu")
    if backend == "onnx":
        from sentence_transformers import export_dynamic_quantized_onnx_model

        export_dynamic_quantized_onnx_model(model, onnx_config, str(folder))
        pattern = f"onnx/*int8_{onnx_config}.onnx"  # "qint8" or "quint8" by version
    else:
        from optimum.intel import OVQuantizationConfig
        from sentence_transformers import export_static_quantized_openvino_model

        # ST calibrates on GLUE from the Hub by default; here on the caller's own texts, from a local folder.
        data = scratch / "calibration"
        data.mkdir(exist_ok=True)
        lines = [json.dumps({"text": text}) for text in calibration]
        (data / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        export_static_quantized_openvino_model(
            model, OVQuantizationConfig(num_samples=len(calibration)), str(folder), dataset_name=str(data),
            dataset_config_name="default", dataset_split="train", column_name="text",
        )  # fmt: skip
        pattern = "openvino/*int8_quantized.xml"
    file_name = sorted(path.relative_to(folder).as_posix() for path in folder.glob(pattern))[0]
    return SentenceTransformer(str(folder), backend=backend, device="cpu", model_kwargs={"file_name": file_name})


def cosines(model: Any, texts_a: list[str], texts_b: list[str]) -> Any:
    """The cosine of each pair, as sentence-transformers users compute it."""
    a = model.encode(texts_a, normalize_embeddings=True)
    return (a * model.encode(texts_b, normalize_embeddings=True)).sum(-1)


def best_seconds(run: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", required=True, type=Path)
    parser.add_argument("--pairs_json", required=True, type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--onnx_config", default="avx2", choices=("avx2", "avx512", "avx512_vnni"))
    args = parser.parse_args()
    data = json.loads(args.pairs_json.read_text(encoding="utf-8"))
    texts, texts_a, texts_b = data["texts"], data["texts_a"], data["texts_b"]
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.variants:
            try:
                model = load(name, args.folder, Path(scratch), data.get("calibration", texts[:300]), args.onnx_config)
            except Exception as err:  # noqa: BLE001 - any failure to build a peer variant is reported, not fatal
                print(json.dumps({"variant": name, "skipped": f"{type(err).__name__}: {err}"}), flush=True)
                continue
            model.encode(texts[:64])  # warm-up
            row = {
                "variant": name,
                **({"onnx_config": args.onnx_config} if name == "st_onnx_int8" else {}),
                "encode_seconds": best_seconds(lambda model=model: model.encode(texts), args.repeats),
                "score_seconds": best_seconds(lambda model=model: cosines(model, texts_a, texts_b), args.repeats),
                "scores": [float(value) for value in cosines(model, texts_a, texts_b)],
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
