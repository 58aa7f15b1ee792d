#!/usr/bin/env python
"""Zero-shot: hfsiamese started from a sentence-transformers folder gives sentence-transformers' own similarities.

    python benchmarks/encoding/sentence_transformers_equivalence.py --model all-mpnet-base-v2=$(../shared/models/get_all_mpnet_base_v2.sh)

For the bundled all-MiniLM-L6-v2, each `--model NAME=PATH`, and tiny random BERT folders written here for
every pooling mode (alone; cls+mean together), with and without a Tanh `Dense` layer, `Normalize` and a default
prompt: the model is built as `recipes/train.py` builds it (`build_model_and_tokenizer`, no flags), and the
cosine similarity matrix of `--num_texts` questions of the embedded QQP pairs (the longest ones included, so
that truncation at the folder's max_seq_length counts) is compared with `SentenceTransformer(folder)`'s
`similarity`; the figure is the largest absolute difference (target ≤ 1e-5). Prints one JSON line per
folder and a markdown table.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import (
    EMBEDDED_PAIRS,
    argument_parser,
    command_line,
    emit,
    machine,
    markdown_table,
)

POOLINGS = ["cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken", ("cls", "mean")]


def questions(count: int) -> list[str]:
    """`count` distinct questions of the embedded pairs: the longest tenth first, then in file order."""
    import csv

    with open(EMBEDDED_PAIRS, encoding="utf-8") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    texts = list(dict.fromkeys(text for row in rows[1:] for text in row[1:3] if text))
    longest = sorted(texts, key=len, reverse=True)[: count // 10]
    return list(dict.fromkeys(longest + texts))[:count]


def difference(folder: str, texts: list[str]) -> dict[str, float]:
    """Largest absolute difference of the two similarity matrices, and of the unit embeddings."""
    import torch
    from sentence_transformers import SentenceTransformer

    from hfsiamese.bi_encoder.model_building import build_model_and_tokenizer
    from hfsiamese.training.arguments import ModelArguments

    model, tokenizer = build_model_and_tokenizer(
        ModelArguments(encoder_type="transformer", model_name_or_path=folder), None
    )
    ours = model.eval().encode(texts, tokenizer, batch_size=64)
    st = SentenceTransformer(folder, device="cpu")
    theirs = st.encode(texts, batch_size=64, convert_to_tensor=True).cpu()
    return {
        "max_abs_similarity_diff": float((ours @ ours.T - st.similarity(theirs, theirs)).abs().max()),
        "max_abs_embedding_diff": float((ours - torch.nn.functional.normalize(theirs, dim=-1)).abs().max()),
        "pooling": model.config.pooling,
        "max_seq_length": model.config.max_seq_length,
    }


def tiny_folders(root: Path) -> dict[str, str]:
    """Tiny random BERT sentence-transformers folders: every pooling mode, and the full stack with a prompt."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer
    from transformers import AutoTokenizer, BertConfig, BertModel

    from hfsiamese.utils.minilm import resolve_minilm_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_minilm_path())  # a real WordPiece vocabulary
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)  # fmt: skip
    base = root / "tiny_bert"
    BertModel(config).save_pretrained(base)
    tokenizer.save_pretrained(base)
    folders = {}
    for pooling in POOLINGS:
        for dense, normalize, prompt in ((False, False, False), (True, True, True)):
            torch.manual_seed(1)
            modules = [Transformer(str(base), max_seq_length=48), Pooling(32, pooling_mode=pooling)]
            if dense:
                modules.append(
                    Dense(32 * (2 if isinstance(pooling, tuple) else 1), 16, activation_function=torch.nn.Tanh())
                )
            if normalize:
                modules.append(Normalize())
            prompts = {"query": "query: "} if prompt else None
            model = SentenceTransformer(
                modules=modules, device="cpu", prompts=prompts, default_prompt_name="query" if prompt else None
            )
            name = f"tiny {'+'.join(pooling) if isinstance(pooling, tuple) else pooling}" + (
                " + Dense + Normalize + prompt" if dense else ""
            )
            folder = root / name.replace(" ", "_").replace("+", "plus")
            model.save(str(folder))
            folders[name] = str(folder)
    return folders


def main() -> None:
    import hfsiamese  # noqa: F401  first: picks OpenMP's wait policy before torch loads
    from hfsiamese.utils.minilm import resolve_minilm_path

    parser = argument_parser(__doc__)
    parser.add_argument("--model", action="append", default=[], help="NAME=PATH of a sentence-transformers folder")
    parser.add_argument("--num_texts", type=int, default=500)
    args = parser.parse_args()
    texts = questions(args.num_texts)
    rows = []
    with tempfile.TemporaryDirectory() as root:
        models = {"all-MiniLM-L6-v2": resolve_minilm_path(), **dict(spec.split("=", 1) for spec in args.model)}
        models.update(tiny_folders(Path(root)))
        for name, folder in models.items():
            rows.append({"model": name, **difference(folder, texts)})
            emit(rows[-1])
    table = markdown_table(
        ("folder", "pooling", "max_seq_length", "max abs similarity diff", "max abs embedding diff", "≤ 1e-5"),
        ((r["model"], r["pooling"], r["max_seq_length"], f"{r['max_abs_similarity_diff']:.1e}",
          f"{r['max_abs_embedding_diff']:.1e}", "met" if r["max_abs_similarity_diff"] <= 1e-5 else "missed") for r in rows),
    )  # fmt: skip
    command = command_line(__file__)
    print("\n".join([f"`{command}` ({machine()}, {len(texts)} QQP questions)", "", *table]))


if __name__ == "__main__":
    main()
