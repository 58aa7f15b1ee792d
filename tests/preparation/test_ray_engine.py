"""`prepare_pairs(engine="ray")` and `hfsiamese prepare --engine ray` on a local two-CPU Ray: the same folder, byte for
byte, as the local engine's; a task on a node that does not see the output folder refuses, naming the node; without
Ray, one line naming the extra before anything is written."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import datasets
import numpy as np
import pytest
import ray

from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.prepare import main as prepare_command
from hfsiamese.preparation import prepare_pairs, ray_engine
from hfsiamese.preparation.ray_engine import RayPreparation, SharedFolderError
from tests.conftest import QQP_FILE
from tests.preparation.test_prepare import synthetic_pairs


def assert_same_files(expected: Path, got: Path) -> None:
    """The same files, byte for byte, at every depth (a prepared folder keeps what runs derive in subfolders)."""
    names = sorted(path.relative_to(expected).as_posix() for path in expected.rglob("*"))
    assert sorted(path.relative_to(got).as_posix() for path in got.rglob("*")) == names
    for name in names:
        if (expected / name).is_file():
            assert (got / name).read_bytes() == (expected / name).read_bytes(), name


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A two-CPU local Ray for the tests that bring their own (prepare_pairs then uses it and leaves it running)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_engine_writes_the_local_engines_folder_byte_for_byte(tmp_path, monkeypatch):
    monkeypatch.setattr(ray_engine, "HASH_ROWS", 1_500)  # seven hashing tasks over the 10,000 pairs
    local = prepare_pairs(QQP_FILE, tmp_path / "local", shard_pairs=2_000)
    assert not ray.is_initialized()
    on_ray = prepare_pairs(QQP_FILE, tmp_path / "ray", shard_pairs=2_000, engine="ray", num_proc=2)
    assert not ray.is_initialized()  # the local Ray started for the call is stopped after it
    assert on_ray == local and len(local["shards"]["train"]) == 5
    assert_same_files(tmp_path / "local", tmp_path / "ray")


def test_without_ray_the_engine_is_refused_naming_the_extra_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as where it is not installed
    with pytest.raises(ImportError, match=r"needs Ray: .*pip install") as error:
        prepare_pairs(QQP_FILE, tmp_path / "prepared", engine="ray")
    assert "\n" not in str(error.value)
    with pytest.raises(ImportError, match="needs Ray"):
        prepare_command(["--train_file", str(QQP_FILE), "--output_dir", str(tmp_path / "prepared"), "--engine", "ray"])
    assert not (tmp_path / "prepared").exists()


def test_bad_engine_options_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="engine must be one of local, ray, got 'spark'"):
        prepare_pairs(QQP_FILE, tmp_path / "prepared", engine="spark")
    with pytest.raises(ValueError, match=r"ray_address \(auto\) is a Ray cluster's: pass engine='ray'"):
        prepare_pairs(QQP_FILE, tmp_path / "prepared", ray_address="auto")
    with pytest.raises(UsageError, match="invalid choice: 'x'"):
        prepare_command(["--train_file", str(QQP_FILE), "--output_dir", str(tmp_path / "prepared"), "--engine", "x"])
    assert not (tmp_path / "prepared").exists()


@pytest.mark.slow
def test_the_prepare_command_on_ray_with_repeats_a_test_side_and_a_resume(tmp_path, local_ray, monkeypatch):
    monkeypatch.setattr(ray_engine, "HASH_ROWS", 1_000)
    source = synthetic_pairs(tmp_path / "pairs.tsv", 4_000)  # repeats, mirrored repeats, empty questions
    flags = ["--train_file", str(source), "--test_fraction", "0.1", "--split_seed", "5", "--shard_pairs", "700"]
    with pytest.warns(UserWarning, match="collapsed"):
        local = prepare_command([*flags, "--output_dir", str(tmp_path / "local")])
    with pytest.warns(UserWarning, match="collapsed"):
        on_ray = prepare_command([*flags, "--output_dir", str(tmp_path / "ray"), "--engine", "ray"])
    assert on_ray == {**local, "output_dir": str(tmp_path / "ray")} and on_ray["test_pairs"] > 0
    assert ray.is_initialized()  # the caller's Ray is used, and left running
    assert_same_files(tmp_path / "local", tmp_path / "ray")
    # A folder begun by one engine is finished by the other: two shards lost, written again by Ray tasks.
    for name in ("train-00001.arrow", "validation-00000.arrow"):
        (tmp_path / "local" / name).unlink()
    with pytest.warns(UserWarning, match="collapsed"):
        prepare_command([*flags, "--output_dir", str(tmp_path / "local"), "--engine", "ray"])
    assert_same_files(tmp_path / "ray", tmp_path / "local")


def test_a_task_that_does_not_see_the_output_folder_refuses_naming_its_node(tmp_path, local_ray):
    folder = tmp_path / "prepared"
    folder.mkdir()
    started = folder / "preparation.json"
    started.write_text('{"options": 1}\n', encoding="utf-8")
    pairs = datasets.Dataset.from_dict({"question1": ["How?"], "question2": ["Why?"], "label": [1]})
    with RayPreparation(started) as workers:
        started.unlink()  # as a node whose own disk has no such folder sees it
        with pytest.raises(SharedFolderError, match=r"does not exist on Ray node [\d.]+: .*every Ray node") as error:
            workers.hash_questions(pairs)
        started.write_text('{"options": 2}\n', encoding="utf-8")  # a folder at that path, but another one
        with pytest.raises(SharedFolderError, match="holds another preparation"):
            list(workers.write_shards(pairs, [(folder / "train-00000.arrow", np.array([0]), None)]))
    assert "\n" not in str(error.value)  # the task's own line, not Ray's traceback around it
    assert not (folder / "train-00000.arrow").exists()
