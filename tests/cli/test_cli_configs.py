"""Shipped configs found by name, listed, packaged; the embedded pairs found in a clone, or one line saying what to pass."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import pytest

from hfsiamese.cli import configs
from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.main import main as cli_main
from tests.conftest import QQP_FILE, REPO_ROOT

SHIPPED = ("cross_minilm_qqp", "lstm_distilled_qqp", "lstm_qqp", "minilm_qqp", "pretrained_qqp", "static_distilled_qqp")
LAUNCHERS = ("deepspeed_zero2", "deepspeed_zero3", "fsdp", "multi_gpu", "multi_node", "single_gpu")


def test_a_name_is_the_shipped_config_and_a_path_is_kept(tmp_path, monkeypatch):
    assert tuple(configs.shipped_configs()) == SHIPPED
    packaged = str(configs.CONFIGS_DIR / "minilm_qqp.yaml")
    assert configs.resolve_config("minilm_qqp") == packaged == configs.resolve_config("minilm_qqp.yaml")
    own = tmp_path / "minilm_qqp.yaml"
    own.write_text("max_steps: 3\n")
    assert configs.resolve_config(str(own)) == str(own)  # a file of the user's wins, even under a shipped name
    monkeypatch.chdir(tmp_path)
    assert configs.resolve_config("minilm_qqp.yaml") == "minilm_qqp.yaml"
    assert configs.resolve_config("missing/mine.yaml") == "missing/mine.yaml"  # refused when read, as before
    assert configs.resolve_config_argument(["lstm_qqp", "--max_steps", "2"])[0] == str(
        configs.CONFIGS_DIR / "lstm_qqp.yaml"
    )
    assert configs.resolve_config_argument(["--max_steps", "2"]) == ["--max_steps", "2"]


def test_an_unknown_name_is_one_line_naming_the_shipped_configs():
    with pytest.raises(UsageError) as error:
        configs.resolve_config("minilm")
    message = str(error.value)
    assert "\n" not in message and "'minilm'" in message and all(name in message for name in SHIPPED)


def test_list_configs_describes_each_and_names_the_launcher_files(capsys):
    from hfsiamese.cli import train

    assert train.main(["--list-configs"]) == {}
    listing = capsys.readouterr().out
    for name in SHIPPED:
        line = next(line for line in listing.splitlines() if line.split()[:1] == [name])
        assert len(line.split()) > 4  # a description, not just the name
    for name in LAUNCHERS:
        assert str(configs.ACCELERATE_DIR / f"{name}.yaml") in listing
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["configs", "--path", "fsdp"])
    assert exit_info.value.code == 0 and capsys.readouterr().out.strip() == str(configs.ACCELERATE_DIR / "fsdp.yaml")
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["configs", "--path", "nope"])
    assert exit_info.value.code == 2 and "no shipped config 'nope'" in capsys.readouterr().err


def test_the_old_recipe_paths_lead_to_the_packaged_files():
    for folder, names in (("configs", SHIPPED), ("accelerate", LAUNCHERS)):
        for name in names:
            old = REPO_ROOT / "recipes" / folder / f"{name}.yaml"
            assert (
                old.is_file()
                and old.resolve()
                == (configs.CONFIGS_DIR / ("accelerate" if folder == "accelerate" else "") / f"{name}.yaml").resolve()
            )


def test_every_shipped_config_is_package_data_and_the_qqp_pairs_are_not():
    package_data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "hfsiamese"
    ]
    package = REPO_ROOT / "hfsiamese"
    shipped = [path.relative_to(package).as_posix() for path in configs.CONFIGS_DIR.rglob("*") if path.is_file()]
    assert len(shipped) == len(SHIPPED) + len(LAUNCHERS)
    for path in shipped:
        assert any(fnmatch.fnmatch(path, pattern) for pattern in package_data), f"{path} is not package data"
    assert not list(package.rglob("*.tsv"))  # Quora's terms, not Apache-2.0: the pairs stay in the repository


def test_the_embedded_pairs_come_from_a_clone_or_the_run_says_what_to_pass(tmp_path, monkeypatch):
    assert configs.embedded_pairs() == QQP_FILE
    assert configs.require_training_data(None, None) == QQP_FILE
    assert configs.require_training_data("mine.csv", None) is None
    # An installed package run outside a clone: no pairs to fall back on.
    monkeypatch.setattr(configs, "__file__", str(tmp_path / "site-packages" / "hfsiamese" / "cli" / "configs.py"))
    monkeypatch.chdir(tmp_path)
    assert configs.embedded_pairs() is None
    with pytest.raises(UsageError) as error:
        configs.require_training_data(None, None)
    assert "\n" not in str(error.value) and "--train_file" in str(error.value) and "--dataset_name" in str(error.value)
    (tmp_path / "recipes" / "data").mkdir(parents=True)  # run from inside a clone: its copy is found
    Path(tmp_path / "recipes" / "data" / "qqp_dev.tsv").write_text("x")
    assert configs.embedded_pairs() == Path.cwd() / "recipes" / "data" / "qqp_dev.tsv"
