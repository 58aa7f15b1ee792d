"""A crash while saving never leaves a checkpoint or model folder that looks complete but is not."""

from __future__ import annotations

import json
import os

import datasets
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModel
from transformers.trainer_utils import get_last_checkpoint

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.base import checkpoints
from hfsiamese.base.checkpoints import last_checkpoint, resolve_resume_checkpoint
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.data import tokenize_pairs
from tests.conftest import TEXTS


class SimulatedCrash(RuntimeError):
    pass


def _train_pairs(word_tokenizer, n_groups=16):
    q1 = [f"{TEXTS[g % len(TEXTS)]} {g}" for g in range(n_groups)]
    q2 = [f"{TEXTS[(g + 1) % len(TEXTS)]} {g} again" for g in range(n_groups)]
    data = datasets.Dataset.from_dict(
        {"question1": q1, "question2": q2, "label": [1] * n_groups, "group_id": list(range(n_groups))}
    )
    return tokenize_pairs(data, word_tokenizer)


def _trainer(word_tokenizer, output_dir, eval_dataset=None, **overrides):
    torch.manual_seed(0)
    model = SiameseModel(SiameseConfig(vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=6, pad_token_id=0))
    values = dict(
        output_dir=str(output_dir),
        per_device_train_batch_size=4,
        max_steps=6,
        learning_rate=1e-2,
        save_strategy="steps",
        save_steps=2,
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    values.update(overrides)
    return SiameseTrainer(
        model=model,
        args=SiameseTrainingArguments(**values),
        train_dataset=_train_pairs(word_tokenizer),
        eval_dataset=eval_dataset,
        processing_class=word_tokenizer,
    )


def _crash_on_call(monkeypatch, owner, name, call):
    """Make `owner.name` raise on its `call`-th call (the earlier calls run normally)."""
    original = getattr(owner, name)
    calls = []

    def patched(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise SimulatedCrash(f"simulated crash in {name}")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, patched)


def test_crash_mid_checkpoint_leaves_no_complete_looking_folder(word_tokenizer, tmp_path, monkeypatch):
    out = tmp_path / "run"
    trainer = _trainer(word_tokenizer, out)
    # The RNG states are written after the weights and the optimizer: crash there on the second save.
    _crash_on_call(monkeypatch, SiameseTrainer, "_save_rng_state", call=2)
    with pytest.raises(SimulatedCrash):
        trainer.train()
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint-2", "tmp-checkpoint-4"]
    partial = out / "tmp-checkpoint-4" / "checkpoint-4"
    assert (partial / "model.safetensors").is_file() and (partial / "optimizer.pt").is_file()
    assert not (partial / "trainer_state.json").exists()
    # Both our resolver and transformers' own (resume_from_checkpoint=True) pick the complete one.
    assert last_checkpoint(out) == get_last_checkpoint(out) == str(out / "checkpoint-2")

    monkeypatch.undo()
    resumed = _trainer(word_tokenizer, out)
    resumed.train(resume_from_checkpoint="auto")
    assert resumed.state.global_step == 6
    # The stale staging folder of step 4 was cleared when step 4 was saved again.
    assert not [p.name for p in out.iterdir() if p.name.startswith("tmp-")]
    assert checkpoints.is_complete_checkpoint(out / "checkpoint-6")
    state = json.loads((out / "checkpoint-4" / "trainer_state.json").read_text())
    assert state["global_step"] == 4


def test_best_checkpoint_path_names_the_final_folder(word_tokenizer, tmp_path):
    out = tmp_path / "run"
    eval_pairs = tokenize_pairs(
        datasets.Dataset.from_dict({"question1": TEXTS[0::2], "question2": TEXTS[1::2], "label": [1, 1, 0, 0]}),
        word_tokenizer,
    )
    trainer = _trainer(
        word_tokenizer,
        out,
        eval_dataset=eval_pairs,
        eval_strategy="steps",
        eval_steps=2,
        metric_for_best_model="average_precision",
        load_best_model_at_end=True,
        save_total_limit=1,
    )
    trainer.train()
    best = trainer.state.best_model_checkpoint
    assert best is not None and os.path.dirname(best) == str(out) and os.path.isdir(best)
    saved = json.loads((out / os.path.basename(best) / "trainer_state.json").read_text())
    assert saved["best_model_checkpoint"] in (None, best)  # never a staging path
    assert "tmp-" not in json.dumps(saved)


def test_final_save_is_renamed_into_place(word_tokenizer, tmp_path, monkeypatch):
    trainer = _trainer(word_tokenizer, tmp_path / "unused", save_strategy="no")
    target = tmp_path / "model"
    # Crash after the weights were written (the tokenizer is saved next): nothing named `model`.
    _crash_on_call(monkeypatch, type(word_tokenizer), "save_pretrained", call=1)
    with pytest.raises(SimulatedCrash):
        trainer.save_model(str(target))
    assert not target.exists()
    (staging,) = [p for p in tmp_path.iterdir() if p.name.startswith("tmp-model-")]
    assert (staging / "model.safetensors").is_file()

    monkeypatch.undo()
    trainer.save_model(str(target))
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in target.iterdir()}
    assert AutoModel.from_pretrained(target).config.vocab_size == len(word_tokenizer)
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o777 & ~umask  # not a private temporary folder's mode


def test_save_into_a_run_folder_keeps_other_files(word_tokenizer, tmp_path, monkeypatch):
    out = tmp_path / "run"
    trainer = _trainer(word_tokenizer, out, max_steps=2)
    trainer.train()  # leaves checkpoint-2 in the folder
    trainer.save_model()
    first = load_file(out / "model.safetensors")
    (out / "notes.txt").write_text("the user's notes")
    (out / "model-00001-of-00002.safetensors").write_text("an older sharded save")

    # Changed weights, then a crash half-way through moving the new files in.
    with torch.no_grad():
        for parameter in trainer.model.parameters():
            parameter.add_(1.0)
    moved = []
    real_replace = os.replace

    def replace_then_crash(source, target):
        if len(moved) == 2:
            raise SimulatedCrash("simulated crash while moving files")
        moved.append(os.path.basename(target))
        return real_replace(source, target)

    monkeypatch.setattr(checkpoints.os, "replace", replace_then_crash)
    with pytest.raises(SimulatedCrash):
        trainer.save_model()
    assert "config.json" not in moved and not (out / "config.json").exists()
    with pytest.raises((OSError, ValueError)):
        AutoModel.from_pretrained(out)  # no config: refused, rather than loaded as a mix of two saves

    monkeypatch.undo()
    trainer.save_model()
    names = {p.name for p in out.iterdir()}
    assert {"notes.txt", "checkpoint-2", "config.json", "model.safetensors"} <= names
    assert "model-00001-of-00002.safetensors" not in names  # stale weights of another save are removed
    assert not [name for name in names if name.startswith("tmp-")]
    second = load_file(out / "model.safetensors")
    assert all(torch.allclose(second[k], first[k] + 1.0) for k in first)
    assert (out / "checkpoint-2" / "model.safetensors").is_file()


def test_save_model_refuses_a_file_as_target(word_tokenizer, tmp_path):
    trainer = _trainer(word_tokenizer, tmp_path / "unused", save_strategy="no")
    target = tmp_path / "a_file"
    target.write_text("keep me")
    with pytest.raises(FileExistsError, match="not a folder"):
        trainer.save_model(str(target))
    assert target.read_text() == "keep me"


def test_resolving_what_to_resume_from(tmp_path):
    out = tmp_path / "run"
    assert resolve_resume_checkpoint(None, out) is None and resolve_resume_checkpoint(False, out) is None
    with pytest.raises(FileNotFoundError, match="no complete checkpoint-N folder"):
        resolve_resume_checkpoint("auto", out)
    for step, complete in ((3, True), (10, True), (12, False)):
        folder = out / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(b"weights")
        (folder / "trainer_state.json").write_text(f'{{"global_step": {step}}}' if complete else '{"global_st')
    (out / "tmp-checkpoint-14").mkdir()
    assert resolve_resume_checkpoint("auto", out) == str(out / "checkpoint-10")  # 12 is truncated
    assert resolve_resume_checkpoint(True, out) == str(out / "checkpoint-10")
    assert resolve_resume_checkpoint(str(out / "checkpoint-3"), out) == str(out / "checkpoint-3")
    with pytest.raises(FileNotFoundError, match="not a complete checkpoint"):
        resolve_resume_checkpoint(str(out / "checkpoint-12"), out)
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        resolve_resume_checkpoint(str(out / "checkpoint-99"), out)
