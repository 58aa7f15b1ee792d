"""What `hfsiamese serve` is told: where the index and its model are, the limits on a request and how requests are
batched. Plain data, checked once, so that the app, the command and the tests share one description of a service."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from hfsiamese.search.rerank_options import check_rerank_k, refuse_rerank_k_without_cross_encoder
from hfsiamese.utils.onnx_runtime import request_runtime_options

# A question is a few hundred characters; a pasted document would only be truncated to the model's token limit.
DEFAULT_MAX_CHARS = 2000


@dataclass(frozen=True)
class Limits:
    """What one request may ask for; beyond it the answer is a 4xx JSON error, never work done."""

    max_request_bytes: int = 1_048_576  # a request body larger than this: 413
    max_batch: int = 64  # queries, pairs, new questions or ids in one request: 422 beyond
    max_chars: int = DEFAULT_MAX_CHARS  # characters of one text: 422 beyond
    max_k: int = 100  # matches per query: 422 beyond
    max_groups: int = 100  # groups one "largest groups" request lists

    def __post_init__(self) -> None:
        for name in ("max_request_bytes", "max_batch", "max_chars", "max_k", "max_groups"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class Batching:
    """Concurrent searches (and pair checks) are encoded together: while requests come together (the last batch held
    several; a lone one never waits) the first waits for as many as the last batch held, up to `max_wait_ms`, and at
    most `max_batch` texts go through the model at once."""

    max_wait_ms: float = 10.0
    max_batch: int = 64

    def __post_init__(self) -> None:
        if self.max_wait_ms < 0:
            raise ValueError(f"the batch wait must be at least 0 ms, got {self.max_wait_ms}")
        if self.max_batch < 1:
            raise ValueError(f"the largest batch must be at least 1 text, got {self.max_batch}")


@dataclass(frozen=True)
class ServeSettings:
    """
    A service over a saved `DuplicateIndex` (`index_dir`) and the model that built it (`model_name_or_path`, on the
    runtime `backend` names: `"auto"`, the fastest its folder carries, as `hfsiamese.load_model` chooses).

    `cross_encoder`: a reranker for searches and the judge of pair checks. `read_only`: no add or delete route.
    `find_groups`: group the index at start when it has no duplicate groups yet (so that adds are assigned to one).
    `api_keys_file` / the `HFSIAMESE_API_KEYS` environment variable: the keys (see `auth`), required to listen
    beyond loopback unless `allow_no_keys`. `replica`: a read replica of the service that writes to the same database
    (read-only; its index reopened every `replica_refresh_s` seconds, so that the writer's adds, deletes and groups
    show within that time plus one reopening). `onnx_thread_spinning`: let an ONNX model's onnxruntime threads spin
    between runs (off by default: see `model_runtime_options`).
    """

    index_dir: str
    model_name_or_path: str
    backend: str | None = None
    cross_encoder: str | None = None
    rerank_k: int | None = None
    default_k: int = 5
    read_only: bool = False
    find_groups: bool = False
    host: str = "127.0.0.1"
    port: int = 8000
    api_keys_file: str | None = None
    allow_no_keys: bool = False
    limits: Limits = field(default_factory=Limits)
    batching: Batching = field(default_factory=Batching)
    replica: bool = False
    replica_refresh_s: float = 1.0
    onnx_thread_spinning: bool = False

    def __post_init__(self) -> None:
        check_port(self.port)
        refuse_rerank_k_without_cross_encoder(self.rerank_k, self.cross_encoder)
        if self.rerank_k is not None:  # else the service starts and every search of the default k fails
            check_rerank_k(self.rerank_k, self.default_k)
        if self.replica_refresh_s <= 0:
            raise ValueError(f"the replica refresh interval must be above 0 s, got {self.replica_refresh_s}")
        if self.replica and self.find_groups:
            raise ValueError(
                "a replica never writes, so it cannot group the index: serve the writer with --find_groups"
            )
        if not 1 <= self.default_k <= self.limits.max_k:
            raise ValueError(
                f"the default k ({self.default_k}) must be between 1 and the largest k ({self.limits.max_k})"
            )

    def model_runtime_options(self) -> dict[str, dict[str, Any]]:
        """
        Options for the runtime the service's models turn out to run on (`hfsiamese.load_model`'s
        `runtime_options`): an ONNX model's session without thread spinning unless `onnx_thread_spinning`. A service's
        model runs once per batch of requests, not back to back as in batch encoding; onnxruntime's threads spinning
        between those runs hold the cores that the requests' parsing, tokenisation and index search need (measured on
        2 cores, MiniLM int8 at 100k questions: 1.56x the searches per second at one client, docs/benchmarks.md).
        Without onnxruntime installed no ONNX model loads, and there is nothing to set.
        """
        return request_runtime_options(thread_spinning=self.onnx_thread_spinning)


def check_port(port: int) -> int:
    """A TCP port a server can listen on (uvicorn reports itself running on 99999 rather than refusing it)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port must be an integer from 1 to 65535, got {port!r}")
    return port


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the service to this machine (an API key is then not required)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


__all__ = ["DEFAULT_MAX_CHARS", "Batching", "Limits", "ServeSettings", "is_loopback"]
