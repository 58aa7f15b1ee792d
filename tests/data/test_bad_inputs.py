"""
The bad-input table: one row per kind of bad input, with the behaviour it must get.

This list is the single source of the "Bad inputs" table in the docs:
`python benchmarks/reliability/bad_input_table.py` runs every row and prints it with the message observed.
Other tests (tests/data/test_pair_loading.py, ...) cover variants of the same inputs in more depth.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import datasets
import pytest
import torch
from transformers import BertConfig, PreTrainedTokenizerFast

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.data import (
    SiamesePairCollator,
    assign_duplicate_groups,
    duplicate_pairs,
    load_pairs,
    tokenize_pairs,
)
from hfsiamese.data.question_identity import column_numpy

MAX_LENGTH = 16  # tokens kept per text by the small tokenizers below
LONG_QUESTION = "word " * 20_000 + "end ?"  # 100,005 characters, about 20,000 words


@dataclass(frozen=True)
class BadInput:
    input: str  # the bad input, as the docs table names it
    behaviour: str  # what must happen, in words
    run: Callable[[Path], str | None]  # does it; asserts what it returns; returns what was observed
    raises: type[Exception] | None = None
    message: str | None = None  # regex on the error's message, or on a warning's when nothing is raised


@dataclass(frozen=True)
class Observed:
    error: type[Exception] | None
    message: str  # the error's, or the first matching warning's ("" if none)
    summary: str | None  # what `run` returned


def observe(case: BadInput, tmp_path: Path) -> Observed:
    """Run one row, recording its error or its warnings (the assertions inside `run` propagate)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            summary = case.run(tmp_path)
        except AssertionError:
            raise
        except Exception as err:  # noqa: BLE001 - the error is the observation
            return Observed(type(err), str(err), None)
    found = [str(w.message) for w in caught if case.message and re.search(case.message, str(w.message))]
    return Observed(None, found[0] if found else "", summary)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
def _write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return str(path)


def _load(tmp_path: Path, name: str, content: str | bytes, **kwargs) -> datasets.Dataset:
    return load_pairs(_write(tmp_path, name, content), cache_dir=str(tmp_path / "hf_cache"), **kwargs)


def _quora(rows: list[tuple[str, str, object]]) -> str:
    return "question1\tquestion2\tis_duplicate\n" + "".join(f"{a}\t{b}\t{label}\n" for a, b, label in rows)


def _tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    return train_word_tokenizer(texts, vocab_size=500, model_max_length=MAX_LENGTH)


def _model(tokenizer: PreTrainedTokenizerFast) -> SiameseModel:
    torch.manual_seed(0)
    return SiameseModel(SiameseConfig(vocab_size=len(tokenizer), embedding_dim=8, hidden_size=6))


class _RecordingTrainer(SiameseTrainer):
    """Records the group ids of every training batch."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        self.batches = getattr(self, "batches", []) + [inputs["group_ids"].tolist()]
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)


def _train(pairs: datasets.Dataset, tmp_path: Path, *, batch_size: int, steps: int) -> list[list[int]]:
    """Train a tiny LSTM for `steps` steps on the duplicate pairs; the group ids of each batch."""
    texts = list(pairs["question1"][:2000]) + list(pairs["question2"][:2000])
    tokenizer = _tokenizer(texts)
    train = tokenize_pairs(duplicate_pairs(pairs), tokenizer)
    args = SiameseTrainingArguments(
        output_dir=str(tmp_path / "run"),
        per_device_train_batch_size=batch_size,
        max_steps=steps,
        learning_rate=1e-2,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = _RecordingTrainer(model=_model(tokenizer), args=args, train_dataset=train, processing_class=tokenizer)
    result = trainer.train()
    assert torch.isfinite(torch.tensor(result.training_loss))
    for groups in trainer.batches:
        assert len(groups) == len(set(groups)), f"a batch holds two pairs of one group: {groups}"
    return trainer.batches


# --------------------------------------------------------------------------------------------
# The rows
# --------------------------------------------------------------------------------------------
def _null_question(tmp_path: Path) -> str:
    rows = [
        {"question1": "how do i learn python ?", "question2": "best way to learn python ?", "label": 1},
        {"question1": None, "question2": "a question without its pair", "label": 0},
        {"question1": "why is the sky blue ?", "question2": "what makes the sky blue ?", "label": 1},
    ]
    ds = _load(tmp_path, "nulls.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    assert ds["question1"][:] == ["how do i learn python ?", "why is the sky blue ?"]
    return f"{len(ds)} pairs kept"


def _empty_question(tmp_path: Path) -> str:
    rows = [("a ?", "b ?", 1), ("", "empty first ?", 0), ("   ", "blank first ?", 1), ("c ?", "d ?", 0)]
    ds = _load(tmp_path, "holes.tsv", _quora(rows))
    assert ds["question1"][:] == ["a ?", "c ?"]
    return f"{len(ds)} pairs kept"


def _long_question_loads(tmp_path: Path) -> str:
    ds = _load(tmp_path, "long.tsv", _quora([(LONG_QUESTION, "short ?", 1), ("second ?", "pair ?", 0)]))
    assert ds["question1"][0] == LONG_QUESTION.strip()
    return f"loaded whole: {len(ds['question1'][0]):,} characters"


def _long_question_trains(tmp_path: Path) -> str:
    ds = _load(tmp_path, "long.tsv", _quora([(LONG_QUESTION, "short question ?", 1), ("second ?", "pair ?", 1)]))
    tokenizer = _tokenizer([LONG_QUESTION, "short question ?", "second ?", "pair ?"])
    tokenized = tokenize_pairs(ds, tokenizer)
    batch = SiamesePairCollator(tokenizer)([tokenized[i] for i in range(len(tokenized))])
    assert batch["input_ids_a"].shape == (2, MAX_LENGTH)
    out = _model(tokenizer)(**{k: v for k, v in batch.items() if k not in ("labels", "group_ids")})
    assert torch.isfinite(out.similarity).all()
    return f"batch input_ids_a {tuple(batch['input_ids_a'].shape)}"


def _long_question_encodes(tmp_path: Path) -> str:
    tokenizer = _tokenizer([LONG_QUESTION, "short ?"])
    model = _model(tokenizer)
    embeddings = model.encode([LONG_QUESTION, "short ?"], tokenizer)
    assert embeddings.shape == (2, model.config.sentence_embedding_dim) and torch.isfinite(embeddings).all()
    # A tokenizer saved without a limit (transformers then says 1e30) is capped at 512 tokens.
    unlimited = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer.backend_tokenizer, pad_token="[PAD]", unk_token="[UNK]"
    )
    assert unlimited.model_max_length > 1e20
    features = tokenize_pairs(datasets.Dataset.from_dict({"question1": [LONG_QUESTION], "question2": ["x"]}), unlimited)
    assert len(features["input_ids_a"][0]) == 512
    # ... and, for a transformer, at its position limit (beyond it the forward would fail).
    bert = BertConfig(vocab_size=len(tokenizer), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=8, max_position_embeddings=32)  # fmt: skip
    transformer = SiameseModel(SiameseConfig(encoder_type="transformer", encoder_config=bert.to_dict()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert transformer.encode([LONG_QUESTION], unlimited).shape == (1, 8)
    assert any("max_length=32 tokens" in str(w.message) for w in caught)
    return (
        f"embeddings {tuple(embeddings.shape)}; a tokenizer without a limit keeps 512 tokens "
        "(a transformer: its position limit, here 32)"
    )


def _repeated_question(tmp_path: Path) -> str:
    question = "how do i learn python ?"
    rows = [(question, f"what is way number {i} to learn python ?", 1) for i in range(10_000)]
    rows += [(f"other question {j} ?", f"another way to ask question {j} ?", 1) for j in range(40)]
    pairs = assign_duplicate_groups(_load(tmp_path, "repeated.tsv", _quora(rows)))
    groups = column_numpy(pairs, "group_id")
    sizes = sorted(torch.bincount(torch.as_tensor(groups)).tolist(), reverse=True)
    assert len(pairs) == 10_040 and sizes[0] == 10_000 and len(sizes) == 41
    batches = _train(pairs, tmp_path, batch_size=8, steps=2)
    return f"one group of {sizes[0]:,} pairs; {len(batches)} steps trained, no group twice in a batch"


def _group_larger_than_batch(tmp_path: Path) -> str:
    rows = [("how do i learn python ?", f"way {i} to learn python ?", 1) for i in range(6)]
    rows += [(f"other question {j} ?", f"another way to ask {j} ?", 1) for j in range(40)]
    pairs = assign_duplicate_groups(_load(tmp_path, "big_group.tsv", _quora(rows)))
    big = int(torch.bincount(torch.as_tensor(column_numpy(pairs, "group_id"))).argmax())
    batches = _train(pairs, tmp_path, batch_size=4, steps=12)  # one epoch: 46 pairs in 11 batches of 4 and one of 2
    spread = sum(groups.count(big) for groups in batches)
    assert spread == 6, spread  # all six pairs trained on, each in a batch of its own
    return f"group of 6 pairs spread over {spread} of the epoch's {len(batches)} batches (batch size 4)"


def _empty_text_at_inference(tmp_path: Path) -> str:
    tokenizer = _tokenizer(["how do i learn python ?"])
    model = _model(tokenizer)
    embeddings = model.encode(["", "how do i learn python ?"], tokenizer)
    scores = model.similarity([""], ["how do i learn python ?"], tokenizer)
    assert torch.isfinite(embeddings).all() and torch.isfinite(scores).all()
    assert embeddings.norm(dim=-1).max() <= 1 + 1e-5
    return f"finite embedding of norm {embeddings[0].norm():.2f} (no words); cosine with a question {scores[0]:.2f}"


CASES: list[BadInput] = [
    BadInput("empty file", "ValueError naming the file",
             lambda t: _load(t, "empty.tsv", ""), ValueError, r"empty\.tsv is empty"),
    BadInput("header only", "ValueError naming the file: header but no data rows",
             lambda t: _load(t, "header.csv", "question1,question2,is_duplicate\n"), ValueError,
             r"header\.csv has a header .* but no data rows"),
    BadInput("binary file", "ValueError naming the file: not a text file",
             lambda t: _load(t, "blob.csv", bytes(range(256)) * 4), ValueError, r"blob\.csv is not a text file"),
    BadInput("wrong delimiter (';' in a .csv)", "ValueError: missing columns, with the delimiter the file seems to use",
             lambda t: _load(t, "semi.csv", "question1;question2;is_duplicate\na;b;1\n"), ValueError,
             r"semi\.csv: missing column.*looks ';'-separated, not ','-separated"),
    BadInput("missing columns", "ValueError naming the missing and the found columns, and the flags to map them",
             lambda t: _load(t, "cols.csv", "first,second,target\na,b,1\n"), ValueError,
             r"cols\.csv: missing column\(s\) \['question1', 'question2', 'is_duplicate'\].*columns found: \['first', 'second', 'target'\].*question1_column"),
    BadInput("invalid label", "ValueError naming the file, the value and its data row",
             lambda t: _load(t, "labels.tsv", _quora([("a", "b", 1), ("c", "d", "maybe")])), ValueError,
             r"labels\.tsv: invalid label 'maybe' in data row 2"),
    BadInput("null question", "row dropped, with a warning giving the count",
             _null_question, None, r"dropped 1 of 3 row\(s\) from .*nulls\.jsonl with an empty, null or whitespace-only question"),
    BadInput("empty or whitespace-only question", "row dropped, with a warning giving the count",
             _empty_question, None, r"dropped 2 of 4 row\(s\)"),
    BadInput("every question empty", "ValueError: no pairs left",
             lambda t: _load(t, "void.tsv", _quora([("", "x", 1), (" ", "y", 0)])), ValueError,
             r"void\.tsv: no pairs left: all 2 row\(s\) have an empty"),
    BadInput("null text given to tokenize_pairs", "ValueError naming the column and the row",
             lambda t: tokenize_pairs(datasets.Dataset.from_dict({"question1": ["a", None], "question2": ["b", "c"]}),
                                      _tokenizer(["a b c"])),
             ValueError, r"column 'question1' holds a null in row 1, not text"),
    BadInput("null text given to encode", "TypeError naming the item",
             lambda t: _model(tok := _tokenizer(["a b"])).encode(["a", None], tok), TypeError,
             r"encode expects texts \(str\), but item 1 is None"),
    BadInput("empty text given to encode", "encoded: a finite embedding, no error", _empty_text_at_inference),
    BadInput("non-UTF-8 bytes", "ValueError naming the file, the byte offset and the line; never decoded silently",
             lambda t: _load(t, "latin1.csv", b"question1,question2,is_duplicate\na,b,1\ncaf\xe9 ?,cafe ?,1\n"),
             ValueError, r"latin1\.csv is not UTF-8 text: invalid byte\(s\) b'\\xe9' at byte offset 42 \(line 3\)"),
    BadInput("truncated file (last line cut)", "ValueError naming the file and the short row",
             lambda t: _load(t, "cut.tsv", "1\tq one\tq two\t1\n0\tq three\tq fo", format="bimpm"), ValueError,
             r"cut\.tsv: data row 2 has 3 field\(s\), expected 4"),
    BadInput("very long question (100,000 characters): loading", "loaded whole", _long_question_loads),
    BadInput("very long question: tokenize, collate, forward",
             "truncated to max_length tokens, with a warning giving the count; tensors capped at max_length",
             _long_question_trains, None, rf"1 of 4 texts were longer than max_length={MAX_LENGTH} tokens and were truncated"),
    BadInput("very long question: encode",
             "truncated, with a warning giving the count; by default at most 512 tokens and the encoder's positions",
             _long_question_encodes, None, rf"1 of 2 texts were longer than max_length={MAX_LENGTH} tokens"),
    BadInput("a question repeated 10,000 times",
             "one duplicate group; the sampler caps it per epoch, with a warning; training runs, no group twice in a batch",
             _repeated_question, None, r"has 10000 pairs, more than fit in one epoch"),
    BadInput("a group larger than the batch", "training runs; the group is spread over batches, never twice in one",
             _group_larger_than_batch),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[case.input for case in CASES])
def test_bad_input(case: BadInput, tmp_path: Path) -> None:
    seen = observe(case, tmp_path)
    if case.raises is not None:
        assert seen.error is not None and issubclass(seen.error, case.raises), (seen.error, seen.message)
        assert re.search(case.message, seen.message), seen.message
    else:
        assert seen.error is None, f"{seen.error.__name__}: {seen.message}"
        if case.message is not None:
            assert seen.message, f"no warning matching {case.message!r}"
