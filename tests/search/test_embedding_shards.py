"""
`encode_to_shards` (one process, and 2 CPU processes under `accelerate launch`), `encode_to_shards_ray` (2 local
Ray actors) and `EmbeddingShards`: the shards hold what `model.encode` gives for the whole corpus, a rerun
encodes only the missing shards, an interrupted run leaves only complete shards, and a folder of another
corpus, shard size, encoding or model is refused.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from hfsiamese import SiameseModel
from hfsiamese.search.shards import (
    EmbeddingShards,
    encode_to_shards,
    encode_to_shards_ray,
    ray_encoding,
    shard_files as shard_file_module,
)
from tests.conftest import TEXTS
from tests.helpers import accelerate_launch, folder_state, run_offline

WORKER = Path(__file__).with_name("shard_worker.py")
SHARD_SIZE = 16
NUM_TEXTS = 150  # 10 shards, the last one of 6 rows
NUM_SHARDS = 10


def corpus(seed: int = 0, size: int = NUM_TEXTS) -> list[str]:
    """Questions of 2 to 14 words of the tiny tokenizer's vocabulary, each one numbered (so all differ)."""
    rng = random.Random(seed)
    words = " ".join(TEXTS).split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(2, 14))) + f" {i}" for i in range(size)]


def shard_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("shard-*.parquet"))


def all_shard_names() -> list[str]:
    return [f"shard-{index:05d}.parquet" for index in range(NUM_SHARDS)]


def other_files(folder: Path) -> list[str]:
    """Files that are neither a shard nor the manifest: temporary files that should not be left behind."""
    return sorted(
        path.name for path in folder.iterdir() if path.name != "shards.json" and not path.name.startswith("shard-")
    )


def max_difference(shards: EmbeddingShards, expected: torch.Tensor) -> float:
    return float(np.abs(shards.to_numpy() - expected.numpy()).max())


def count_corpus_encodes(
    monkeypatch: pytest.MonkeyPatch, model: SiameseModel, texts: list[str], fail_at: int | None = None
) -> list[int]:
    """
    Wrap `model.encode` to count the calls that embed corpus texts (not the manifest's probe texts); the call
    numbered `fail_at` (from 1) raises instead, as a crash in the middle of a run.
    """
    known, calls, encode = set(texts), [], model.encode

    def counting_encode(batch, *args, **kwargs):
        if batch and batch[0] in known:
            calls.append(len(batch))
            if len(calls) == fail_at:
                raise RuntimeError("simulated crash while encoding")
        return encode(batch, *args, **kwargs)

    monkeypatch.setattr(model, "encode", counting_encode)
    return calls


def test_one_process_writes_shards_equal_to_encoding_the_whole_corpus(tmp_path, tiny_lstm, word_tokenizer):
    texts = corpus()
    folder = tmp_path / "shards"
    shards = encode_to_shards(texts, folder, tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE, batch_size=8)
    expected = tiny_lstm.encode(texts, word_tokenizer)

    assert shard_files(folder) == all_shard_names() and other_files(folder) == []
    assert (shards.num_texts, shards.embedding_dim, shards.num_shards) == (NUM_TEXTS, 6, NUM_SHARDS)
    manifest = json.loads((folder / "shards.json").read_text())
    assert (
        manifest["num_texts"] == NUM_TEXTS and manifest["shard_size"] == SHARD_SIZE and manifest["embedding_dim"] == 6
    )
    assert len(manifest["corpus_sha256"]) == 64 and len(manifest["model"]["probe_embeddings"]) == 2

    last = pq.read_table(folder / "shard-00009.parquet")
    assert last.schema.field("row").type == pa.int64()
    assert last.schema.field("embedding").type == pa.list_(pa.float32(), 6)
    assert last.column("row").to_pylist() == list(range(144, 150))

    assert max_difference(shards, expected) <= 1e-6
    batches = list(shards.iter_batches())
    assert len(batches) == NUM_SHARDS
    assert np.array_equal(np.concatenate([rows for rows, _ in batches]), np.arange(NUM_TEXTS))
    assert all(embeddings.shape == (len(rows), 6) for rows, embeddings in batches)

    array = EmbeddingShards.open(folder).write_npy(tmp_path / "embeddings.npy")
    assert isinstance(array, np.memmap) and not array.flags.writeable and array.shape == (NUM_TEXTS, 6)
    assert float(np.abs(array - expected.numpy()).max()) <= 1e-6
    assert [path.name for path in tmp_path.iterdir() if path.is_file()] == ["embeddings.npy"]  # no temporary file left


def test_truncate_dim_is_kept_in_the_shards(tmp_path, tiny_lstm, word_tokenizer):
    texts = corpus()[:40]
    shards = encode_to_shards(
        texts, tmp_path / "shards", tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE, truncate_dim=4
    )
    assert shards.embedding_dim == 4
    assert max_difference(shards, tiny_lstm.encode(texts, word_tokenizer, truncate_dim=4)) <= 1e-6


def test_rerun_encodes_only_the_missing_shard(tmp_path, tiny_lstm, word_tokenizer, monkeypatch, capsys):
    texts = corpus()
    folder = tmp_path / "shards"
    encode_to_shards(texts, folder, tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE)
    (folder / "shard-00003.parquet").unlink()
    (folder / ".shard-00003.parquet.0123456789ab.partial").write_bytes(b"PAR1 half a shard of a killed process")
    kept = {path.name: path.stat().st_mtime_ns for path in folder.glob("shard-*.parquet")}
    calls = count_corpus_encodes(monkeypatch, tiny_lstm, texts)

    shards = encode_to_shards(texts, folder, tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE, show_progress_bar=True)

    assert calls == [SHARD_SIZE]  # one shard encoded
    assert {name: (folder / name).stat().st_mtime_ns for name in kept} == kept
    assert shard_files(folder) == all_shard_names() and other_files(folder) == []  # the killed writer's file is gone
    assert max_difference(shards, tiny_lstm.encode(texts, word_tokenizer)) <= 1e-6
    assert f"{NUM_SHARDS}/{NUM_SHARDS}" in capsys.readouterr().err  # the bar counts shards, the skipped ones too


def test_interrupted_run_leaves_complete_shards_and_resumes(tmp_path, tiny_lstm, word_tokenizer, monkeypatch):
    texts = corpus()
    folder = tmp_path / "shards"
    count_corpus_encodes(monkeypatch, tiny_lstm, texts, fail_at=3)
    with pytest.raises(RuntimeError, match="simulated crash"):
        encode_to_shards(texts, folder, tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE)
    assert shard_files(folder) == all_shard_names()[:2] and other_files(folder) == []
    with pytest.raises(FileNotFoundError, match=r"8 of 10 shards are missing .*run the encoding again"):
        EmbeddingShards.open(folder)

    calls = count_corpus_encodes(monkeypatch, tiny_lstm, texts)
    shards = encode_to_shards(texts, folder, tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE)
    assert len(calls) == NUM_SHARDS - 2 and shard_files(folder) == all_shard_names()
    assert max_difference(shards, tiny_lstm.encode(texts, word_tokenizer)) <= 1e-6


def test_a_failed_shard_write_leaves_no_file(tmp_path, tiny_lstm, word_tokenizer, monkeypatch):
    texts = corpus()[:40]
    folder = tmp_path / "shards"
    write_table = pq.write_table

    def failing_write(table, where, **kwargs):
        if table.column("row")[0].as_py() == SHARD_SIZE:  # the second shard: half written, then the disk is full
            where.write(b"PAR1 half")
            raise OSError("No space left on device")
        return write_table(table, where, **kwargs)

    monkeypatch.setattr(shard_file_module.pq, "write_table", failing_write)
    with pytest.raises(OSError, match="No space left"):
        encode_to_shards(texts, folder, tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE)
    assert shard_files(folder) == ["shard-00000.parquet"] and other_files(folder) == []


# A process killed (SIGKILL: no exception handler runs) while it writes its second shard.
KILLED_WHILE_WRITING = r"""
import json, os, signal, sys
from hfsiamese.search.shards import encode_to_shards, shard_files

write_table = shard_files.pq.write_table

def write_then_die(table, where, **kwargs):
    if table.column("row")[0].as_py() > 0:
        where.write(b"PAR1 half a shard")
        where.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    return write_table(table, where, **kwargs)

shard_files.pq.write_table = write_then_die
texts_file, folder, model_dir, shard_size = sys.argv[1:]
texts = json.loads(open(texts_file, encoding="utf-8").read())
encode_to_shards(texts, folder, model_dir, shard_size=int(shard_size))
"""


def test_a_killed_process_leaves_no_shard_that_counts(tmp_path, tiny_lstm, word_tokenizer):
    texts = corpus()[:40]
    model_dir, folder = tmp_path / "model", tmp_path / "shards"
    tiny_lstm.save_pretrained(model_dir)
    word_tokenizer.save_pretrained(model_dir)
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    arguments = [str(tmp_path / "texts.json"), str(folder), str(model_dir), str(SHARD_SIZE)]
    result = run_offline(
        [sys.executable, "-c", KILLED_WHILE_WRITING, *arguments], cwd=tmp_path, timeout=300, OMP_NUM_THREADS="1"
    )
    assert result.returncode == -9, result.stderr[-3000:]
    assert shard_files(folder) == ["shard-00000.parquet"] and len(other_files(folder)) == 1  # its temporary file
    with pytest.raises(FileNotFoundError, match="2 of 3 shards are missing"):
        EmbeddingShards.open(folder)

    shards = encode_to_shards(texts, folder, str(model_dir), shard_size=SHARD_SIZE)
    assert shard_files(folder) == ["shard-00000.parquet", "shard-00001.parquet", "shard-00002.parquet"]
    assert other_files(folder) == []  # the killed writer's temporary file is cleaned up at the end of the run
    assert max_difference(shards, tiny_lstm.encode(texts, word_tokenizer)) <= 1e-6


def test_another_corpus_shard_size_encoding_or_model_is_refused(tmp_path, tiny_lstm, word_tokenizer):
    texts = corpus()
    folder = tmp_path / "shards"
    encode_to_shards(texts, folder, tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE)
    manifest = (folder / "shards.json").read_bytes()
    torch.manual_seed(1)
    other_model = SiameseModel(tiny_lstm.config)

    refusals = [
        ({"texts": texts[:-1]}, r"another corpus \(150 texts, sha256 \w+; these are 149 texts"),
        ({"texts": corpus(seed=1)}, r"another corpus \(150 texts, sha256 \w+; these are 150 texts"),
        ({"shard_size": 32}, r"shard_size=16, not 32 \(pass shard_size=16 to resume\)"),
        ({"truncate_dim": 4}, r"another encoding \(max_length=None, truncate_dim=None; this run: .*truncate_dim=4\)"),
        ({"model": other_model}, r"another model .*embeds the probe texts differently"),
    ]
    for change, message in refusals:
        arguments = {"texts": texts, "model": tiny_lstm, "shard_size": SHARD_SIZE, **change}
        with pytest.raises(ValueError, match=message) as caught:
            encode_to_shards(arguments.pop("texts"), folder, arguments.pop("model"), word_tokenizer, **arguments)
        assert "encode into another folder, or delete" in str(caught.value) and "\n" not in str(caught.value)
    assert (folder / "shards.json").read_bytes() == manifest and shard_files(folder) == all_shard_names()

    # The same weights saved elsewhere (another name_or_path) are the same model: the folder is complete already.
    tiny_lstm.save_pretrained(tmp_path / "moved_model")
    word_tokenizer.save_pretrained(tmp_path / "moved_model")
    mtimes = [path.stat().st_mtime_ns for path in sorted(folder.glob("shard-*.parquet"))]
    encode_to_shards(texts, folder, str(tmp_path / "moved_model"), shard_size=SHARD_SIZE)
    assert [path.stat().st_mtime_ns for path in sorted(folder.glob("shard-*.parquet"))] == mtimes


def test_shards_of_another_precision_are_refused_and_older_folders_read_as_fp32(
    tmp_path, tiny_transformer, word_tokenizer
):
    texts = corpus()
    folder = tmp_path / "shards"
    tiny_transformer.set_encode_precision(None, "as encode(dtype='auto') chose on a machine without fast bf16")
    encode_to_shards(texts, folder, tiny_transformer, word_tokenizer, shard_size=SHARD_SIZE)
    manifest = json.loads((folder / "shards.json").read_text())
    assert manifest["model"]["precision"] == "fp32"
    tiny_transformer.set_encode_precision(torch.bfloat16, "as another machine's encode(dtype='auto') chose")
    with pytest.raises(ValueError, match=r"another precision \(fp32; this process encodes in bf16 autocast"):
        encode_to_shards(texts, folder, tiny_transformer, word_tokenizer, shard_size=SHARD_SIZE)
    # A folder written before the precision was recorded was fp32: it resumes with an fp32 model.
    tiny_transformer.set_encode_precision(None, "fp32")
    del manifest["model"]["precision"]
    (folder / "shards.json").write_text(json.dumps(manifest))
    encode_to_shards(texts, folder, tiny_transformer, word_tokenizer, shard_size=SHARD_SIZE)


def test_shards_without_a_manifest_and_damaged_shards_are_refused(tmp_path, tiny_lstm, word_tokenizer):
    texts = corpus()[:40]
    folder = tmp_path / "shards"
    encode_to_shards(texts, folder, tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE)
    (folder / "shard-00000.parquet").replace(tmp_path / "first.parquet")
    (folder / "shard-00001.parquet").replace(folder / "shard-00000.parquet")
    (tmp_path / "first.parquet").replace(folder / "shard-00001.parquet")
    with pytest.raises(
        ValueError, match=r"shard-00000.parquet should hold rows 0 to 15; delete it and run the encoding again"
    ):
        EmbeddingShards.open(folder).to_numpy()

    (folder / "shards.json").unlink()
    with pytest.raises(FileNotFoundError, match="is not a folder of embedding shards"):
        EmbeddingShards.open(folder)
    with pytest.raises(FileExistsError, match="holds shard files but no shards.json"):
        encode_to_shards(texts, folder, tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE)


@pytest.mark.slow
def test_two_accelerate_processes_write_each_shard_once(tmp_path, tiny_lstm, word_tokenizer):
    texts = corpus()
    model_dir, folder, logs = tmp_path / "model", tmp_path / "shards", tmp_path / "logs"
    tiny_lstm.save_pretrained(model_dir)
    word_tokenizer.save_pretrained(model_dir)
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    logs.mkdir()

    command = [*accelerate_launch(2), str(WORKER),
               str(tmp_path / "texts.json"), str(folder), str(model_dir), str(logs), str(SHARD_SIZE)]  # fmt: skip
    result = run_offline(command, cwd=tmp_path, timeout=300, ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr[-4000:]

    records = [json.loads((logs / f"process-{rank}.json").read_text()) for rank in range(2)]
    assert [record["num_processes"] for record in records] == [2, 2]
    assert [record["num_texts"] for record in records] == [NUM_TEXTS, NUM_TEXTS]
    for rank, record in enumerate(records):
        assert record["written"] == list(range(rank, NUM_SHARDS, 2))  # shard i by process i % 2, once
    assert shard_files(folder) == all_shard_names() and other_files(folder) == []
    assert max_difference(EmbeddingShards.open(folder), tiny_lstm.encode(texts, word_tokenizer)) <= 1e-6


@pytest.mark.slow
def test_two_ray_workers_write_the_same_shards_and_resume(tmp_path, tiny_lstm, word_tokenizer):
    import ray

    assert not ray.is_initialized()
    texts = corpus()
    model_dir, folder = tmp_path / "model", tmp_path / "shards"
    tiny_lstm.save_pretrained(model_dir)
    word_tokenizer.save_pretrained(model_dir)
    expected = tiny_lstm.encode(texts, word_tokenizer)

    shards = encode_to_shards_ray(texts, folder, model_dir, num_workers=2, shard_size=SHARD_SIZE, batch_size=8)
    assert not ray.is_initialized()  # the local Ray it started is shut down
    assert shard_files(folder) == all_shard_names() and other_files(folder) == []
    assert max_difference(shards, expected) <= 1e-6

    (folder / "shard-00004.parquet").unlink()
    kept = {path.name: path.stat().st_mtime_ns for path in folder.glob("shard-*.parquet")}
    shards = encode_to_shards_ray(texts, folder, model_dir, num_workers=2, shard_size=SHARD_SIZE, batch_size=8)
    assert {name: (folder / name).stat().st_mtime_ns for name in kept} == kept
    assert shard_files(folder) == all_shard_names()
    assert max_difference(shards, expected) <= 1e-6


@pytest.mark.parametrize("users_choice", [None, "1", "0"])
def test_a_local_ray_reports_no_usage_unless_the_user_chose(tmp_path, monkeypatch, users_choice):
    """The local Ray it starts sees RAY_USAGE_STATS_ENABLED=0 unless the user set it; the environment is left as it was."""
    seen = {}

    class FakeRay:  # what encode_to_shards_ray asks of Ray around the actors
        def is_initialized(self):
            return False

        def init(self, **kwargs):
            seen["init"] = os.environ.get("RAY_USAGE_STATS_ENABLED")

        def shutdown(self):
            seen["shutdown"] = True

    if users_choice is None:
        monkeypatch.delenv("RAY_USAGE_STATS_ENABLED", raising=False)
    else:
        monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", users_choice)
    monkeypatch.setattr(ray_encoding, "import_ray", FakeRay)
    monkeypatch.setattr(ray_encoding, "_run_ray_actors", lambda *args: "the actors ran")
    assert encode_to_shards_ray(["a question"], tmp_path / "shards", "any/model") == "the actors ran"
    assert seen == {"init": users_choice or "0", "shutdown": True}
    assert os.environ.get("RAY_USAGE_STATS_ENABLED") == users_choice


def test_ray_missing_is_an_import_error_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` then fails, as where it is not installed
    with pytest.raises(ImportError, match=r'needs Ray: .*pip install -e "\.\[ray\]"'):
        encode_to_shards_ray(["a question"], tmp_path / "shards", "any/model")


def test_a_restart_reuses_the_recorded_precision_instead_of_deciding_again(
    tmp_path, tiny_transformer, word_tokenizer, monkeypatch
):
    """An AMX machine's bf16 probe flips between processes: the second process must resume, not be refused. (A tiny
    BERT: bf16 runs for real here, which an LSTM's does not below AVX-512.)"""
    from hfsiamese.utils import encode_precision
    from hfsiamese.utils.encode_precision import EncodePrecision

    monkeypatch.setattr(encode_precision, "_process_default", {"dtype": "auto"})  # as in a command
    decisions = [
        EncodePrecision(torch.bfloat16, "bf16 autocast: measured faster"),
        EncodePrecision(None, "fp32: measured slower"),
    ]
    monkeypatch.setattr(encode_precision, "choose_encode_precision", lambda *a, **k: decisions.pop(0))
    texts = corpus()
    folder = tmp_path / "shards"
    first = encode_to_shards(texts, folder, tiny_transformer, word_tokenizer, shard_size=SHARD_SIZE).to_numpy()
    assert json.loads((folder / "shards.json").read_text())["model"]["precision"] == "bf16 autocast"
    (folder / "shard-00001.parquet").unlink()  # interrupted
    tiny_transformer.__dict__.pop(
        "_encode_precisions", None
    )  # another process: nothing decided yet, and it would choose fp32
    resumed = encode_to_shards(texts, folder, tiny_transformer, word_tokenizer, shard_size=SHARD_SIZE).to_numpy()
    assert len(decisions) == 1  # the recorded precision was used; nothing measured
    np.testing.assert_array_equal(resumed, first)  # the redone shard in bf16, as before
    with pytest.raises(ValueError, match=r"another precision \(bf16 autocast; this process encodes in fp32"):
        encode_to_shards(texts, folder, tiny_transformer, word_tokenizer, shard_size=SHARD_SIZE, dtype=torch.float32)


@pytest.mark.parametrize("max_length", [0, -3, 1.5])
def test_a_max_length_that_is_no_positive_integer_is_refused_before_the_manifest(
    max_length, tmp_path, tiny_lstm, word_tokenizer
):
    """0 wrote shards.json and then refused the folder as "another model" (its probe embeddings were NaN); -3 raised
    an OverflowError from the tokenizer."""
    texts = corpus(size=20)
    with pytest.raises(ValueError, match=rf"^max_length must be a positive integer or None, got {max_length!r}$"):
        encode_to_shards(
            texts, tmp_path / "shards", tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE, max_length=max_length
        )
    assert folder_state(tmp_path) == {}
    shards = encode_to_shards(
        texts, tmp_path / "shards", tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE, max_length=8
    )
    assert shards.num_texts == 20  # the retry


def test_a_users_partial_file_in_the_shards_folder_is_kept(tmp_path, tiny_lstm, word_tokenizer):
    """Only the writers' own temporary files are removed at the end (all `.*.partial` files were)."""
    (tmp_path / ".draft.partial").write_text("the user's", encoding="utf-8")
    encode_to_shards(corpus(size=20), tmp_path, tiny_lstm, word_tokenizer, shard_size=SHARD_SIZE)
    assert (tmp_path / ".draft.partial").read_text(encoding="utf-8") == "the user's"
