"""The out-of-core preparation (`hfsiamese.preparation`, `hfsiamese prepare`): the same splits, groups and rows as the
in-memory path, leak-free, resumable after a SIGKILL, and refusing a shard that is not the one it wrote."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import datasets
import pytest

from hfsiamese.cli.prepare import main as prepare_command
from hfsiamese.preparation import PreparationOptions, load_prepared_splits, prepare_pairs
from hfsiamese.preparation.shards import CorruptShardError
from hfsiamese.training.arguments import DataArguments
from hfsiamese.training.preparation import load_splits
from tests.conftest import QQP_FILE, REPO_ROOT
from tests.helpers import folder_state, offline_env

MAKE_PAIRS = REPO_ROOT / "benchmarks" / "search" / "make_pairs_file.py"


def synthetic_pairs(path: Path, pairs: int, seed: int = 0) -> Path:
    """A synthetic QQP-like file: duplicate chains, repeats, mirrored repeats with flipped labels, empty questions."""
    subprocess.run(
        [sys.executable, str(MAKE_PAIRS), str(path), "--pairs", str(pairs), "--seed", str(seed)],
        check=True, capture_output=True, env=offline_env(),
    )  # fmt: skip
    return path


def assert_same_splits(prepared: datasets.DatasetDict, in_memory: datasets.DatasetDict) -> None:
    assert list(prepared) == list(in_memory)
    for name in in_memory:
        expected = in_memory[name].flatten_indices().data.table
        got = prepared[name].flatten_indices().data.table  # a sampled validation set is a selection
        assert got.schema.names == expected.schema.names, name
        assert got.equals(expected.cast(got.schema)), name


@pytest.mark.parametrize(
    "split_options",
    [{}, {"validation_fraction": 0.2, "test_fraction": 0.1, "split_seed": 7}],
    ids=["recipe-default", "with-test-side"],
)
def test_prepared_splits_equal_the_in_memory_ones_on_the_bundled_pairs(tmp_path, split_options):
    data_args = DataArguments(train_file=str(QQP_FILE), **split_options)
    in_memory = load_splits(data_args)
    prepare_pairs(QQP_FILE, tmp_path / "prepared", PreparationOptions.from_data_args(data_args), shard_pairs=2_000)
    prepared = load_splits(DataArguments(train_file=str(tmp_path / "prepared"), **split_options))
    assert_same_splits(prepared, in_memory)


def test_prepared_splits_equal_the_in_memory_ones_with_repeats_mirrors_and_empty_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "cache")  # where --prepare_data keeps it
    source = synthetic_pairs(tmp_path / "pairs.tsv", 4_000)
    with pytest.warns(UserWarning, match="collapsed"):
        in_memory = load_splits(DataArguments(train_file=str(source), max_eval_pairs=300))
    with pytest.warns(UserWarning, match="collapsed"):
        in_cache = load_splits(DataArguments(train_file=str(source), max_eval_pairs=300, prepare_data=True))
    assert_same_splits(in_cache, in_memory)
    cached = list((tmp_path / "cache" / "hfsiamese_prepared").glob("*/train-*.arrow"))
    assert cached, "the preparation went to the datasets cache"
    # A second run on the same file and options reads the cached folder: nothing is prepared again.
    before = {path: path.stat().st_mtime_ns for path in cached}
    again = load_splits(DataArguments(train_file=str(source), max_eval_pairs=300, prepare_data=True))
    assert_same_splits(again, in_memory)
    assert {path: path.stat().st_mtime_ns for path in cached} == before


def test_split_is_leak_free_on_chained_components(tmp_path):
    # Chains q(c,0)~q(c,1)~...~q(c,k) of every length 1..39, written with varying case and spacing so that only
    # the folded text says two rows hold one question; chain c also repeats its first question in chain c+1's
    # last row every 5th chain, joining two chains into one component.
    rows = []
    for chain in range(40):
        for link in range(chain % 39 + 1):
            first = f"What is question {chain} {link}?"
            second = f"what  IS question {chain} {link + 1}? "
            rows.append((link % 2, first if link % 3 else first.upper(), second))
        if chain % 5 == 4:
            rows.append((0, f"What is question {chain + 1} 0?", f"WHAT is question {chain} 0?"))
    source = tmp_path / "chains.tsv"
    source.write_text("".join(f"{label}\t{a}\t{b}\t{i}\n" for i, (label, a, b) in enumerate(rows)), encoding="utf-8")

    prepare_pairs(source, tmp_path / "prepared", PreparationOptions(validation_fraction=0.3, test_fraction=0.2))
    splits = load_prepared_splits(tmp_path / "prepared")

    def questions(split: datasets.Dataset) -> set[str]:  # folded here, without the library's folding
        return {" ".join(text.lower().split()) for column in ("question1", "question2") for text in split[column]}

    sides = {name: questions(split) for name, split in splits.items()}
    assert set(sides) == {"train", "validation", "test"}
    assert all(sides.values())
    for a in sides:
        for b in sides:
            if a < b:
                assert not sides[a] & sides[b], f"{a} and {b} share questions"
    assert sum(len(split) for split in splits.values()) == len(rows)


_KILLED_RUN = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import hfsiamese.preparation.local_engine as local_engine
    import hfsiamese.preparation.prepare as prepare
    from hfsiamese.preparation.shards import write_shard

    written = []
    def write_then_die(table, path):
        if len(written) == 3:  # the fourth shard: half of it written under its temporary name, then SIGKILL
            partial = path.with_name(path.name + ".partial")
            partial.write_bytes(b"ARROW1" + b"\\0" * 100)
            os.kill(os.getpid(), signal.SIGKILL)
        written.append(path.name)
        return write_shard(table, path)

    local_engine.write_shard = write_then_die
    prepare.prepare_pairs(sys.argv[1], sys.argv[2], shard_pairs=500)
    """
)


def test_a_preparation_killed_mid_way_resumes_to_the_same_folder(tmp_path):
    source = synthetic_pairs(tmp_path / "pairs.tsv", 3_000)
    killed = tmp_path / "killed"
    run = subprocess.run(
        [sys.executable, "-c", _KILLED_RUN, str(source), str(killed)],
        env=offline_env(PYTHONPATH=str(REPO_ROOT)), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == -signal.SIGKILL, run.stderr[-2000:]
    kept = sorted(killed.glob("*.arrow"))
    assert len(kept) == 3 and not (killed / "manifest.json").exists()
    assert list(killed.glob("*.partial"))
    with pytest.raises(ValueError, match="unfinished preparation"):
        load_prepared_splits(killed)
    before = {path.name: path.stat().st_mtime_ns for path in kept}

    with pytest.warns(UserWarning):
        resumed = prepare_pairs(source, killed, shard_pairs=500)
        whole = prepare_pairs(source, tmp_path / "whole", shard_pairs=500)
    assert {path.name: path.stat().st_mtime_ns for path in kept} == before  # finished shards kept, not rewritten
    assert not list(killed.glob("*.partial"))
    assert resumed["counts"] == whole["counts"] and resumed["shards"] == whole["shards"]
    assert_same_splits(load_prepared_splits(killed), load_prepared_splits(tmp_path / "whole"))


@pytest.mark.parametrize("damage", ["truncated", "other-rows"])
def test_a_damaged_shard_is_refused_in_one_line_naming_it(tmp_path, damage):
    folder = tmp_path / "prepared"
    prepare_pairs(QQP_FILE, folder, shard_pairs=4_000)
    shard = folder / "train-00001.arrow"
    if damage == "truncated":
        shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    else:  # same size, but not a stream of the recorded rows
        shard.write_bytes(b"\0" * shard.stat().st_size)
    with pytest.raises(CorruptShardError, match="train-00001.arrow") as error:
        load_prepared_splits(folder)
    assert "\n" not in str(error.value)
    with pytest.raises(CorruptShardError, match="train-00001.arrow"):  # nor is it taken as finished when resumed
        prepare_pairs(QQP_FILE, folder, shard_pairs=4_000)
    shard.unlink()  # as the message says: deleted, then prepared again
    prepare_pairs(QQP_FILE, folder, shard_pairs=4_000)
    prepare_pairs(QQP_FILE, tmp_path / "whole", shard_pairs=4_000)
    assert_same_splits(load_prepared_splits(folder), load_prepared_splits(tmp_path / "whole"))


def test_an_output_dir_holding_something_else_needs_consent(tmp_path):
    folder = tmp_path / "prepared"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(FileExistsError, match="--overwrite_output_dir"):
        prepare_pairs(QQP_FILE, folder)
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine"
    prepare_pairs(QQP_FILE, folder, overwrite_output_dir=True)
    assert not (folder / "notes.txt").exists()
    with pytest.raises(FileExistsError, match="--overwrite_output_dir"):  # other options: another preparation
        prepare_pairs(QQP_FILE, folder, PreparationOptions(split_seed=1))
    copy = tmp_path / "copy.tsv"  # the same content and time elsewhere: the same preparation
    copy.write_bytes(QQP_FILE.read_bytes())
    os.utime(copy, ns=(QQP_FILE.stat().st_atime_ns, QQP_FILE.stat().st_mtime_ns))
    assert prepare_pairs(copy, folder)["counts"]["train_pairs"] == 9_000


@pytest.mark.parametrize("where", ["data/pairs.tsv", "data/raw/pairs.tsv"])
def test_an_output_dir_holding_the_pair_file_is_refused_even_with_overwrite(tmp_path, where):
    """Replacing the folder removed the pair file being prepared (and `--overwrite_output_dir` said only "replace")."""
    source = tmp_path / where
    source.parent.mkdir(parents=True)
    source.write_bytes(QQP_FILE.read_bytes())
    before = folder_state(tmp_path)
    with pytest.raises(ValueError, match=r"^--output_dir .*data holds the pair file .*pairs.tsv: choose another"):
        prepare_pairs(source, tmp_path / "data", overwrite_output_dir=True)
    assert folder_state(tmp_path) == before
    assert prepare_pairs(source, tmp_path / "prepared")["counts"]["train_pairs"] == 9_000  # the retry


def test_bad_options_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="validation_fraction"):
        prepare_pairs(QQP_FILE, tmp_path / "prepared", PreparationOptions(validation_fraction=1.5))
    with pytest.raises(FileNotFoundError, match="missing.tsv"):
        prepare_pairs(tmp_path / "missing.tsv", tmp_path / "prepared")
    unlabelled = tmp_path / "unlabelled.csv"
    unlabelled.write_text("question1,question2\nHow?,Why?\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unlabelled.csv"):
        prepare_pairs(unlabelled, tmp_path / "prepared")
    assert not (tmp_path / "prepared").exists()


@pytest.mark.parametrize("seed", ["x", 1.5, True])
def test_a_split_seed_that_is_no_integer_is_refused_before_the_folder_is_made(tmp_path, seed):
    """It was refused by numpy (SeedSequence's TypeError) once the folder and its preparation.json were written."""
    with pytest.raises(ValueError, match=rf"^split_seed must be an integer, got {seed!r}$"):
        prepare_pairs(QQP_FILE, tmp_path / "prepared", PreparationOptions(split_seed=seed))
    assert folder_state(tmp_path) == {}
    assert prepare_pairs(QQP_FILE, tmp_path / "prepared", PreparationOptions(split_seed=7))["counts"]["train_pairs"]


def test_a_run_with_other_split_options_than_the_folder_is_refused(tmp_path):
    prepare_pairs(QQP_FILE, tmp_path / "prepared")
    with pytest.raises(ValueError, match=r"split_seed=7 \(prepared with 42\)"):
        load_splits(DataArguments(train_file=str(tmp_path / "prepared"), split_seed=7))
    with pytest.raises(ValueError, match="--silver_pairs_file cannot be combined"):
        load_splits(DataArguments(train_file=str(tmp_path / "prepared"), silver_pairs_file="silver.jsonl"))


def test_the_prepare_command_prints_the_counts_and_resumes_the_same_preparation(tmp_path, capsys):
    argv = ["--train_file", str(QQP_FILE), "--output_dir", str(tmp_path / "prepared"), "--split_seed", "3"]
    first = prepare_command(argv)
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed == first and first["train_pairs"] + first["validation_pairs"] == 10_000
    manifest = json.loads((tmp_path / "prepared" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["options"]["split_seed"] == 3 and manifest["source"]["size"] == os.path.getsize(QQP_FILE)
    assert prepare_command(argv) == first  # the same preparation: nothing to do


@pytest.mark.parametrize("flag, processes", [([], 3), (["--preprocessing_num_workers", "1"], 1)])
def test_the_prepare_command_hashes_and_writes_on_every_core_unless_told(tmp_path, monkeypatch, flag, processes):
    import hfsiamese.preparation as preparation
    import hfsiamese.utils.cpu_threads as cpu_threads

    asked = []
    real = preparation.prepare_pairs
    monkeypatch.setattr(cpu_threads, "available_cores", lambda: 3)
    monkeypatch.setattr(preparation, "prepare_pairs", lambda *a, **kw: asked.append(kw["num_proc"]) or real(*a, **kw))
    prepare_command(["--train_file", str(QQP_FILE), "--output_dir", str(tmp_path / "prepared"), *flag])
    assert asked == [processes]


_PEAK_RSS = textwrap.dedent(
    """
    import resource, sys, warnings
    warnings.simplefilter("ignore")
    from hfsiamese.preparation import prepare_pairs
    prepare_pairs(sys.argv[1], sys.argv[2], shard_pairs=5_000)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)  # Linux: KiB
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB: Linux")
@pytest.mark.slow
def test_preparation_memory_grows_by_compact_arrays_only(tmp_path):
    # 20k and 200k pairs, each prepared in a fresh process: the peak may grow by the per-pair integer arrays (hashes,
    # codes, split, groups: measured about 490 bytes a pair at its peak, mapped file pages included), not by a
    # Python object per question or pair (the in-memory path: about 840 bytes a pair on the same files).
    peaks = {}
    for pairs in (20_000, 200_000):
        source = synthetic_pairs(tmp_path / f"pairs_{pairs}.tsv", pairs)
        run = subprocess.run(
            [sys.executable, "-c", _PEAK_RSS, str(source), str(tmp_path / f"prepared_{pairs}")],
            env=offline_env(PYTHONPATH=str(REPO_ROOT), HF_DATASETS_CACHE=str(tmp_path / "cache")),
            capture_output=True, text=True, timeout=600, check=True,
        )  # fmt: skip
        peaks[pairs] = int(run.stdout.strip().splitlines()[-1])
    per_pair = (peaks[200_000] - peaks[20_000]) / 180_000
    assert per_pair < 640, f"peak resident memory grew by {per_pair:.0f} bytes per pair ({peaks})"


def test_shards_written_by_several_processes_are_the_same(tmp_path):
    one = prepare_pairs(QQP_FILE, tmp_path / "one", shard_pairs=2_000)
    several = prepare_pairs(QQP_FILE, tmp_path / "several", shard_pairs=2_000, num_proc=2)
    assert several["shards"] == one["shards"] and len(one["shards"]["train"]) == 5
    for records in one["shards"].values():
        for record in records:
            assert (tmp_path / "several" / record["file"]).read_bytes() == (
                tmp_path / "one" / record["file"]
            ).read_bytes()


@pytest.mark.parametrize("block", [1 << 22, 7])
def test_codes_numbered_again_for_a_subset_of_pairs_equal_those_of_its_hashes(monkeypatch, block):
    import numpy as np

    import hfsiamese.preparation.prepare as prepare
    from hfsiamese.preparation.prepare import _codes, _renumbered

    monkeypatch.setattr(prepare, "_RENUMBER_BLOCK", block)  # 7: blocks that split the codes anywhere

    rng = np.random.default_rng(0)
    hashes = rng.integers(0, 2**63, size=300, dtype=np.uint64)
    hash1, hash2 = hashes[rng.integers(0, 300, 1_000)], hashes[rng.integers(0, 300, 1_000)]
    hash1[5], hash2[5] = hash2[2], hash1[2]  # a mirrored repeat: dropping it moves a question's first appearance
    codes = _codes(np.concatenate([hash1, hash2]), len(hash1))
    for rows in (np.arange(1_000), np.delete(np.arange(1_000), [2, 5]), np.sort(rng.choice(1_000, 400, replace=False)),
                 np.array([], dtype=np.int64)):  # fmt: skip
        expected = _codes(np.concatenate([hash1[rows], hash2[rows]]), len(rows))
        got = _renumbered(codes, rows)
        assert got.count == expected.count
        assert np.array_equal(got.codes1, expected.codes1) and np.array_equal(got.codes2, expected.codes2)
