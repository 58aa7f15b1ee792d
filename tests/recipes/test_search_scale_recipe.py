"""recipes/search.py at scale: FAISS quantisation, a database with metadata filters, sharded (accelerate) builds."""

import json
import os
import subprocess

import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.cli.command_line import UsageError
from tests.conftest import REPO_ROOT, TEXTS
from tests.helpers import accelerate_launch, load_recipe

SEARCH = REPO_ROOT / "recipes" / "search.py"
SITES = ["cooking" if i % 2 else "python" for i in range(len(TEXTS))]


@pytest.fixture
def search_recipe(monkeypatch):
    return load_recipe(monkeypatch, "search")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, word_tokenizer):
    """A tiny static encoder of 16 dimensions (binary codes need a multiple of 8), saved with its tokenizer."""
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="static", vocab_size=len(word_tokenizer), embedding_dim=16, pad_token_id=0, threshold=0.9
    )
    path = tmp_path_factory.mktemp("scale_model")
    SiameseModel(config).save_pretrained(path)
    word_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def table_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("scale_corpus") / "questions.csv"
    path.write_text(
        "qid,question,site\n" + "".join(f"{i},{t},{s}\n" for i, (t, s) in enumerate(zip(TEXTS, SITES))),
        encoding="utf-8",
    )
    return path


def test_a_quantised_faiss_index_is_built_in_shards_saved_and_reused(tmp_path, search_recipe, model_dir, table_file):
    base = [
        "--model_name_or_path",
        str(model_dir),
        "--query",
        TEXTS[3],
        "--k",
        "2",
        "--index_dir",
        str(tmp_path / "index"),
    ]
    corpus = ["--corpus", str(table_file), "--text_column", "question", "--id_column", "qid"]
    built = search_recipe.main([*base, *corpus, "--store", "faiss", "--quantization", "binary", "--structure", "flat",
                                "--shards_dir", str(tmp_path / "shards"), "--shard_size", "3"])  # fmt: skip
    assert built["results"][0]["matches"][0]["id"] == 3
    assert sorted(p.name for p in (tmp_path / "index").iterdir()) == [
        "ann.faiss",
        "corpus",
        "embeddings.npy",
        "index_config.json",
    ]
    assert len(list((tmp_path / "shards").glob("shard-*.parquet"))) == -(-len(TEXTS) // 3)
    reused = search_recipe.main(base)  # the saved backend and FAISS index, without flags
    assert reused["results"] == built["results"]


def test_a_database_keeps_metadata_and_filters_searches(tmp_path, search_recipe, model_dir, table_file):
    flags = [
        "--model_name_or_path",
        str(model_dir),
        "--query",
        TEXTS[0],
        "--k",
        str(len(TEXTS)),
        "--index_dir",
        str(tmp_path / "index"),
    ]
    built = search_recipe.main([*flags, "--corpus", str(table_file), "--text_column", "question", "--id_column", "qid",
                                "--metadata_column", "site", "--store", "lancedb", "--database", str(tmp_path / "db"),
                                "--filter", "site=cooking"])  # fmt: skip
    matches = built["results"][0]["matches"]
    assert matches and {m["site"] for m in matches} == {"cooking"} and len(matches) == SITES.count("cooking")
    reused = search_recipe.main([*flags, "--filter", "site=cooking,python"])  # the database the saved index names
    assert len(reused["results"][0]["matches"]) == len(TEXTS)


def test_flags_of_another_backend_are_refused(tmp_path, search_recipe, model_dir, table_file):
    flags = [
        "--model_name_or_path",
        str(model_dir),
        "--corpus",
        str(table_file),
        "--text_column",
        "question",
        "--query",
        "x",
    ]
    with pytest.raises(UsageError, match="apply to --store faiss"):
        search_recipe.main([*flags, "--quantization", "int8"])
    with pytest.raises(
        UsageError, match="--recall_target applies to --store faiss, or to --store lancedb with --vector"
    ):
        search_recipe.main([*flags, "--recall_target", "0.9"])
    with pytest.raises(UsageError, match="needs --database"):
        search_recipe.main([*flags, "--store", "lancedb"])
    with pytest.raises(UsageError, match="--filter needs a database store"):
        search_recipe.main([*flags, "--filter", "site=cooking"])
    with pytest.raises(UsageError, match="is not FIELD=VALUE"):
        search_recipe.main([*flags, "--filter", "site"])
    with pytest.raises(ValueError, match="--metadata_column 'tag' is not a column"):
        search_recipe.main(
            [*flags, "--metadata_column", "tag", "--store", "lancedb", "--database", str(tmp_path / "db")]
        )


@pytest.mark.slow
def test_accelerate_launch_encodes_the_shards_in_two_processes(tmp_path, model_dir, table_file):
    command = [*accelerate_launch(2), str(SEARCH), "--model_name_or_path", str(model_dir), "--corpus", str(table_file),
               "--text_column", "question", "--query", TEXTS[2], "--k", "1", "--json", "--index_dir", str(tmp_path / "index"),
               "--shards_dir", str(tmp_path / "shards"), "--shard_size", "2"]  # fmt: skip
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1")
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    (output,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]  # the main process's
    assert output["num_texts"] == len(TEXTS) and output["results"][0]["matches"][0]["text"] == TEXTS[2]
    assert len(list((tmp_path / "shards").glob("shard-*.parquet"))) == -(-len(TEXTS) // 2)


def test_the_recall_target_reaches_the_index_and_its_saved_measurement(tmp_path, search_recipe, model_dir, table_file):
    """--recall_target is the FAISS index's: its build measures recall against it and saves the figure."""
    import json

    flags = ["--model_name_or_path", str(model_dir), "--corpus", str(table_file), "--text_column", "question",
             "--query", TEXTS[3], "--k", "2", "--index_dir", str(tmp_path / "index"), "--store", "faiss",
             "--quantization", "int8", "--structure", "flat", "--recall_target", "0.9"]  # fmt: skip
    with pytest.warns(UserWarning, match=r"finds 0\.\d+ of the exact top 7 \(a 95% lower bound; 1\.000 on the sample"):
        search_recipe.main(flags)  # the bound over a few queries is wide, however many they find
    recall = json.loads((tmp_path / "index" / "index_config.json").read_text())["recall"]
    assert recall["target"] == 0.9 and recall["recall_sample"] == 1.0  # int8 codes on a small corpus: nothing lost
    assert recall["recall"] < 0.9 and recall["confidence"] == 0.95
