import pickle

import datasets
import pyarrow as pa
import pytest
import torch

from hfsiamese.data.arrow_batches import arrow_batch_dataset
from hfsiamese.data.collator import PAIR_BATCH_COLUMNS, SiamesePairCollator
from hfsiamese.data.preprocessing import tokenize_pairs
from tests.conftest import TEXTS


@pytest.fixture
def tokenized(word_tokenizer):
    n = 24
    pairs = datasets.Dataset.from_dict(
        {
            "question1": [TEXTS[i % 8] + " python" * (i % 5) for i in range(n)],
            "question2": [TEXTS[(i + 3) % 8][: 5 + i] for i in range(n)],
            "label": [i % 2 for i in range(n)],
            "group_id": list(range(n)),
        }
    )
    return tokenize_pairs(pairs, word_tokenizer, keep_text=True)


def test_batches_are_arrow_tables_of_the_pair_columns_in_the_order_asked(tokenized):
    shuffled = tokenized.shuffle(seed=0).select(range(3, 20))  # an indices mapping, as after a split
    view = arrow_batch_dataset(shuffled)
    assert len(view) == len(shuffled) and view.dataset is shuffled
    table = view.__getitems__([4, 0, 16, -1])
    assert isinstance(table, pa.Table)
    assert set(table.column_names) == set(PAIR_BATCH_COLUMNS) & set(tokenized.column_names)
    assert "question1" not in table.column_names  # texts are never gathered
    assert table.to_pylist() == [{k: shuffled[i][k] for k in table.column_names} for i in (4, 0, 16, 16)]
    assert view[2] == shuffled[2]


def test_a_dataloader_over_the_view_gives_the_batches_of_one_over_the_rows(tokenized, word_tokenizer):
    collator = SiamesePairCollator(word_tokenizer)
    sampler = torch.utils.data.SubsetRandomSampler(
        list(range(len(tokenized))), generator=torch.Generator().manual_seed(1)
    )
    expected = list(torch.utils.data.DataLoader(tokenized, batch_size=5, sampler=sampler, collate_fn=collator))
    sampler.generator.manual_seed(1)
    got = list(
        torch.utils.data.DataLoader(arrow_batch_dataset(tokenized), batch_size=5, sampler=sampler, collate_fn=collator)
    )
    assert len(got) == len(expected) == 5
    for batch, reference in zip(got, expected, strict=True):
        assert batch.keys() == reference.keys()
        assert all(torch.equal(batch[k], reference[k]) for k in batch)


def test_the_view_pickles_by_reference_for_dataloader_workers(tokenized, word_tokenizer):
    view = arrow_batch_dataset(tokenized.select(range(10, 20)))
    copy = pickle.loads(pickle.dumps(view))
    assert copy.__getitems__([0, 9]).equals(view.__getitems__([0, 9]))
    loader = torch.utils.data.DataLoader(
        view, batch_size=4, num_workers=1, collate_fn=SiamesePairCollator(word_tokenizer)
    )
    assert [batch["group_ids"].tolist() for batch in loader] == [[10, 11, 12, 13], [14, 15, 16, 17], [18, 19]]


def test_formats_are_honoured(tokenized):
    limited = tokenized.with_format(columns=["input_ids_a", "input_ids_b"])
    assert arrow_batch_dataset(limited).__getitems__([0]).column_names == ["input_ids_a", "input_ids_b"]
    transformed = tokenized.with_transform(lambda batch: {"input_ids_b": batch["input_ids_a"]})
    rows = arrow_batch_dataset(transformed).__getitems__([1, 2])  # rows as the transform makes them
    assert rows == transformed.__getitems__([1, 2]) and rows[0] == {"input_ids_b": tokenized[1]["input_ids_a"]}


def test_bad_keys_and_inputs_are_refused(tokenized):
    view = arrow_batch_dataset(tokenized)
    with pytest.raises(IndexError, match="out of bounds for size 24"):
        view.__getitems__([3, 24])
    with pytest.raises(TypeError, match="takes a datasets.Dataset"):
        arrow_batch_dataset(tokenized.to_list())


def test_rows_of_many_chunks_are_taken_in_the_order_asked():
    """Rows spread over many chunks (a prepared folder's shards): a chunk asked for one row or for several, repeats,
    any order, the same rows as one take over the whole table."""
    import numpy as np

    from hfsiamese.data.arrow_batches import ChunkedRows

    rng = np.random.default_rng(0)
    sizes = [3, 1, 40, 7, 1, 25, 2]
    batches = []
    for number, size in enumerate(sizes):
        texts = [f"question {number}-{row} " * int(rng.integers(1, 4)) for row in range(size)]
        batches.append(pa.record_batch({"question1": texts, "label": list(range(size))}))
    table = pa.Table.from_batches(batches)
    rows = ChunkedRows(table)
    whole = table.combine_chunks()
    for count in (1, 2, 5, 30, 79, 200):
        asked = rng.integers(0, table.num_rows, count)
        assert rows.take(asked).equals(whole.take(pa.array(asked))), count
    ascending = np.arange(0, table.num_rows, 3)
    assert rows.take(ascending).equals(whole.take(pa.array(ascending)))
    assert rows.take(np.array([], dtype=np.int64)).num_rows == 0
