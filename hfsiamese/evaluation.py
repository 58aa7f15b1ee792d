"""
Scoring data with a trained model: pair decisions (what `hfsiamese evaluate` prints) and
retrieval over duplicate groups (each question searching all the others for its duplicates).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch

from hfsiamese.backend_choice import BACKENDS as RUNTIMES, RUNTIME_HELP
from hfsiamese.data.question_fingerprints import FINGERPRINT_FILE, TrainingOverlap, read_fingerprint, training_overlap
from hfsiamese.data.question_identity import question_groups, question_texts
from hfsiamese.metrics import pair_classification_metrics, retrieval_metrics
from hfsiamese.metrics.ranking import check_ks
from hfsiamese.metrics.reliability import calibration_metrics
from hfsiamese.models.siamese.scoring import check_decision_threshold, pair_probability
from hfsiamese.search import topk_cosine

__all__ = [
    "EvaluationArguments",
    "training_overlap_of",
    "calibrated_probabilities",
    "decision_threshold",
    "evaluate_pairs",
    "evaluate_retrieval",
    "question_corpus",
    "retrieval_of_embeddings",
    "score_labelled_pairs",
]

PAIR_COLUMNS = ("question1", "question2", "label")


@dataclass
class EvaluationArguments:
    """Which trained model to score, on which labelled pairs, and what to write."""

    model_name_or_path: str = field(metadata={"help": "Folder (or Hub id) of a trained Siamese model."})
    test_file: str = field(metadata={"help": "Labelled pair file (any format hfsiamese.data.load_pairs reads)."})
    backend: str | None = field(
        default=None,
        metadata={
            "help": RUNTIME_HELP,
            "choices": RUNTIMES,
        },
    )
    data_format: str | None = field(default=None, metadata={"help": "Force the file format."})
    question1_column: str | None = field(default=None, metadata={"help": "Column of the first texts."})
    question2_column: str | None = field(default=None, metadata={"help": "Column of the second texts."})
    label_column: str | None = field(default=None, metadata={"help": "Column of the 0/1 labels."})
    threshold: float | None = field(default=None, metadata={"help": "Decision threshold (default: the model's)."})
    batch_size: int = field(default=256, metadata={"help": "Texts per encoding batch."})
    max_length: int | None = field(default=None, metadata={"help": "Tokens kept per text (default: tokenizer's)."})
    truncate_dim: int | None = field(
        default=None,
        metadata={
            "help": "Score the embeddings' first N dimensions, re-normalised (a Matryoshka-trained model at a smaller "
            "size); the model's threshold was calibrated at full size: give --threshold for the decision figures."
        },
    )
    output_file: str | None = field(
        default=None,
        metadata={
            "help": "Also write the JSON object to this file; refused if it exists, unless --overwrite_output_file."
        },
    )
    overwrite_output_file: bool = field(default=False, metadata={"help": "Replace an existing --output_file."})
    retrieval: bool = field(
        default=False,
        metadata={
            "help": "Also evaluate duplicate retrieval: every question of the file searches all the others for the "
            "other members of its duplicate group (questions without duplicates are searched, not searching)."
        },
    )
    retrieval_k: list[int] = field(
        default_factory=lambda: [1, 5, 10], metadata={"help": "Cut-offs of the retrieval metrics."}
    )
    report_dir: str | None = field(
        default=None,
        metadata={"help": "Write an evaluation report here: metrics.json, score plots (PNG) and report.md."},
    )
    overwrite_report_dir: bool = field(default=False, metadata={"help": "Allow writing into a non-empty report_dir."})
    calibration_file: str | None = field(
        default=None,
        metadata={
            "help": "Labelled pairs of the test file's domain (not the test pairs): calibrate the model on them first "
            "(see hfsiamese calibrate), then score the test file with that decision; read with the same column flags."
        },
    )
    calibration_method: str = field(
        default="threshold", metadata={"help": "With calibration_file: 'threshold', 'platt' or 'isotonic'."}
    )
    calibrate_for: str = field(
        default="accuracy",
        metadata={"help": "With calibration_file: the threshold maximises 'accuracy' or 'f1', or reaches 'precision'."},
    )
    target_precision: float | None = field(
        default=None, metadata={"help": "With calibrate_for precision: the precision to reach (e.g. 0.9)."}
    )

    def __post_init__(self) -> None:
        # Said with the flags: the encoder refused them once the model was loaded and the pairs read.
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {self.batch_size}")
        for name in ("max_length", "truncate_dim"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be a positive integer (or unset), got {value}")
        if any(k < 1 for k in self.retrieval_k):
            raise ValueError(f"retrieval_k cut-offs must be positive integers, got {self.retrieval_k}")


def training_overlap_of(model_name_or_path: str | os.PathLike, pairs: datasets.Dataset) -> TrainingOverlap | None:
    """
    How many of `pairs` share a question with the pairs that trained the model, read from the fingerprint
    its training run saved (`training_questions.safetensors`, a local folder or a cached Hub download);
    None when the model has none (trained elsewhere, or before fingerprints were saved).
    """
    folder = Path(model_name_or_path)
    if not folder.is_dir():
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(str(model_name_or_path), FINGERPRINT_FILE)
        if not isinstance(cached, str):
            return None
        folder = Path(cached).parent
    fingerprint = read_fingerprint(folder)
    return None if fingerprint is None else training_overlap(pairs, fingerprint)


def score_labelled_pairs(
    model: Any,
    dataset: datasets.Dataset,
    tokenizer: Any | None = None,
    *,
    batch_size: int = 256,
    max_length: int | None = None,
    show_progress_bar: bool = False,
    truncate_dim: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """
    The model's score of every pair of `dataset` (`question1`, `question2`, `label`), and the labels;
    with `truncate_dim`, the cosine of the embeddings' first that many dimensions.
    """
    missing = [c for c in PAIR_COLUMNS if c not in dataset.column_names]
    if missing:
        raise ValueError(
            f"pairs lack columns {missing} (have {dataset.column_names}); load them with hfsiamese.data.load_pairs"
        )
    encode = dict(batch_size=batch_size, max_length=max_length, show_progress_bar=show_progress_bar)
    if truncate_dim is not None:  # a classification head's model refuses it in score_pairs
        encode["truncate_dim"] = truncate_dim
    scores = model.score_pairs(list(dataset["question1"]), list(dataset["question2"]), tokenizer, **encode)
    return scores.double().numpy(), np.asarray(dataset["label"], dtype=np.int64)


def calibrated_probabilities(model: Any, scores: np.ndarray) -> np.ndarray | None:
    """The calibrated P(duplicate) of scores from `score_labelled_pairs`, or None when the model stores no map."""
    probabilities = pair_probability(model.config, torch.from_numpy(np.asarray(scores, dtype=np.float64)))
    return None if probabilities is None else probabilities.double().numpy()


def decision_threshold(model: Any, threshold: float | None = None) -> float | None:
    """
    `threshold` if given, else the model's calibrated `config.threshold`. `None` (with a warning)
    when the model has none: the metrics then calibrate on the very pairs they score, which is
    optimistic and must not be reported as a test result.
    """
    if threshold is not None:
        return check_decision_threshold(model.config, threshold)
    threshold = model.config.threshold
    if threshold is None:
        warnings.warn(
            "the model has no calibrated threshold (config.threshold): calibrating on the evaluated pairs "
            "themselves, so accuracy/F1 are optimistic",
            UserWarning,
            stacklevel=3,
        )
    return threshold


def evaluate_pairs(
    model: Any,
    dataset: datasets.Dataset,
    tokenizer: Any | None = None,
    *,
    threshold: float | None = None,
    batch_size: int = 256,
    max_length: int | None = None,
    show_progress_bar: bool = False,
) -> dict[str, float]:
    """
    Score every pair of `dataset` (`question1`, `question2`, `label`) and compute accuracy,
    precision, recall and F1 at `threshold` (default: the model's calibrated `config.threshold`),
    average precision and ROC-AUC; for a model calibrated to probabilities also `ece` and `brier`.

    A model without a calibrated threshold gets one fitted on these very pairs, with a warning:
    that figure is optimistic and must not be reported as a test result.
    """
    scores, labels = score_labelled_pairs(
        model, dataset, tokenizer, batch_size=batch_size, max_length=max_length, show_progress_bar=show_progress_bar
    )
    threshold = decision_threshold(model, threshold)
    metrics = pair_classification_metrics(scores, labels, threshold=threshold)
    probabilities = calibrated_probabilities(model, scores)
    if probabilities is not None:
        metrics.update(calibration_metrics(probabilities, labels))
    return metrics


def question_corpus(pairs: datasets.Dataset, *, normalize: bool = True) -> tuple[list[str], np.ndarray]:
    """
    The distinct questions of a pair data set and the duplicate group of each.

    Questions are identified as everywhere in the library (`hfsiamese.data.question_ids`: ids when
    the pairs have `qid1`/`qid2`, else normalised text); each is represented by the text of its
    first occurrence. Groups are the connected components of the duplicate (label-1) pairs.
    """
    _, _, group_of, first_position = question_groups(pairs, normalize=normalize)
    return question_texts(pairs, first_position).to_pylist(), group_of


def evaluate_retrieval(
    model: Any,
    questions: Sequence[str],
    group_ids: Sequence[int] | np.ndarray,
    tokenizer: Any | None = None,
    *,
    k: int | Iterable[int] = (1, 5, 10),
    batch_size: int = 256,
    max_length: int | None = None,
    show_progress_bar: bool = False,
    query_chunk_size: int = 1024,
    corpus_chunk_size: int = 65536,
    truncate_dim: int | None = None,
) -> dict[str, float]:
    """
    Duplicate retrieval: every question searches all the others; its duplicates are the other
    questions of its group.

    Questions alone in their group have nothing to find, so they are no queries, but they stay in
    the corpus as distractors. The search is exact and chunked (`hfsiamese.search.topk_cosine`),
    so memory stays bounded however many questions there are. Returns `mrr@k`, `recall@k` and
    `ndcg@k` for every k, `num_queries` and `corpus_size`.
    """
    ks = check_ks(k)
    queries, relevant = _retrieval_queries(group_ids, len(questions))  # checked before any encoding
    encode = dict(batch_size=batch_size, max_length=max_length, show_progress_bar=show_progress_bar)
    embeddings = model.encode(list(questions), tokenizer, truncate_dim=truncate_dim, **encode)
    return _retrieve(embeddings, queries, relevant, ks, query_chunk_size, corpus_chunk_size)


def retrieval_of_embeddings(
    embeddings: torch.Tensor,
    group_ids: Sequence[int] | np.ndarray,
    *,
    k: int | Iterable[int] = (1, 5, 10),
    query_chunk_size: int = 1024,
    corpus_chunk_size: int = 65536,
) -> dict[str, float]:
    """
    `evaluate_retrieval` on questions already embedded (`(num_questions, dim)`, L2-normalised rows):
    for embeddings made otherwise than by `model.encode`, e.g. cut to their first dimensions.
    """
    ks = check_ks(k)
    queries, relevant = _retrieval_queries(group_ids, embeddings.shape[0])
    return _retrieve(embeddings, queries, relevant, ks, query_chunk_size, corpus_chunk_size)


def _retrieval_queries(group_ids: Sequence[int] | np.ndarray, num_questions: int) -> tuple[np.ndarray, list[list[int]]]:
    """The questions that have duplicates to find, and the other members of each one's group."""
    group_ids = np.asarray(group_ids)
    if group_ids.ndim != 1 or len(group_ids) != num_questions:
        raise ValueError(f"got {num_questions} questions but group ids of shape {group_ids.shape}")
    _, group_index, group_sizes = np.unique(group_ids, return_inverse=True, return_counts=True)
    queries = np.flatnonzero(group_sizes[group_index] > 1)
    if queries.size == 0:
        raise ValueError(
            f"none of the {num_questions} questions shares a duplicate group with another: nothing to retrieve"
        )
    # Members of every group, as slices of one array sorted by group.
    by_group = np.argsort(group_index, kind="stable")
    group_starts = np.concatenate([[0], np.cumsum(group_sizes)])
    relevant = []
    for query in queries:
        group = group_index[query]
        members = by_group[group_starts[group] : group_starts[group + 1]]
        relevant.append(members[members != query].tolist())
    return queries, relevant


def _retrieve(
    embeddings: torch.Tensor,
    queries: np.ndarray,
    relevant: list[list[int]],
    ks: tuple[int, ...],
    query_chunk_size: int,
    corpus_chunk_size: int,
) -> dict[str, float]:
    query_rows = torch.from_numpy(queries)
    _, retrieved = topk_cosine(
        embeddings[query_rows],
        embeddings,
        max(ks),
        query_chunk_size=query_chunk_size,
        corpus_chunk_size=corpus_chunk_size,
        exclude_indices=query_rows,
    )
    metrics = retrieval_metrics(retrieved.tolist(), relevant, k=ks)
    return {**metrics, "num_queries": int(queries.size), "corpus_size": int(embeddings.shape[0])}
