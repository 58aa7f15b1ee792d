"""The teacher and its targets: every distinct training question embedded once, kept as a text → vector table."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from hfsiamese.bi_encoder.model_building import build_model_and_tokenizer
from hfsiamese.loading import BI_ENCODER, config_values, load_siamese_model, model_kind
from hfsiamese.models.siamese.modeling_siamese import SiameseModel
from hfsiamese.training.arguments import ModelArguments
from hfsiamese.utils.hub_access import require_local_or_cached
from hfsiamese.utils.minilm import MINILM_HUB_ID, resolve_minilm_path

logger = logging.getLogger(__name__)

__all__ = ["TeacherEmbeddings", "encode_teacher_targets", "load_teacher"]


def teacher_path(name_or_path: str) -> str:
    """
    Where the teacher is read from, checked before any work (the recipe asks first): a local folder,
    a cached Hub id, or the bundled all-MiniLM-L6-v2 for its Hub id; a folder without `config.json` or an
    uncached Hub id offline fails here, naming it.
    """
    path = str(name_or_path)
    if path == MINILM_HUB_ID and not os.path.isdir(path):
        path = resolve_minilm_path()
    require_local_or_cached(path, what="teacher model", saved_folder=True)
    return path


def load_teacher(
    name_or_path: str, *, device: torch.device | str | None = None
) -> tuple[SiameseModel, PreTrainedTokenizerBase]:
    """
    The teacher in eval mode on `device`, with its tokenizer: a saved Siamese checkpoint as it is, or
    a pretrained model as its authors configured it, as `hfsiamese train` starts from one (a
    sentence-embedding model such as all-MiniLM-L6-v2: its pooling, Dense layers, prompts and length, so
    it embeds as sentence-transformers does; any other `AutoModel`: mean pooling). The Hub id of
    all-MiniLM-L6-v2 resolves to the copy the `minilm` extra bundles when it is not a local folder.
    """
    path = teacher_path(name_or_path)
    if model_kind(config_values(path)) == BI_ENCODER:
        teacher = load_siamese_model(path)
        tokenizer = AutoTokenizer.from_pretrained(path)
    else:
        teacher, tokenizer = build_model_and_tokenizer(
            ModelArguments(encoder_type="transformer", model_name_or_path=path), None
        )
    teacher.check_tokenizer(tokenizer)
    return teacher.to(device or "cpu").eval(), tokenizer


@dataclass(frozen=True)
class TeacherEmbeddings:
    """The teacher's L2-normalised embedding of each distinct text: `vectors[i]` is that of `texts[i]`."""

    texts: pd.Index
    vectors: torch.Tensor

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.vectors) or self.vectors.dim() != 2:
            raise ValueError(f"{len(self.texts)} texts but teacher vectors of shape {tuple(self.vectors.shape)}")
        if not self.texts.is_unique:
            raise ValueError("the teacher's texts must be distinct (one vector per text)")

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def rows_of(self, texts: Iterable[str]) -> np.ndarray:
        """The row of each text in `vectors`; a text the teacher never embedded is an error naming it."""
        rows = self.texts.get_indexer(pd.Index(list(texts), dtype=object))
        missing = np.flatnonzero(rows < 0)
        if missing.size:
            raise KeyError(f"{missing.size} texts have no teacher embedding, e.g. {list(texts)[missing[0]]!r}")
        return rows.astype(np.int64)


def encode_teacher_targets(
    teacher: SiameseModel,
    tokenizer: PreTrainedTokenizerBase,
    texts: Iterable[str],
    *,
    batch_size: int = 256,
    max_length: int | None = None,
) -> TeacherEmbeddings:
    """Embed each distinct text of `texts` once with the teacher (on its device), kept on CPU in float32."""
    distinct = pd.Index(pd.unique(pd.Series(list(texts), dtype=object)), dtype=object)
    logger.info("the teacher embeds %d distinct questions", len(distinct))
    vectors = teacher.encode(list(distinct), tokenizer, batch_size=batch_size, max_length=max_length)
    return TeacherEmbeddings(distinct, vectors.float().contiguous())
