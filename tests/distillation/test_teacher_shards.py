"""The teacher's embeddings in resumable shards: a SIGKILLed run resumes from its finished shards and ends as an
uninterrupted run does; the vectors are mapped from the folder, not held."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from hfsiamese.distillation import encode_teacher_targets, load_teacher
from hfsiamese.distillation.teacher import TEACHER_VECTORS_FILE

TEXTS = [f"how do I learn topic number {i} quickly?" for i in range(40)]

# Encodes TEXTS in shards of 4 texts; with a kill count, the process SIGKILLs itself once that many shards are written.
SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import hfsiamese.search.shards.local_encoding as local_encoding
    from hfsiamese.distillation import encode_teacher_targets, load_teacher

    teacher_dir, shards_dir, kill_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    texts = [f"how do I learn topic number {i} quickly?" for i in range(40)]
    write_shard, written = local_encoding.write_shard, []

    def write_then_maybe_die(*args, **kwargs):
        path = write_shard(*args, **kwargs)
        written.append(path)
        if len(written) == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
        return path

    local_encoding.write_shard = write_then_maybe_die
    teacher, tokenizer = load_teacher(teacher_dir)
    encode_teacher_targets(teacher, tokenizer, texts, batch_size=4, shards_dir=shards_dir, shard_size=4)
    print("shards written:", len(written))
    """
)


def _encode(teacher_dir: Path, shards_dir: Path, kill_after: int = 0) -> subprocess.CompletedProcess:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(teacher_dir), str(shards_dir), str(kill_after)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.runs_first  # three processes, each importing the library: a minute and more on two shared cores
@pytest.mark.slow
def test_a_killed_encoding_resumes_from_its_finished_shards_to_the_uninterrupted_result(tiny_bert_dir, tmp_path):
    killed = _encode(tiny_bert_dir, tmp_path / "resumed", kill_after=3)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert len(list((tmp_path / "resumed").glob("shard-*.parquet"))) == 3
    assert not (tmp_path / "resumed" / TEACHER_VECTORS_FILE).exists()
    resumed = _encode(tiny_bert_dir, tmp_path / "resumed")
    assert resumed.returncode == 0 and "shards written: 7" in resumed.stdout, resumed.stderr[-2000:]  # 10 - 3
    whole = _encode(tiny_bert_dir, tmp_path / "whole")
    assert whole.returncode == 0 and "shards written: 10" in whole.stdout, whole.stderr[-2000:]
    np.testing.assert_array_equal(
        np.load(tmp_path / "resumed" / TEACHER_VECTORS_FILE), np.load(tmp_path / "whole" / TEACHER_VECTORS_FILE)
    )


def test_sharded_targets_are_the_teachers_vectors_mapped_from_the_folder(tiny_bert_dir, tmp_path):
    teacher, tokenizer = load_teacher(str(tiny_bert_dir))
    texts = TEXTS + TEXTS[:5]  # repeated texts: one vector each
    sharded = encode_teacher_targets(teacher, tokenizer, texts, batch_size=4, shards_dir=tmp_path, shard_size=8)
    in_memory = encode_teacher_targets(teacher, tokenizer, texts, batch_size=4)
    assert list(sharded.texts) == TEXTS and torch.allclose(sharded.vectors, in_memory.vectors, atol=1e-6)
    assert not sharded.vectors.numpy().flags.owndata  # a view of the mapped file, not a copy
    np.testing.assert_array_equal(sharded.vectors.numpy(), np.load(tmp_path / TEACHER_VECTORS_FILE))
    other, _ = load_teacher(str(tiny_bert_dir))
    torch.manual_seed(0)
    with torch.no_grad():  # another teacher: its vectors must not be mixed with these shards
        for parameter in other.parameters():
            parameter.add_(torch.randn_like(parameter))
    with pytest.raises(ValueError, match=str(tmp_path)):
        encode_teacher_targets(other, tokenizer, texts, batch_size=4, shards_dir=tmp_path, shard_size=8)
