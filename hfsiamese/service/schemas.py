"""The JSON of the `/v1` API as typed pydantic models: what FastAPI checks each request against (a wrong type is a
422) and what the OpenAPI schema at `/openapi.json` shows. Limits that depend on the service's settings (how many
texts, how long, how large a k) are checked by the routes, against `settings.Limits`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator

# An id is an integer or a string, as in `DuplicateIndex` (never a float or a bool: pydantic's strict types).
QuestionId = StrictInt | StrictStr
Verdict = Literal["duplicate", "new", "unknown"]
# What a search filter matches a metadata field against (as `DuplicateIndex.search(filter=...)` takes it).
FilterValue = StrictStr | StrictInt | StrictBool


class _Request(BaseModel):
    """Unknown fields are refused, so that a misspelt option is an error rather than silently ignored."""

    model_config = ConfigDict(extra="forbid")


class SearchRequest(_Request):
    """One question (`query`) or several (`queries`), and how many earlier questions to return for each."""

    query: StrictStr | None = None
    queries: list[StrictStr] | None = None
    k: StrictInt | None = Field(default=None, description="matches per query (default: the service's)")
    filter: dict[StrictStr, FilterValue | list[FilterValue]] | None = Field(
        default=None,
        description="only questions whose metadata match: {field: value}, {field: [values]} (any of them), several "
        "fields all at once; an index in a database (LanceDB, Qdrant) only",
    )

    @model_validator(mode="after")
    def _one_of(self) -> SearchRequest:
        if (self.query is None) == (self.queries is None):
            raise ValueError("give either 'query' (one text) or 'queries' (a list of texts)")
        return self

    def texts(self) -> list[str]:
        return [self.query] if self.query is not None else list(self.queries or [])


class Match(BaseModel):
    """An earlier question close to the query: its cosine `score` (the cross-encoder's with reranking, the cosine
    then in `retrieval_score`), calibrated P(duplicate) where the model has a calibration, the verdict where a
    threshold is known, and its duplicate group where the index keeps groups. In a database index a match also
    carries the question's metadata, each field beside these as `DuplicateIndex.search` gives them."""

    # The question's metadata fields (given with its add) pass through as they are stored.
    model_config = ConfigDict(extra="allow")

    id: QuestionId
    text: str
    score: float
    probability: float | None = None
    is_duplicate: bool | None = None
    retrieval_score: float | None = None
    group: int | None = None
    canonical_id: QuestionId | None = None
    canonical_text: str | None = None


class QueryResult(BaseModel):
    query: str
    verdict: Verdict = Field(description="duplicate: a match reaches the threshold; unknown: no threshold is known")
    matches: list[Match]


class SearchResponse(BaseModel):
    results: list[QueryResult]


class Pair(_Request):
    first: StrictStr
    second: StrictStr


class CheckRequest(_Request):
    """One pair (`pair`) or several (`pairs`)."""

    pair: Pair | None = None
    pairs: list[Pair] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> CheckRequest:
        if (self.pair is None) == (self.pairs is None):
            raise ValueError("give either 'pair' (one pair) or 'pairs' (a list of pairs)")
        return self

    def all_pairs(self) -> list[Pair]:
        return [self.pair] if self.pair is not None else list(self.pairs or [])


class PairResult(BaseModel):
    score: float
    probability: float | None = None
    is_duplicate: bool | None = None
    verdict: Verdict


class CheckResponse(BaseModel):
    results: list[PairResult]


class NewQuestion(_Request):
    id: QuestionId
    text: StrictStr
    metadata: dict[str, Any] | None = None


class AddRequest(_Request):
    questions: list[NewQuestion]


class Assignment(BaseModel):
    """Where a new question went: its group and canonical question (None where the index keeps no groups)."""

    id: QuestionId
    group: int | None = None
    canonical_id: QuestionId | None = None
    canonical_text: str | None = None
    score: float | None = None
    new_group: bool | None = None


class AddResponse(BaseModel):
    added: list[Assignment]
    size: int


class DeleteRequest(_Request):
    ids: list[QuestionId]


class DeleteResponse(BaseModel):
    deleted: int
    size: int


class Member(BaseModel):
    id: QuestionId
    text: str
    score: float | None = Field(default=None, description="cosine to the canonical question")


class Group(BaseModel):
    group: int
    canonical_id: QuestionId
    canonical_text: str
    size: int
    members: list[Member] | None = None


class GroupList(BaseModel):
    groups: list[Group]
    num_groups: int


class Info(BaseModel):
    size: int
    backend: str
    model: str | None
    threshold: float | None
    calibrated: bool
    cross_encoder: str | None
    groups: int | None
    read_only: bool


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    """Every 4xx/5xx answer: a code and a one-line message, never a stack trace."""

    error: ErrorBody


__all__ = [
    "AddRequest", "AddResponse", "Assignment", "CheckRequest", "CheckResponse", "DeleteRequest", "DeleteResponse",
    "ErrorBody", "ErrorResponse", "Group", "GroupList", "Info", "Match", "Member", "NewQuestion", "Pair",
    "PairResult", "QueryResult", "QuestionId", "SearchRequest", "SearchResponse", "Verdict",
]  # fmt: skip
