"""
hfsiamese models in the MTEB benchmark (the `mteb` package): `to_mteb(model)` wraps a bi-encoder in `MtebBiEncoder`
(MTEB's `EncoderProtocol`: pair classification, retrieval, reranking, STS, ...) or a cross-encoder in
`MtebCrossEncoder` (its `CrossEncoderProtocol`: reranking tasks, and retrieval tasks turned into reranking), so
that `mteb.evaluate(to_mteb(model), mteb.get_tasks([...]))` scores the model as MTEB scores every other.

The adapters run the model's own `encode` and `score_pairs` (its batching by length, prompts, truncation warning,
precision policy and L2 normalisation) and fill the metadata MTEB records from the checkpoint
(`mteb_metadata`). MTEB is an optional extra: this module imports without it, and building an adapter without it
is a one-line ImportError naming the extra.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from hfsiamese.integrations.mteb_metadata import model_meta
from hfsiamese.models.siamese.inference import check_truncate_dim
from hfsiamese.utils.extras import install_hint


@contextlib.contextmanager
def generators_kept() -> Iterator[None]:
    """The global random generators as they were before the block: importing mteb and making a task seed them all."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    cuda_devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=cuda_devices):
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


def require_mteb() -> Any:
    """The `mteb` module, or the one-line error saying how to install it (importing it leaves the caller's seeds)."""
    try:
        with generators_kept():
            import mteb
    except ImportError as err:
        raise ImportError(f"running MTEB benchmarks needs the mteb package: {install_hint('mteb')}") from err
    return mteb


def _texts(inputs: Any, side: str) -> list[str]:
    """Every text of one of MTEB's dataloaders, in order (its batches hold them under "text")."""
    texts: list[str] = []
    for batch in inputs:
        if "text" not in batch:
            raise ValueError(f"the {side} hold {sorted(batch)}, no text: hfsiamese models read text only")
        texts.extend(batch["text"])
    return texts


def _check_precision(precision: str | None) -> None:
    """MTEB's `precision` asks sentence-transformers for quantised embeddings; hfsiamese returns float32 only."""
    if precision not in (None, "float32"):
        raise ValueError(
            f"precision={precision!r}: hfsiamese models return float32 embeddings; leave precision out of encode_kwargs"
        )


def _is_bi_encoder(model: Any) -> bool:
    from hfsiamese.models.siamese.inference import SiameseInferenceMixin

    return isinstance(model, SiameseInferenceMixin)  # SiameseModel and its ONNX export


def _is_cross_encoder(model: Any) -> bool:
    from hfsiamese.cross_encoder.model import CrossEncoder

    return isinstance(model, CrossEncoder)


def _loaded(model: Any, revision: str | None) -> Any:
    """A model given as a folder or Hub id (as MTEB's own loaders give it), loaded with `load_model`; an instance as it is."""
    if not isinstance(model, str | os.PathLike):
        return model
    from hfsiamese.loading import load_model

    return load_model(model, **({"revision": revision} if revision else {}))


def _prepared(model: Any, revision: str | None, device: str | None, batch_size: int | None, family: str) -> Any:
    """The model an adapter wraps: loaded when named, refused when not of `family`, moved to `device` if one is given."""
    require_mteb()
    model = _loaded(model, revision)
    belongs, other = (
        (_is_bi_encoder, "MtebCrossEncoder") if family == "bi-encoder" else (_is_cross_encoder, "MtebBiEncoder")
    )
    if not belongs(model):
        raise TypeError(f"{type(model).__name__} is no hfsiamese {family} (the other family goes in {other})")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
    if device is not None:
        model.to(device)
    return model


def _run_options(batch_size: int | None, mteb_options: dict[str, Any]) -> dict[str, Any]:
    """What a call of the model takes from MTEB's `encode_kwargs`: the adapter's batch size first, then MTEB's."""
    _check_precision(mteb_options.get("precision"))
    return {
        "batch_size": batch_size or mteb_options.get("batch_size", 64),
        "show_progress_bar": bool(mteb_options.get("show_progress_bar", False)),
    }


class MtebBiEncoder:
    """
    A hfsiamese bi-encoder (`SiameseModel`, or its ONNX export) as an MTEB encoder: `encode` embeds the texts of
    MTEB's dataloader with `model.encode`, `similarity` and `similarity_pairwise` compare them by cosine (as the
    model scores pairs and searches).

    `model`: the model, or its folder or Hub id (`revision` and `device` then load it as MTEB's loaders do).
    `batch_size`: texts per forward, else the `batch_size` of MTEB's `encode_kwargs` (32 unless set there).
    `max_length`, `dtype`, `truncate_dim`: as `model.encode` takes them. `name`, `revision`: what MTEB files the
    results under (default: the model's folder or Hub id, and a fingerprint of its weights and config).

    Prompts: a model with named prompts (`config.prompts`) gets the one MTEB's rules pick for the task (its name,
    its type, or `"query"`/`"document"`); otherwise its default prompt, as in training.
    """

    def __init__(
        self,
        model: Any,
        revision: str | None = None,
        device: str | None = None,
        *,
        tokenizer: Any | None = None,
        batch_size: int | None = None,
        max_length: int | None = None,
        dtype: torch.dtype | str | None = None,
        truncate_dim: int | None = None,
        name: str | None = None,
    ) -> None:
        self.model = model = _prepared(model, revision, device, batch_size, "bi-encoder")
        self.tokenizer = model._resolve_tokenizer(tokenizer)  # a model saved without one: said so now, not mid-run
        self.batch_size = batch_size
        self.encode_options = {"max_length": max_length, "dtype": dtype, "truncate_dim": truncate_dim}
        full_dim = model.config.sentence_embedding_dim
        if truncate_dim is not None:
            check_truncate_dim(truncate_dim, full_dim)  # refused now, not at the first task
        self.mteb_model_meta = model_meta(
            loader=type(self),
            module=model,
            config=model.config,
            name_or_path=str(getattr(model, "name_or_path", "") or ""),
            name=name,
            revision=revision,
            embed_dim=truncate_dim or full_dim,
            max_tokens=max_length or model.default_max_length(self.tokenizer),
            cross_encoder=False,
        )

    def _prompt_name(self, task_metadata: Any, prompt_type: Any) -> str | None:
        """The model's prompt MTEB's rules pick for this task and side, None for the model's default."""
        from mteb.models.abs_encoder import get_prompt_name

        prompts = getattr(self.model.config, "prompts", None)
        return get_prompt_name(prompts, task_metadata, prompt_type) if prompts else None

    def encode(
        self,
        inputs: Any,
        *,
        task_metadata: Any,
        hf_split: str,
        hf_subset: str,
        prompt_type: Any | None = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """The L2-normalised float32 embeddings of the dataloader's texts, in its order (MTEB's `encode`)."""
        embeddings = self.model.encode(
            _texts(inputs, "inputs"),
            self.tokenizer,
            prompt_name=self._prompt_name(task_metadata, prompt_type),
            **_run_options(self.batch_size, kwargs),
            **self.encode_options,
        )
        return embeddings.numpy()

    def similarity(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:
        """Cosine similarity of every row of `embeddings1` with every row of `embeddings2`."""
        from mteb.similarity_functions import cos_sim

        return cos_sim(embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> torch.Tensor:
        """Cosine similarity of each row of `embeddings1` with the same row of `embeddings2`."""
        from mteb.similarity_functions import pairwise_cos_sim

        return pairwise_cos_sim(embeddings1, embeddings2)


class MtebCrossEncoder:
    """
    A hfsiamese `CrossEncoder` as an MTEB cross-encoder: `predict` scores each (query, document) pair with
    `model.score_pairs` (sigmoid of its logit; with `pair_order="both"` of both orders' mean). MTEB runs
    cross-encoders on reranking tasks, and on a retrieval task turned into one (`task.convert_to_reranking`).

    `model`: the model, or its folder or Hub id (`revision` and `device` then load it). `batch_size`: pairs per
    forward, else MTEB's `encode_kwargs` batch size. `max_length`, `dtype`: as `score_pairs` takes them. `name`,
    `revision`: what MTEB files the results under (default: the model's folder or Hub id, and a fingerprint).
    """

    def __init__(
        self,
        model: Any,
        revision: str | None = None,
        device: str | None = None,
        *,
        batch_size: int | None = None,
        max_length: int | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        self.model = model = _prepared(model, revision, device, batch_size, "cross-encoder")
        self.batch_size = batch_size
        self.score_options = {"max_length": max_length, "dtype": dtype}
        self.mteb_model_meta = model_meta(
            loader=type(self),
            module=model.model,
            config=model.config,
            name_or_path=model.name_or_path,
            name=name,
            revision=revision,
            embed_dim=None,
            max_tokens=max_length or model.default_max_length(),
            cross_encoder=True,
        )

    def predict(
        self,
        inputs1: Any,
        inputs2: Any,
        *,
        task_metadata: Any,
        hf_split: str,
        hf_subset: str,
        prompt_type: Any | None = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """The score of each pair (`inputs1[i]`, `inputs2[i]`), in [0, 1] (MTEB's `predict`)."""
        options = _run_options(self.batch_size, kwargs)
        queries, documents = _texts(inputs1, "queries"), _texts(inputs2, "documents")
        if len(queries) != len(documents):
            raise ValueError(f"{len(queries)} queries but {len(documents)} documents: MTEB pairs them one to one")
        scores = self.model.score_pairs(queries, documents, **options, **self.score_options)
        return scores.numpy()


def to_mteb(model: Any, **options: Any) -> MtebBiEncoder | MtebCrossEncoder:
    """
    The MTEB adapter for `model` (a bi-encoder or a cross-encoder, or a folder or Hub id holding either, loaded with
    `load_model`): `MtebBiEncoder` or `MtebCrossEncoder`, built with `options`.

    Examples:

    ```python
    >>> import mteb
    >>> from hfsiamese import to_mteb
    >>> tasks = mteb.get_tasks(["SprintDuplicateQuestions", "AskUbuntuDupQuestions"])
    >>> results = mteb.evaluate(to_mteb("outputs/minilm_qqp"), tasks)
    ```
    """
    require_mteb()
    model = _loaded(model, options.get("revision"))
    if _is_cross_encoder(model):
        return MtebCrossEncoder(model, **options)
    if _is_bi_encoder(model):
        return MtebBiEncoder(model, **options)
    raise TypeError(f"{type(model).__name__} is neither a hfsiamese bi-encoder nor a cross-encoder")


__all__ = ["MtebBiEncoder", "MtebCrossEncoder", "generators_kept", "require_mteb", "to_mteb"]
