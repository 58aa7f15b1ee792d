"""The teacher and its targets: every distinct training question embedded once, kept as a text → vector table."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

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

__all__ = ["TEACHER_SHARD_SIZE", "TEACHER_VECTORS_FILE", "TeacherEmbeddings", "encode_teacher_targets", "load_teacher"]

#: Texts per shard of the teacher's embeddings: a multiple of every usual batch size, so that a sharded encoding runs
#: the batches of an encoding in one go and gives the same vectors.
TEACHER_SHARD_SIZE = 8192
#: The shards gathered into one float32 `(texts, dim)` array in the shards folder, memory-mapped by training.
TEACHER_VECTORS_FILE = "teacher_vectors.npy"


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
    shards_dir: str | os.PathLike | None = None,
    shard_size: int = TEACHER_SHARD_SIZE,
) -> TeacherEmbeddings:
    """
    Embed each distinct text of `texts` once with the teacher (on its device), kept on CPU in float32.

    With `shards_dir`, the embeddings are written there in resumable shards of `shard_size` texts
    (`hfsiamese.search.shards.encode_to_shards`, in every process of `accelerate launch`), then gathered into one
    `.npy` file there, which the returned vectors map rather than hold: a run killed while the teacher embeds is
    started again with the same folder and encodes only the shards it lacks, and the result equals an uninterrupted
    run's. A folder holding another teacher's or other texts' shards is refused, naming the difference.
    """
    distinct = pd.Index(pd.unique(pd.Series(list(texts), dtype=object)), dtype=object)
    logger.info("the teacher embeds %d distinct questions", len(distinct))
    if shards_dir is None:
        vectors = teacher.encode(list(distinct), tokenizer, batch_size=batch_size, max_length=max_length)
        return TeacherEmbeddings(distinct, vectors.float().contiguous())
    return TeacherEmbeddings(distinct, _sharded_vectors(teacher, tokenizer, list(distinct), Path(shards_dir), batch_size,
                                                        max_length, shard_size))  # fmt: skip


def _sharded_vectors(
    teacher: SiameseModel,
    tokenizer: PreTrainedTokenizerBase,
    texts: list[str],
    shards_dir: Path,
    batch_size: int,
    max_length: int | None,
    shard_size: int,
) -> torch.Tensor:
    """The teacher's vectors of `texts` through resumable shards in `shards_dir`, memory-mapped from one `.npy`."""
    from hfsiamese.search.shards import encode_to_shards

    shards = encode_to_shards(texts, shards_dir, teacher, tokenizer, shard_size=shard_size, batch_size=batch_size,
                              max_length=max_length, show_progress_bar=True)  # fmt: skip
    from accelerate import PartialState

    state = PartialState()  # the one `encode_to_shards` joined
    gathered = shards_dir / TEACHER_VECTORS_FILE
    if state.is_main_process:
        shards.write_npy(gathered)  # rewritten from the shards each time: never a stale file of an earlier corpus
    state.wait_for_everyone()
    # Copy-on-write mapping: the collator indexes it like a tensor, the file is never written, pages are read on use.
    return torch.from_numpy(np.load(gathered, mmap_mode="c"))
