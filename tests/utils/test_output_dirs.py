import pytest

from hfsiamese.utils.output_dirs import ensure_writable_folder, ensure_writable_output_dir


def test_output_dir_guard(tmp_path):
    ensure_writable_output_dir(tmp_path / "new")  # absent: fine
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "weights").write_text("x")
    with pytest.raises(FileExistsError, match="not empty"):
        ensure_writable_output_dir(tmp_path / "full")
    ensure_writable_output_dir(tmp_path / "full", overwrite=True)
    ensure_writable_output_dir(tmp_path / "full", resuming=True)
    with pytest.raises(FileExistsError, match="not a folder"):
        ensure_writable_output_dir(tmp_path / "full" / "weights")


def test_folder_guard_names_the_folder_and_the_remedy(tmp_path):
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "embeddings.safetensors").write_text("x")
    with pytest.raises(FileExistsError, match=r"^report_dir .*index is not empty: pass overwrite=True$"):
        ensure_writable_folder(tmp_path / "index", label="report_dir", remedy="pass overwrite=True")
    with pytest.raises(FileExistsError, match=r"^/.*index/embeddings.safetensors exists and is not a folder$"):
        ensure_writable_folder(tmp_path / "index" / "embeddings.safetensors", remedy="unused")
    ensure_writable_folder(tmp_path / "index", overwrite=True, remedy="unused")
    ensure_writable_folder(tmp_path / "absent", remedy="unused")


def test_run_name_says_what_ran():
    from hfsiamese.utils.output_dirs import run_name

    assert run_name("recipes/configs/lstm_qqp.yaml", None, "contrastive", config_loss="contrastive") == "lstm_qqp"
    assert run_name("recipes/configs/lstm_qqp.yaml", None, "triplet", config_loss="contrastive") == "lstm_qqp-triplet"
    assert run_name("recipes/configs/lstm_qqp.yaml", "data/pairs.csv", "contrastive", config_loss="contrastive") == (
        "pairs-contrastive"
    )
    assert run_name(None, "nyu-mll/glue:qqp", "hard_negative_triplet") == "glue_qqp-hard_negative_triplet"


def test_default_output_dir_never_meets_an_earlier_run(tmp_path):
    from hfsiamese.utils.output_dirs import run_output_dir

    assert run_output_dir("lstm_qqp", root=tmp_path) == tmp_path / "lstm_qqp"
    (tmp_path / "lstm_qqp").mkdir()
    assert run_output_dir("lstm_qqp", root=tmp_path) == tmp_path / "lstm_qqp"  # empty: still free
    (tmp_path / "lstm_qqp" / "config.json").write_text("{}")
    assert run_output_dir("lstm_qqp", root=tmp_path) == tmp_path / "lstm_qqp-2"
    (tmp_path / "lstm_qqp-2").mkdir()
    (tmp_path / "lstm_qqp-2" / "config.json").write_text("{}")
    assert run_output_dir("lstm_qqp", root=tmp_path) == tmp_path / "lstm_qqp-3"
    assert run_output_dir("lstm_qqp", root=tmp_path, reuse=True) == tmp_path / "lstm_qqp"  # resuming: the run's own
