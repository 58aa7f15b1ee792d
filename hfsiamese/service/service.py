"""
What the service does with its index, as plain synchronous functions of Python values: search a batch of queries,
check a batch of pairs, add, delete, read groups. The HTTP layer (`app`) batches and serialises the calls (`batching`)
and turns the values into JSON (`schemas`); nothing here knows about HTTP, so it reads and tests on its own.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch

from hfsiamese.search.duplicate_index import DuplicateIndex
from hfsiamese.search.index_opening import open_index
from hfsiamese.search.rerank_options import check_rerank_k
from hfsiamese.search.reranking import resolve_cross_encoder
from hfsiamese.service.settings import ServeSettings

logger = logging.getLogger(__name__)


class UnknownId(LookupError):
    """A question or group the index does not hold (404)."""


class IdConflict(ValueError):
    """A new question's id the index holds already (409)."""


@dataclass(frozen=True)
class SearchItem:
    """One request's queries, its k and its metadata filter (checked by `DuplicateService.check_filter`): a unit of a
    search batch."""

    texts: list[str]
    k: int
    filter: dict[str, Any] | None = None


@dataclass(frozen=True)
class CheckItem:
    """One request's pairs: a unit of a pair-check batch."""

    firsts: list[str]
    seconds: list[str]


def verdict(decisions: list[bool | None]) -> str:
    """ "duplicate" when one decision is, "unknown" without a threshold to decide, else "new"."""
    if any(decisions):
        return "duplicate"
    return "unknown" if any(d is None for d in decisions) or not decisions else "new"


class ReplicaReads:
    """
    Which of a replica's fresh reads of its index to serve. A writer commits an add's rows before their groups, so a
    read between the two finds rows in no group (`DuplicateService.groups_lag`): searchable questions without their
    group. Such a read is held back (the last index served meanwhile) while it holds more ungrouped rows than the
    served index; once the same read has come back for `standing_s` seconds it is a standing difference (rows added
    without groups, or a writer stopped between its commits) and is served. Grouped questions with no row (a delete
    between its commits) have left their groups in the read already, so they hold nothing back.
    """

    def __init__(self, standing_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.standing_s, self._clock = standing_s, clock
        self._held: tuple[int, tuple[int, int]] | None = None
        self._held_since = 0.0

    def serves(self, fresh: DuplicateService, served: DuplicateService) -> bool:
        if fresh.groups_lag[0] <= served.groups_lag[0]:
            self._held = None
            return True
        read, now = (len(fresh.index), fresh.groups_lag), self._clock()
        if read != self._held:
            self._held, self._held_since = read, now
        return now - self._held_since >= self.standing_s


class DuplicateService:
    """
    The service's index, its model's tokenizer and the optional cross-encoder, and the operations on them.

    Not thread-safe (nor is the index): the app runs every call on one thread. An index kept in this process (exact
    or FAISS) is saved to `index_dir` after each write, so that an acknowledged write outlives a restart; a database
    index (LanceDB, Qdrant) has the rows and groups durably when its `add` / `delete` return.
    """

    def __init__(
        self,
        index: DuplicateIndex,
        index_dir: str | None = None,
        *,
        cross_encoder: Any | None = None,
        rerank_k: int | None = None,
        groups_lag: tuple[int, int] = (0, 0),
    ) -> None:
        self.index, self.index_dir = index, index_dir
        self.cross_encoder = resolve_cross_encoder(cross_encoder) if cross_encoder is not None else None
        self.rerank_k = rerank_k
        self._canonical_texts: dict[Any, str] = {}
        # A replica's: how far its index's stored groups were from its rows when read (`read_as_replica`).
        self.groups_lag = groups_lag

    @classmethod
    def open(cls, settings: ServeSettings) -> DuplicateService:
        """Load the index saved in `settings.index_dir` with its model (and group it when asked and not yet); a
        replica's index must keep its rows in a database, which the writer's commits reach."""
        runtime_options = settings.model_runtime_options()
        index = cast(
            DuplicateIndex,
            open_index(
                settings.model_name_or_path,
                settings.index_dir,
                None,
                backend=settings.backend,
                runtime_options=runtime_options,
            ),
        )
        if settings.replica and index.database_store is None:
            index.close()
            raise ValueError(
                f"a replica (--replica) needs an index whose rows are in a database (LanceDB or Qdrant); the one in "
                f"{settings.index_dir} keeps them in the folder: build it with --store lancedb"
            )
        lag = (0, 0)
        if settings.replica:  # its groups read now, as stored: a replica never writes, not even a repair
            lag = index.read_as_replica()
        elif settings.find_groups and index.groups is None and len(index):
            logger.info("grouping the %d questions of the index (--find_groups)", len(index))
            index.find_groups()
            if index.database_store is None:
                index.save(settings.index_dir, overwrite=True)
        cross_encoder = settings.cross_encoder
        if cross_encoder is not None:
            cross_encoder = resolve_cross_encoder(cross_encoder, runtime_options=runtime_options)
        return cls(index, settings.index_dir, cross_encoder=cross_encoder, rerank_k=settings.rerank_k, groups_lag=lag)

    def reopened(self) -> DuplicateService:
        """The same index opened anew from its database, over the same model and cross-encoder: what the writer has
        committed since, groups included and read now, as stored, with how far they are from the rows (`groups_lag`:
        a writer caught between an add's or a delete's two commits shows there). A replica's refresh; this one stays
        usable until closed."""
        if self.index_dir is None:
            raise ValueError("this service's index was not loaded from a folder: there is nothing to reopen")
        index = DuplicateIndex.load(self.index_dir, self.index.model, self.index.tokenizer)
        try:
            lag = index.read_as_replica()
        except Exception:
            index.close()
            raise
        return DuplicateService(
            index, self.index_dir, cross_encoder=self.cross_encoder, rerank_k=self.rerank_k, groups_lag=lag
        )

    # --- reading -------------------------------------------------------------------------------------------

    @property
    def pair_model(self) -> Any:
        """What decides a pair: the cross-encoder when there is one, else the Siamese model."""
        return self.cross_encoder if self.cross_encoder is not None else self.index.model

    def info(self) -> dict[str, Any]:
        groups = self.index.groups
        return {
            "size": len(self.index),
            "backend": self.index.store_name,
            "model": self.index.model_name_or_path,
            "threshold": self.index.threshold,
            "calibrated": self.index.calibrator is not None,
            "cross_encoder": getattr(self.cross_encoder, "name_or_path", None) if self.cross_encoder else None,
            "groups": None if groups is None else len(groups),
        }

    def search(self, items: list[SearchItem]) -> list[list[dict[str, Any]]]:
        """Each item's `{"query", "verdict", "matches"}` per query, each match with its probability and group where
        the index has them. The queries of one filter (or none) are searched in one call (one encoding) at their
        largest k and cut to each item's own; with a cross-encoder, whose rerank depth follows k, one call per k."""
        by_filter: dict[str, list[int]] = defaultdict(list)
        for position, item in enumerate(items):
            by_filter[json.dumps(item.filter, sort_keys=True)].append(position)
        answers: list[list[dict[str, Any]]] = [[] for _ in items]
        for positions in by_filter.values():
            by_k: dict[int, list[int]] = defaultdict(list)
            for position in positions:
                by_k[items[position].k].append(position)
            if self.cross_encoder is None and len(by_k) > 1:
                by_k = {max(by_k): positions}
            for k, same_k in by_k.items():
                self._search_together(items, same_k, k, answers)
        return answers

    def check_filter(self, filter: dict[str, Any] | None) -> None:
        """Refuse a request's search filter as the index would (`DuplicateIndex.check_filter`), before it joins a
        batch whose other requests it must not fail."""
        self.index.check_filter(filter)

    def _search_together(
        self, items: list[SearchItem], positions: list[int], k: int, answers: list[list[dict[str, Any]]]
    ) -> None:
        """The queries of `items[positions]` (one filter) searched in one call at `k`, each answer cut to its item's."""
        texts = [text for p in positions for text in items[p].texts]
        options: dict[str, Any] = {}
        if self.cross_encoder is not None:
            options = {"cross_encoder": self.cross_encoder, "rerank_k": check_rerank_k(self.rerank_k, k)}
        if items[positions[0]].filter is not None:
            options["filter"] = items[positions[0]].filter
        found = (
            cast(list[list[dict[str, Any]]], self.index.search(texts, k=k, **options))
            if len(self.index)
            else [[] for _ in texts]
        )
        results = iter(found)
        for p in positions:
            for query in items[p].texts:
                matches = self._described(next(results)[: items[p].k])
                decisions = [m.get("is_duplicate") for m in matches]
                answers[p].append({"query": query, "verdict": verdict(decisions), "matches": matches})

    def _described(self, matches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The matches with their calibrated probability (cosine calibration, without a cross-encoder) and group."""
        calibrator = self.index.calibrator if self.cross_encoder is None else None
        if calibrator is not None and matches:
            probabilities = calibrator.probability(torch.tensor([m["score"] for m in matches])).tolist()
            matches = [{**m, "probability": float(p)} for m, p in zip(matches, probabilities)]
        groups = self.index.groups
        if groups is None:
            return matches
        found = [groups.group_of(m["id"]) for m in matches]
        canonicals = [groups.canonical_of(g) for g in found if g is not None]
        texts = self.canonical_texts(canonicals)
        described = []
        for match, group in zip(matches, found):
            if group is not None:
                canonical = groups.canonical_of(group)
                match = {**match, "group": group, "canonical_id": canonical, "canonical_text": texts[canonical]}
            described.append(match)
        return described

    def canonical_texts(self, ids: list[Any]) -> dict[Any, str]:
        """The texts of canonical questions, read by id and kept (a write clears them)."""
        missing = [i for i in dict.fromkeys(ids) if i not in self._canonical_texts]
        if missing:
            self._canonical_texts.update(zip(missing, self.index.rows_by_id(missing)[0]))
        return {i: self._canonical_texts[i] for i in ids}

    def check(self, items: list[CheckItem]) -> list[list[dict[str, Any]]]:
        """Each item's `{"score", "probability", "is_duplicate", "verdict"}` per pair, every pair in one call."""
        firsts = [text for item in items for text in item.firsts]
        seconds = [text for item in items for text in item.seconds]
        model = self.pair_model
        threshold = getattr(model.config, "threshold", None)
        options: dict[str, Any] = {} if threshold is not None else {"threshold": 0.0}  # scores; no verdict
        if self.cross_encoder is None:
            options["tokenizer"] = self.index.tokenizer
        predicted = model.predict(firsts, seconds, **options)
        scores = predicted["scores"].tolist()
        decided = predicted["is_duplicate"].tolist()
        probability = predicted["probability"].tolist() if "probability" in predicted else [None] * len(scores)
        rows = []
        for score, is_duplicate, p in zip(scores, decided, probability):
            decision = bool(is_duplicate) if threshold is not None else None
            rows.append(
                {"score": float(score), "probability": p, "is_duplicate": decision, "verdict": verdict([decision])}
            )
        answers, start = [], 0
        for item in items:
            answers.append(rows[start : start + len(item.firsts)])
            start += len(item.firsts)
        return answers

    def id_of(self, raw: str) -> int | str:
        """An id read from a URL as the index's kind of id (an integer where the index's ids are)."""
        if self.index.id_type == "int":
            try:
                return int(raw)
            except ValueError:
                raise UnknownId(f"no question has the id {raw!r}: this index's ids are integers") from None
        return raw

    def group(self, group: int, *, with_members: bool = True) -> dict[str, Any]:
        """A group by its number: its canonical question and members (each with its cosine to the canonical)."""
        groups = self._groups()
        if group not in groups.groups():
            raise UnknownId(f"no group {group} (the index has {len(groups)} groups)")
        canonical = groups.canonical_of(group)
        members = groups.members(group)
        answer: dict[str, Any] = {
            "group": group,
            "canonical_id": canonical,
            "canonical_text": self.canonical_texts([canonical])[canonical],
            "size": len(members),
        }
        if with_members:
            texts = self.index.rows_by_id(members)[0]
            answer["members"] = [{"id": m, "text": t, "score": groups.score_of(m)} for m, t in zip(members, texts)]
        return answer

    def group_of(self, question: int | str) -> dict[str, Any]:
        """The group of one question."""
        group = self._groups().group_of(question)
        if group is None:
            raise UnknownId(f"no question with the id {question!r} is in a group")
        return self.group(group)

    def largest_groups(self, n: int) -> dict[str, Any]:
        """The `n` largest groups (of two questions or more), without their members."""
        groups = self._groups()
        return {
            "groups": [self.group(group, with_members=False) for group, _, _ in groups.largest(n)],
            "num_groups": len(groups),
        }

    def _groups(self) -> Any:
        groups = self.index.groups
        if groups is None:
            raise UnknownId(
                "this index has no duplicate groups: run `hfsiamese groups` on it, or serve with --find_groups"
            )
        return groups

    # --- writing (one at a time: `batching.SerialWriter`) -------------------------------------------------

    def add(
        self, texts: list[str], ids: list[int | str], metadata: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]]:
        """Add new questions, durably, each assigned to a group where the index keeps groups (or is empty)."""
        clashing = [i for i, present in zip(ids, self.index.contains(ids)) if present]
        if clashing:
            raise IdConflict(f"ids already in the index: {clashing[:5]}{' ...' if len(clashing) > 5 else ''}")
        grouped = self.index.groups is not None or len(self.index) == 0
        self._canonical_texts.clear()
        assigned = self.index.add(texts, ids, metadata=metadata, assign_groups=grouped)
        self._persist()
        return assigned if assigned is not None else [{"id": i} for i in ids]

    def delete(self, ids: list[int | str]) -> int:
        """Delete questions by id (unknown ids ignored), durably; how many were deleted."""
        self._canonical_texts.clear()
        removed = self.index.delete(ids)
        if removed:
            self._persist()
        return removed

    def _persist(self) -> None:
        """An in-process index is written to its folder (a database has written already)."""
        if self.index.database_store is None and self.index_dir is not None:
            self.index.save(self.index_dir, overwrite=True)

    def close(self) -> None:
        self.index.close()


__all__ = ["CheckItem", "DuplicateService", "IdConflict", "SearchItem", "ReplicaReads", "UnknownId", "verdict"]
