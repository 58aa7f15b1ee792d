import numpy as np
import pytest
import torch

from hfsiamese.models.siamese.padding import pad_ragged, padded_width, ragged_from_rows, token_positions


def test_ragged_from_rows_takes_lists_arrays_and_tensors():
    for rows in (
        [[1, 2], [], [3]],
        [np.array([1, 2]), np.array([], dtype=int), np.array([3])],
        [torch.tensor([1, 2]), torch.tensor([], dtype=torch.long), torch.tensor([3])],
    ):
        values, lengths = ragged_from_rows(rows)
        assert values.dtype == np.int64 and values.tolist() == [1, 2, 3] and lengths.tolist() == [2, 0, 1]


def test_padded_width_rounds_up_as_the_tokenizer_does():
    lengths = np.array([3, 5])
    assert padded_width(lengths) == 5
    assert (
        padded_width(lengths, 8) == 8 and padded_width(np.array([8]), 8) == 8 and padded_width(np.array([9]), 8) == 16
    )
    assert padded_width(np.array([], dtype=np.int64)) == 0


@pytest.mark.parametrize(
    ("side", "expected"),
    [("right", [[1, 2, 0, 0], [3, 0, 0, 0], [4, 5, 6, 7]]), ("left", [[0, 0, 1, 2], [0, 0, 0, 3], [4, 5, 6, 7]])],
)
def test_pad_ragged_puts_the_tokens_away_from_the_padding_side(side, expected):
    values, lengths = np.array([1, 2, 3, 4, 5, 6, 7]), np.array([2, 1, 4])
    padded = pad_ragged(values, token_positions(lengths, 4, side), pad_value=0)
    assert padded.dtype == torch.long and padded.tolist() == expected


def test_token_positions_refuses_an_unknown_padding_side():
    with pytest.raises(ValueError, match="Invalid padding strategy:middle"):
        token_positions(np.array([1]), 2, "middle")
