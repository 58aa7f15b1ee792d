#!/usr/bin/env python
"""Encoding throughput (suite 2): `SiameseModel.encode` vs `SentenceTransformer.encode`.

    python benchmarks/encoding/encoding_throughput.py [--num_texts 20000] [--batch_sizes 64 256] [--device cpu] [--append]

Both sides hold the same all-MiniLM-L6-v2 weights (hfsiamese wraps the folder with
`SiameseModel.from_encoder_pretrained`, mean pooling, L2 norm — what the sentence-transformers
folder does) and encode the same QQP questions (the first `--num_texts` of question1 + question2 of
`recipes/data/qqp_dev.tsv`), max length 256 on both sides. bf16 means the model's weights cast to
bfloat16 (`model.to(torch.bfloat16)`) on both sides. Timed passes alternate between the libraries;
each figure is the best of `--repeats`. Accuracy: the largest absolute difference and the lowest
cosine between each side's bf16 and fp32 embeddings, and between the two libraries at fp32. The
ceiling: sentences/s at the measured matmul peak for (mean real tokens × 21.2 MFLOPs) a sentence.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.ceiling import MINILM_FORWARD_FLOPS_PER_TOKEN, ceiling_report
from benchmarks.common.harness import (
    EMBEDDED_PAIRS as QQP_FILE,
    append_section,
    argument_parser,
    command_line,
    emit,
    machine,
    markdown_table,
    today,
)

MAX_LENGTH = 256


def load_texts(num_texts: int) -> list[str]:
    from hfsiamese.data import load_pairs

    pairs = load_pairs(str(QQP_FILE), deduplicate=False)
    texts = list(pairs["question1"]) + list(pairs["question2"])
    if len(texts) < num_texts:
        raise ValueError(f"{QQP_FILE} holds {len(texts)} questions, fewer than --num_texts {num_texts}")
    return texts[:num_texts]


def timed(function, repeats: int) -> tuple[float, torch.Tensor]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def compare(a: torch.Tensor, b: torch.Tensor) -> dict[str, float]:
    a, b = a.float(), b.float()
    cosine = torch.nn.functional.cosine_similarity(a, b, dim=-1)
    return {"max_abs_diff": float((a - b).abs().max()), "min_cosine": float(cosine.min())}


def main() -> None:
    parser = argument_parser(__doc__, append=True)
    parser.add_argument("--num_texts", type=int, default=20000)
    parser.add_argument("--batch_sizes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device here")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    from hfsiamese import SiameseModel
    from hfsiamese.utils.minilm import resolve_minilm_path

    path = resolve_minilm_path()
    texts = load_texts(args.num_texts)
    tokenizer = AutoTokenizer.from_pretrained(path)
    mean_tokens = sum(len(ids) for ids in tokenizer(texts, truncation=True, max_length=MAX_LENGTH)["input_ids"]) / len(
        texts
    )
    ceiling = ceiling_report(args.device)
    ours = SiameseModel.from_encoder_pretrained(path, pooling="mean").to(args.device).eval()
    theirs = SentenceTransformer(path, device=args.device)
    theirs.max_seq_length = MAX_LENGTH

    rows, embeddings = [], {}
    for precision in args.precisions:
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        ours.to(dtype)
        theirs.to(dtype)
        for batch_size in args.batch_sizes:
            runs = {
                "hfsiamese": lambda batch_size=batch_size: ours.encode(
                    texts, tokenizer, batch_size=batch_size, max_length=MAX_LENGTH
                ),
                "sentence_transformers": lambda batch_size=batch_size: (
                    theirs.encode(texts, batch_size=batch_size, convert_to_tensor=True, normalize_embeddings=True)
                    .float()
                    .cpu()
                ),
            }
            for library, run in runs.items():
                seconds, result = timed(run, args.repeats)
                embeddings[(library, precision, batch_size)] = result
                peak = ceiling["peak_bf16_tflops" if precision == "bf16" else "peak_fp32_tflops"] * 1e12
                ceiling_rate = peak / (mean_tokens * MINILM_FORWARD_FLOPS_PER_TOKEN)
                row = {
                    "library": library,
                    "precision": precision,
                    "batch_size": batch_size,
                    "device": args.device,
                    "sentences_per_s": round(len(texts) / seconds, 1),
                    "ceiling_sentences_per_s": round(ceiling_rate, 1),
                    "fraction_of_ceiling": round(len(texts) / seconds / ceiling_rate, 3),
                }
                if precision == "bf16" and (library, "fp32", batch_size) in embeddings:
                    row.update(
                        {
                            f"vs_fp32_{k}": round(v, 5)
                            for k, v in compare(result, embeddings[(library, "fp32", batch_size)]).items()
                        }
                    )
                rows.append(row)
                emit(row)
    rate = {(r["library"], r["precision"], r["batch_size"]): r["sentences_per_s"] for r in rows}
    ratios = {}
    for batch_size in args.batch_sizes:
        st_fp32 = rate.get(("sentence_transformers", "fp32", batch_size))
        for precision in args.precisions:
            ours_rate = rate[("hfsiamese", precision, batch_size)]
            ratios[f"b{batch_size}_hfsiamese_{precision}_vs_st_{precision}"] = round(
                ours_rate / rate[("sentence_transformers", precision, batch_size)], 2
            )
            if st_fp32:
                ratios[f"b{batch_size}_hfsiamese_{precision}_vs_st_fp32"] = round(ours_rate / st_fp32, 2)
    agreement = {}
    if "fp32" in args.precisions:
        batch_size = args.batch_sizes[0]
        agreement = {
            f"hfsiamese_vs_st_fp32_{k}": round(v, 6)
            for k, v in compare(
                embeddings[("hfsiamese", "fp32", batch_size)], embeddings[("sentence_transformers", "fp32", batch_size)]
            ).items()
        }
    summary = {"ratios": ratios, **agreement, "mean_tokens": round(mean_tokens, 1), **ceiling}
    emit(summary)
    if args.append:
        command = command_line(__file__)
        device = machine() if args.device == "cpu" else torch.cuda.get_device_name()
        lines = [
            "",
            f"### {today()}, {device}: `{command.strip()}`",
            "",
            f"{len(texts):,} questions, {mean_tokens:.1f} real tokens each on average; matmul peak fp32 "
            f"{ceiling['peak_fp32_tflops']} / bf16 {ceiling['peak_bf16_tflops']} TFLOP/s.",
            "",
            *markdown_table(
                [
                    "library",
                    "precision",
                    "batch",
                    "sentences/s",
                    "ceiling",
                    "of ceiling",
                    "bf16 vs fp32: max abs diff",
                    "min cosine",
                ],
                [
                    [
                        r["library"],
                        r["precision"],
                        r["batch_size"],
                        r["sentences_per_s"],
                        r["ceiling_sentences_per_s"],
                        f"{r['fraction_of_ceiling']:.1%}",
                        r.get("vs_fp32_max_abs_diff"),
                        r.get("vs_fp32_min_cosine"),
                    ]
                    for r in rows
                ],
            ),
            "",
            "Ratios (sentences/s): " + ", ".join(f"{k} {v}×" for k, v in ratios.items()) + ".",
        ]
        if agreement:
            lines.append(f"hfsiamese vs sentence-transformers at fp32: {agreement}.")
        append_section(lines)


if __name__ == "__main__":
    main()
