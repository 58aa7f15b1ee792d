"""Matryoshka training: any loss applied to the embeddings' leading dimensions too, so that they can be cut."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import torch
import torch.nn.functional as F

from hfsiamese.losses.base import SiameseLoss, SiameseLossOutput, require_non_negative
from hfsiamese.losses.embedding_losses import EMBEDDING_LOSSES, RENAMED_LOSSES, embedding_loss_name, get_embedding_loss

NAME = "matryoshka"
DEFAULT_INNER_LOSS = "hard_negative_triplet"
# The options of the wrapper itself; every other option goes to the inner loss.
OWN_OPTIONS = ("matryoshka_loss", "matryoshka_dims", "matryoshka_weights")
# The default dimensions: the model's size and its halves, down to an eighth of it.
DEFAULT_FRACTIONS = (1, 2, 4, 8)

Output = TypeVar("Output", bound=Any)  # a SiameseModelOutput, or a subclass of it


class MatryoshkaLoss(SiameseLoss):
    r"""
    Any of the package's losses applied to the embeddings cut to each of several sizes as well, so that
    their first ``d`` numbers are an embedding of their own: an index can then keep 128 of MiniLM's 384
    numbers per question (a third of the memory and of the search cost) for little loss of quality.
    Registered as ``matryoshka``.

    With the inner loss ``L`` (any registered loss on embeddings, with its own options), dimensions
    ``d_1, …, d_K``, weights ``w_k`` (default 1) and the cut ``t_d(x) = x_{1:d} / ‖x_{1:d}‖₂`` (the first
    ``d`` numbers, L2-normalised again, so that dot products are cosines at that size):

    .. math::
        L_{\text{matryoshka}}(a, b, n) = \sum_{k=1}^{K} w_k \, L\big(t_{d_k}(a),\, t_{d_k}(b),\, t_{d_k}(n)\big)

    A dimension equal to the embedding size uses the embeddings as they are (``t_d`` is then the
    identity). Labels and group ids go to every term unchanged; a teacher's embeddings
    (``embedding_distillation``) are targets and are not cut. Unset ``matryoshka_dims`` trains the
    model's size and its halves down to an eighth (384 → 384, 192, 96, 48), found at the first call.
    The inner loss's declarations are this loss's (labels, negatives, in-batch negatives), so the
    recipes prepare the same data for it. What cannot be wrapped: a loss on the classification
    head's logits (the head takes full-size embeddings and cannot be cut) and a Matryoshka loss.

    Each term is the inner loss as it is, so what the inner loss does across processes (gathering
    the other processes' candidates: `distributed`) holds term by term, and for the sum; under
    GradCache the cut is part of the loss, and the cached embedding gradients include every term.
    Statistics (`compute`): ``dim{d}`` (term ``d``, unweighted) and the inner loss's own statistics
    of each term as ``dim{d}_{name}``. Evaluation with `SiameseTrainer` reports the validation metrics
    at each dimension below the full one too (``eval_dim{d}_average_precision``, ...).

    Inputs:
        As the inner loss: embeddings_a, embeddings_b ``(B, D)`` L2-normalised with ``D`` at least
        every ``d_k``; labels, group_ids, negatives ``(B, D)`` as the inner loss takes them.

    Reference:
        Kusupati et al. (2022), "Matryoshka Representation Learning", arXiv:2205.13147 (the nested
        sum of one loss over the leading dimensions); sentence-transformers' ``MatryoshkaLoss``.

    Examples:
        >>> loss_fn = MatryoshkaLoss("multiple_negatives_ranking", matryoshka_dims=[8, 4, 2], temperature=0.1)
        >>> a = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
        >>> p = torch.nn.functional.normalize(a + 0.1 * torch.randn(4, 8), dim=-1)
        >>> output = loss_fn.compute(a, p, group_ids=torch.arange(4))
        >>> sorted(output.stats)
        ['dim2', 'dim4', 'dim8']
    """

    def __init__(
        self,
        matryoshka_loss: str | SiameseLoss = DEFAULT_INNER_LOSS,
        matryoshka_dims: Sequence[int] | None = None,
        matryoshka_weights: Sequence[float] | None = None,
        **inner_options: Any,
    ) -> None:
        """`inner_options` are the inner loss's own (margin, temperature, ...), given with its name."""
        super().__init__()
        self.inner_loss = _inner_loss(matryoshka_loss, inner_options)
        self.matryoshka_loss = loss_label(self.inner_loss, matryoshka_loss)
        self.matryoshka_dims = _checked_dims(matryoshka_dims)
        self.matryoshka_weights = _checked_weights(matryoshka_weights, self.matryoshka_dims)
        # The dimensions the default chose, once an embedding size has been seen (`resolve_dims`).
        self.resolved_dims: tuple[int, ...] | None = None if matryoshka_dims is None else tuple(self.matryoshka_dims)

    # The inner loss's declarations are this loss's: the data, the trainer and the model follow them.
    @property
    def requires_labels(self) -> bool:
        return self.inner_loss.requires_labels

    @property
    def uses_negatives(self) -> bool:
        return self.inner_loss.uses_negatives

    @property
    def requires_negatives(self) -> bool:
        return self.inner_loss.requires_negatives

    @property
    def uses_in_batch_negatives(self) -> bool:
        return self.inner_loss.uses_in_batch_negatives

    @property
    def requires_teacher(self) -> bool:
        return self.inner_loss.requires_teacher

    @property
    def negatives_optional_with(self) -> str | None:
        return self.inner_loss.negatives_optional_with

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """The wrapper's own options (the inner loss's are its own: `accepted_options`)."""
        return OWN_OPTIONS

    @classmethod
    def accepted_options(cls, options: Mapping[str, Any]) -> tuple[str, ...]:
        """The wrapper's options and those of the inner loss that `options` name (``matryoshka_loss``)."""
        inner = options.get("matryoshka_loss", DEFAULT_INNER_LOSS)
        inner = RENAMED_LOSSES.get(inner, inner) if isinstance(inner, str) else inner
        if inner == NAME or inner not in EMBEDDING_LOSSES:
            return OWN_OPTIONS  # the constructor names the problem
        return OWN_OPTIONS + EMBEDDING_LOSSES[inner].accepted_options(options)

    def get_config_dict(self) -> dict[str, Any]:
        """The wrapper's options (the dimensions the default chose, once known), then the inner loss's."""
        dims = self.matryoshka_dims if self.matryoshka_dims is not None else _list(self.resolved_dims)
        own = {
            "matryoshka_loss": self.matryoshka_loss,
            "matryoshka_dims": dims,
            "matryoshka_weights": self.matryoshka_weights,
        }
        return {**own, **self.inner_loss.get_config_dict()}

    def resolve_dims(self, embedding_size: int) -> tuple[int, ...]:
        """The dimensions trained for embeddings of `embedding_size`, checked against it: the given ones, or the default's."""
        if self.matryoshka_dims is None:
            dims = tuple(dict.fromkeys(embedding_size // f for f in DEFAULT_FRACTIONS if embedding_size // f >= 1))
        else:
            dims = tuple(self.matryoshka_dims)
            too_large = [d for d in dims if d > embedding_size]
            if too_large:
                raise ValueError(
                    f"matryoshka_dims {too_large} exceed the model's embedding size {embedding_size}: "
                    f"give dimensions of at most {embedding_size}"
                )
        self.resolved_dims = dims
        return dims

    def weights_for(self, dims: Sequence[int]) -> tuple[float, ...]:
        """The weight of each dimension's term (all 1 by default)."""
        return tuple(self.matryoshka_weights) if self.matryoshka_weights is not None else (1.0,) * len(dims)

    def _compute(
        self,
        embeddings_a,
        embeddings_b,
        *,
        labels,
        group_ids,
        negatives,
        logits,
        teacher_a=None,
        teacher_b=None,
    ) -> SiameseLossOutput:
        dims = self.resolve_dims(embeddings_a.shape[1])
        teacher = {"teacher_a": teacher_a, "teacher_b": teacher_b} if self.inner_loss.requires_teacher else {}
        total, stats = embeddings_a.new_zeros(()), {}
        for dim, weight in zip(dims, self.weights_for(dims), strict=True):
            term = self.inner_loss.compute(
                truncate_embeddings(embeddings_a, dim),
                truncate_embeddings(embeddings_b, dim),
                labels=labels,
                group_ids=group_ids,
                negatives=truncate_embeddings(negatives, dim) if negatives is not None else None,
                **teacher,
            )
            total = total + weight * term.loss
            stats[f"dim{dim}"] = term.loss.detach()
            stats.update({f"dim{dim}_{name}": value for name, value in term.stats.items()})
        return SiameseLossOutput(total, stats)


def truncate_embeddings(embeddings: torch.Tensor, dim: int) -> torch.Tensor:
    """The first `dim` numbers of each row, L2-normalised again (the rows unchanged at their full size)."""
    if dim == embeddings.shape[-1]:
        return embeddings
    return F.normalize(embeddings[..., :dim], p=2, dim=-1)


def truncate_output(output: Output, dim: int) -> Output:
    """
    A model output (`SiameseModelOutput`) as the model would give it at size `dim`: embeddings cut and
    L2-normalised again, the similarity their cosine, and no logits (the head takes full-size embeddings).
    """
    embeddings_a = truncate_embeddings(output.embeddings_a, dim)
    embeddings_b = truncate_embeddings(output.embeddings_b, dim)
    negatives = output.embeddings_n
    return type(output)(
        similarity=(embeddings_a * embeddings_b).sum(dim=-1),
        embeddings_a=embeddings_a,
        embeddings_b=embeddings_b,
        embeddings_n=truncate_embeddings(negatives, dim) if negatives is not None else None,
        logits=None,
    )


def loss_label(loss: SiameseLoss, given: str | SiameseLoss) -> str:
    """The inner loss's registered name (the name given, renamed or not), else its class name."""
    return embedding_loss_name(loss) or (given if isinstance(given, str) else type(loss).__name__)


def _inner_loss(given: str | SiameseLoss, options: dict[str, Any]) -> SiameseLoss:
    """The loss to wrap, built from its name and options (or given built), refused where it cannot be cut."""
    if isinstance(given, MatryoshkaLoss) or (isinstance(given, str) and RENAMED_LOSSES.get(given, given) == NAME):
        raise ValueError("matryoshka_loss cannot be a matryoshka loss itself: give all the dimensions to one")
    if isinstance(given, SiameseLoss):
        if options:
            raise ValueError(
                f"options {sorted(options)} go with a loss name, not with a built loss: build it with them"
            )
        inner = given
    elif isinstance(given, str):
        inner = get_embedding_loss(given, **options)
    else:
        raise TypeError(f"matryoshka_loss must be a loss name or a SiameseLoss, got {type(given).__name__}")
    if inner.uses_logits:
        raise ValueError(
            f"matryoshka_loss {loss_label(inner, given)!r} uses the classification head's logits, which take full-size "
            "embeddings and cannot be cut: wrap a loss on the embeddings"
        )
    return inner


def _checked_dims(dims: Sequence[int] | None) -> list[int] | None:
    if dims is None:
        return None
    dims = list(dims)
    if not dims:
        raise ValueError("matryoshka_dims is empty: give at least one dimension (or leave it unset for the default)")
    if any(isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 1 for d in dims):
        raise ValueError(f"matryoshka_dims must be positive integers, got {dims}")
    dims = [int(d) for d in dims]
    repeated = sorted({d for d in dims if dims.count(d) > 1})
    if repeated:
        raise ValueError(f"matryoshka_dims repeat {repeated}: give each dimension once")
    return dims


def _checked_weights(weights: Sequence[float] | None, dims: list[int] | None) -> list[float] | None:
    if weights is None:
        return None
    weights = [float(w) for w in weights]
    if dims is None:
        raise ValueError("matryoshka_weights need matryoshka_dims: one weight per dimension")
    if len(weights) != len(dims):
        raise ValueError(
            f"matryoshka_weights has {len(weights)} values for {len(dims)} matryoshka_dims: give one weight per dimension"
        )
    for weight in weights:
        require_non_negative("matryoshka_weights", weight)
    if not any(weights):
        raise ValueError("matryoshka_weights are all 0: the loss would learn nothing")
    return weights


def _list(values: Sequence[int] | None) -> list[int] | None:
    return None if values is None else list(values)


__all__ = ["MatryoshkaLoss", "truncate_embeddings", "truncate_output"]
