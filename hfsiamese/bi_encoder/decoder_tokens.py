"""Making a decoder's tokenizer fit to embed texts: an EOS at the end of each text, and a padding token.

A decoder embedder pooled by its last token reads the whole text only at the final position; models such
as Qwen3-Embedding end every text with EOS so that this position is the same token each time, but most
decoder tokenizers (GPT-2, Qwen, Llama without `add_eos_token`) do not add it. The change is made in the
tokenizer's post-processor (the `tokenizers` library's template), so that the tokenizer saved beside the
model carries it to every later use: training, `encode`, search, the pipeline, ONNX serving and the
sentence-transformers export all tokenise alike.
"""

from __future__ import annotations

from typing import Any

from tokenizers import processors


def ensure_eos_appended(tokenizer: Any) -> bool:
    """Make `tokenizer` end every text with its EOS token; False when it already does. A ValueError where it has no EOS."""
    eos, eos_id = tokenizer.eos_token, tokenizer.eos_token_id
    if eos is None or eos_id is None:
        raise ValueError(
            f"last_token pooling needs an EOS token to end each text, and {tokenizer.name_or_path or 'the tokenizer'} has none"
        )
    if _ends_with(tokenizer, eos_id):
        return False
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ValueError(
            f"{tokenizer.name_or_path}: a slow (Python) tokenizer cannot be made to append EOS; use its fast version"
        )
    template = processors.TemplateProcessing(
        single=f"$A:0 {eos}:0", pair=f"$A:0 {eos}:0 $B:1 {eos}:1", special_tokens=[(eos, eos_id)]
    )
    existing = backend.post_processor
    backend.post_processor = template if existing is None else processors.Sequence([existing, template])
    if not _ends_with(tokenizer, eos_id):
        raise ValueError(f"{tokenizer.name_or_path}: could not make the tokenizer append its EOS token {eos!r}")
    return True


def ensure_pad_token(tokenizer: Any) -> bool:
    """Give a tokenizer without a padding token its EOS (or UNK) as one; padded positions are masked out. False when it has one."""
    if tokenizer.pad_token is not None:
        return False
    substitute = tokenizer.eos_token or tokenizer.unk_token
    if substitute is None:
        raise ValueError(f"{tokenizer.name_or_path}: the tokenizer has no padding, EOS or unknown token to pad with")
    tokenizer.pad_token = substitute
    return True


def _ends_with(tokenizer: Any, token_id: int) -> bool:
    ids = tokenizer("a")["input_ids"]
    return bool(ids) and ids[-1] == token_id


__all__ = ["ensure_eos_appended", "ensure_pad_token"]
