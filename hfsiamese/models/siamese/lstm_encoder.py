"""
`encoder_type="lstm"`: a word-embedding table and a (bi)LSTM over packed sequences, pooled over real tokens only.

Packed sequences need right-padded inputs, checked here with a one-line error. This file travels with every
checkpoint as remote code (the modeling file imports it relatively), so it imports only torch and its siblings.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .configuration_siamese import SiameseConfig
from .padding import is_right_padded
from .pooling import masked_mean

__all__ = ["LSTMEncoder"]


def lengths_of_right_padded(attention_mask: torch.Tensor) -> torch.Tensor:
    """Token counts per row; refuses masks that are not ``1…1 0…0`` (packing needs right padding)."""
    lengths = attention_mask.sum(dim=1)
    if not is_right_padded(attention_mask):
        raise ValueError(
            "the LSTM encoder needs right-padded inputs (attention_mask of the form 1…1 0…0); "
            "set tokenizer.padding_side = 'right'"
        )
    return lengths


class LSTMEncoder(nn.Module):
    """Embedding → (bi)LSTM on packed sequences → pooling over real tokens only.

    Packing keeps padding out of the recurrence entirely (no compute on it, and no pad state fed
    into the "last" pooling), which plain ``nn.LSTM`` over a padded batch would not.
    """

    def __init__(self, config: SiameseConfig) -> None:
        super().__init__()
        self.pooling = config.pooling
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_dim, padding_idx=config.pad_token_id)
        self.dropout = nn.Dropout(config.dropout)
        self.lstm = nn.LSTM(
            config.embedding_dim,
            config.hidden_size,
            num_layers=config.num_layers,
            bidirectional=config.bidirectional,
            dropout=config.dropout if config.num_layers > 1 else 0.0,
            batch_first=True,
        )

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[1] == 0:  # a batch of empty texts only: give each one (pad) step
            input_ids = input_ids.new_full((input_ids.shape[0], 1), self.embeddings.padding_idx or 0)
            attention_mask = attention_mask.new_zeros((input_ids.shape[0], 1))
        lengths = lengths_of_right_padded(attention_mask)
        # An empty text still needs one step for packing; its lone (pad) token has a zero embedding.
        safe_lengths = lengths.clamp(min=1)
        embedded = self.dropout(self.embeddings(input_ids))
        packed = pack_padded_sequence(embedded, safe_lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_out, (h_n, _) = self.lstm(packed)
        if self.pooling == "last":
            # h_n holds, per direction, the state after each row's own last real token.
            directions = 2 if self.lstm.bidirectional else 1
            return torch.cat([h_n[-d] for d in range(directions, 0, -1)], dim=-1)
        states, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=input_ids.shape[1])
        mask = torch.arange(states.shape[1], device=states.device).unsqueeze(0) < safe_lengths.unsqueeze(1)
        if self.pooling == "max":
            return states.masked_fill(~mask.unsqueeze(-1), float("-inf")).max(dim=1).values
        return masked_mean(states, mask)
