import pytest

from hfsiamese.output_dirs import ensure_writable_folder, ensure_writable_output_dir


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
