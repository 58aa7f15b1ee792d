import datasets
import pytest

from hfsiamese.mining import load_dataset_file, save_dataset_file
from hfsiamese.mining.dataset_files import check_output_path

ROWS = {"query": ["a", "b"], "negatives": [["c"], ["d", "e"]], "teacher_scores": [[0.5, 0.25], [1.0, 0.0, 0.5]]}


@pytest.mark.parametrize("name", ["mined.parquet", "mined.jsonl", "mined"])
def test_the_suffix_picks_the_file_and_it_reads_back(tmp_path, name):
    dataset = datasets.Dataset.from_dict(ROWS)
    path = save_dataset_file(dataset, tmp_path / "out" / name)
    assert load_dataset_file(path).to_dict() == ROWS
    assert [p.name for p in path.parent.iterdir()] == [name]  # no temporary file left beside it


def test_an_existing_output_is_refused_unless_overwriting(tmp_path):
    dataset = datasets.Dataset.from_dict(ROWS)
    for name in ("mined.parquet", "mined"):
        path = save_dataset_file(dataset, tmp_path / name)
        with pytest.raises(FileExistsError, match=f"{name} exists: pass overwrite=True to replace it"):
            save_dataset_file(dataset.select([0]), path)
        save_dataset_file(dataset.select([0]), path, overwrite=True)
        assert len(load_dataset_file(path)) == 1
    with pytest.raises(FileExistsError, match="pass --overwrite_output"):
        check_output_path(tmp_path / "mined", overwrite=False)


def test_a_suffix_of_another_kind_is_refused(tmp_path):
    with pytest.raises(ValueError, match="the suffix says how the data set is written"):
        save_dataset_file(datasets.Dataset.from_dict(ROWS), tmp_path / "mined.csv")
    with pytest.raises(FileNotFoundError, match="data set not found"):
        load_dataset_file(tmp_path / "nothing.parquet")
