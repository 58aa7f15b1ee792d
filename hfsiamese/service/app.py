"""
The HTTP service over a `DuplicateIndex` (FastAPI): `create_app(settings)` gives the ASGI app that `hfsiamese serve`
runs with uvicorn. Routes, versioned under `/v1` (the OpenAPI schema at `/openapi.json`, its page at `/docs`):

    POST   /v1/search                 one query or a batch -> the k nearest, with probability, verdict, group
    POST   /v1/check                  one pair or a batch -> score, probability, verdict
    POST   /v1/questions              new questions with ids (and metadata) -> stored durably, each one's group
    POST   /v1/questions/delete       delete by ids
    DELETE /v1/questions/{id}         delete one
    GET    /v1/questions/{id}/group   a question's group
    GET    /v1/groups/{group}         a group and its members
    GET    /v1/groups?n=10            the largest groups
    GET    /v1/info                   the index's size, model, threshold, groups
    GET    /health/live, /health/ready, /metrics

The index and model load in the background once the server runs: `/health/ready` answers 503 (and the `/v1` routes
too) until they are loaded. Searches and pair checks go through a `DynamicBatcher` each, writes through one
`SerialWriter`, all on one thread that alone touches the index.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.responses import JSONResponse, Response

from hfsiamese.service import schemas
from hfsiamese.service.auth import ApiKeys, KeyKind, request_key
from hfsiamese.service.batching import DynamicBatcher, SerialWriter
from hfsiamese.service.errors import (
    ASGIApp,
    BodyLimit,
    Message,
    Receive,
    Scope,
    Send,
    ServiceError,
    install_error_handlers,
)
from hfsiamese.service.metrics import ServiceMetrics
from hfsiamese.service.service import CheckItem, DuplicateService, ReplicaReads, SearchItem
from hfsiamese.service.settings import ServeSettings, is_loopback

logger = logging.getLogger(__name__)

API_VERSION = "v1"
INDEX_THREAD = "hfsiamese-index"  # the name of the one thread that uses the index


class ServiceRuntime:
    """What one running app holds: its settings, keys and metrics, the service once loaded (or why it failed), the
    one thread that uses the index, the batchers and the writer."""

    def __init__(
        self,
        settings: ServeSettings,
        keys: ApiKeys,
        opener: Callable[[], DuplicateService],
    ) -> None:
        self.settings, self.keys, self._opener = settings, keys, opener
        self.metrics = ServiceMetrics()
        self.service: DuplicateService | None = None
        self.load_error: str | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=INDEX_THREAD)
        batching = settings.batching
        self.searcher: DynamicBatcher[SearchItem, list[dict[str, Any]]] = DynamicBatcher(
            self._search, self._executor, max_batch=batching.max_batch, max_wait_s=batching.max_wait_ms / 1000,
            size_of=lambda item: len(item.texts), on_batch=self.metrics.batch_observer("search"),
        )  # fmt: skip
        self.checker: DynamicBatcher[CheckItem, list[dict[str, Any]]] = DynamicBatcher(
            self._check, self._executor, max_batch=batching.max_batch, max_wait_s=batching.max_wait_ms / 1000,
            size_of=lambda item: len(item.firsts), on_batch=self.metrics.batch_observer("check"),
        )  # fmt: skip
        self.writer = SerialWriter(self._executor)
        self._refreshing: asyncio.Task[None] | None = None  # a replica's refresh loop, once loaded

    def _search(self, items: list[SearchItem]) -> list[list[dict[str, Any]]]:
        return self.ready().search(items)

    def _check(self, items: list[CheckItem]) -> list[list[dict[str, Any]]]:
        return self.ready().check(items)

    def ready(self) -> DuplicateService:
        """The loaded service, or a 503 saying why there is none yet."""
        if self.service is None:
            why = f"the index could not be loaded: {self.load_error}" if self.load_error else "the index is loading"
            raise ServiceError(503, why, "not_ready")
        return self.service

    async def start(self) -> None:
        """Start the batchers and the writer, and load the index and model on the index's thread."""
        for worker in (self.searcher, self.checker, self.writer):
            worker.start()
        try:
            service = await asyncio.get_running_loop().run_in_executor(self._executor, self._opener)
        except Exception as err:  # noqa: BLE001  any loading error is said on /health/ready and in the log, one line
            self.load_error = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            logger.error("loading the index failed: %s", self.load_error)
            return
        self.service = service
        self.metrics.index_size.set(len(service.index))
        logger.info("ready: %d questions", len(service.index))
        if self.settings.replica:
            self._refreshing = asyncio.create_task(self._refresh_replica())

    async def _refresh_replica(self) -> None:
        """A replica's loop: every `replica_refresh_s`, the index reopened from its database on another thread (the
        searches go on meanwhile), then put in place between two batches on the index's thread."""
        loop = asyncio.get_running_loop()
        reads = ReplicaReads()
        while True:
            await asyncio.sleep(self.settings.replica_refresh_s)
            current = self.ready()
            try:
                fresh = await loop.run_in_executor(None, current.reopened)
            except Exception as err:  # noqa: BLE001  a failed refresh keeps the last index and is said in the log
                logger.warning("refreshing the replica failed (the last index is served): %s", err)
                continue
            if not reads.serves(fresh, current):  # most likely a write between its rows' commit and its groups'
                await loop.run_in_executor(None, fresh.close)
                continue
            await loop.run_in_executor(self._executor, self._replace, fresh)

    def _replace(self, fresh: DuplicateService) -> None:
        """Serve `fresh` from now on and close the one it replaces (on the index's thread: no call is using it)."""
        old, self.service = self.service, fresh
        self.metrics.index_size.set(len(fresh.index))
        if old is not None:
            old.close()

    async def stop(self) -> None:
        if self._refreshing is not None:
            self._refreshing.cancel()
            await asyncio.gather(self._refreshing, return_exceptions=True)
        for worker in (self.searcher, self.checker, self.writer):
            await worker.stop()
        if self.service is not None:
            self._executor.submit(self.service.close)
        self._executor.shutdown(wait=True)

    async def write(self, operation: Callable[[DuplicateService], Any]) -> tuple[Any, int]:
        """Run a write after every earlier one: its result and the index's size after it (the gauge follows)."""
        service = self.ready()

        def run() -> tuple[Any, int]:
            result = operation(service)
            size = len(service.index)
            self.metrics.index_size.set(size)
            return result, size

        return await self.writer.submit(run)

    def on_index_thread(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`function(*args, **kwargs)` run on the index's thread, waited for (from another thread: a mounted page's
        worker; called on the index's thread itself, it runs at once)."""
        if threading.current_thread().name.startswith(INDEX_THREAD):
            return function(*args, **kwargs)
        return self._executor.submit(function, *args, **kwargs).result()

    async def read(self, operation: Callable[[DuplicateService], Any]) -> Any:
        """Run a read that is not batched (groups, info) on the index's thread, between writes."""
        service = self.ready()
        return await asyncio.get_running_loop().run_in_executor(self._executor, operation, service)


class RequestMetrics:
    """ASGI middleware counting each request by method, route template and status, with its latency."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start, status = time.perf_counter(), 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"  # the template: ids never become labels
            self.metrics.observe_request(scope.get("method", ""), route, status, time.perf_counter() - start)


def runtime_of(request: Request) -> ServiceRuntime:
    runtime: ServiceRuntime = request.app.state.runtime
    return runtime


def _needs(kind: KeyKind) -> Callable[..., Awaitable[None]]:
    """A dependency refusing a request without a key of `kind` (401/403), when the service has keys. Async: it does
    no I/O, and FastAPI runs a plain function dependency on its thread pool (a thread hop on every request)."""

    async def check(
        request: Request,
        authorization: str | None = Header(default=None, include_in_schema=False),
        x_api_key: str | None = Header(default=None, include_in_schema=False),
    ) -> None:
        runtime = runtime_of(request)
        runtime.keys.check(request_key(authorization, x_api_key), kind)
        if kind == "write" and runtime.settings.replica:
            raise ServiceError(403, "this service is a read replica: send adds and deletes to the writer")
        if kind == "write" and runtime.settings.read_only:
            raise ServiceError(403, "this service is read-only (served with --read_only)")

    return check


reader, writer = Depends(_needs("read")), Depends(_needs("write"))


def _batch_runtime(request: Request, count: int, what: str) -> ServiceRuntime:
    """The runtime of a request that sends a batch: ready (503 if not), and the batch (`count` `what`) within bounds."""
    runtime = runtime_of(request)
    runtime.ready()
    limit = runtime.settings.limits.max_batch
    if count == 0:
        raise ServiceError(422, f"no {what} given")
    if count > limit:
        raise ServiceError(422, f"{count} {what} in one request; the limit is {limit}", "too_many")
    return runtime


def _numbered(texts: list[str], what: str) -> list[tuple[str, str]]:
    """Each text of a request with the name an error gives it: "query", or "query 2" where there are several."""
    return [(what if len(texts) == 1 else f"{what} {number}", text) for number, text in enumerate(texts, start=1)]


def _pair_texts(firsts: list[str], seconds: list[str]) -> list[tuple[str, str]]:
    """Both texts of each pair, named by their place in it: "the second question of pair 2" (of "the pair" alone)."""
    named = []
    for number, pair in enumerate(zip(firsts, seconds, strict=True), start=1):
        of = "the pair" if len(firsts) == 1 else f"pair {number}"
        named += [(f"the {side} question of {of}", text) for side, text in zip(("first", "second"), pair, strict=True)]
    return named


def _check_texts(named_texts: list[tuple[str, str]], runtime: ServiceRuntime) -> None:
    """Refuse the first text (named as `_numbered` or `_pair_texts` name it) that is empty or over the length limit."""
    limit = runtime.settings.limits.max_chars
    for which, text in named_texts:
        if not text.strip():
            raise ServiceError(422, f"{which} is empty: give the text of a question")
        if len(text) > limit:
            raise ServiceError(422, f"{which} is {len(text):,} characters long; the limit is {limit:,}", "too_long")


def _router() -> APIRouter:
    router = APIRouter(prefix=f"/{API_VERSION}")

    @router.post("/search", response_model=schemas.SearchResponse, dependencies=[reader])
    async def search(body: schemas.SearchRequest, request: Request) -> dict[str, Any]:
        """The k indexed questions nearest to each query, with the verdict and groups."""
        texts = body.texts()
        runtime = _batch_runtime(request, len(texts), "queries")
        _check_texts(_numbered(texts, "query"), runtime)
        k = runtime.settings.default_k if body.k is None else body.k
        if not 1 <= k <= runtime.settings.limits.max_k:
            raise ServiceError(422, f"k must be between 1 and {runtime.settings.limits.max_k}, got {k}")
        filter = body.filter or None
        if filter is not None:
            try:
                runtime.ready().check_filter(filter)
            except (TypeError, ValueError) as err:  # each message names the filter ("filter field 'x' ...")
                raise ServiceError(422, str(err)) from err
        return {"results": await runtime.searcher.submit(SearchItem(texts, k, filter))}

    @router.post("/check", response_model=schemas.CheckResponse, dependencies=[reader])
    async def check(body: schemas.CheckRequest, request: Request) -> dict[str, Any]:
        """Score and verdict of each pair (the cross-encoder's where the service has one)."""
        pairs = body.all_pairs()
        runtime = _batch_runtime(request, len(pairs), "pairs")
        firsts, seconds = [p.first for p in pairs], [p.second for p in pairs]
        _check_texts(_pair_texts(firsts, seconds), runtime)
        return {"results": await runtime.checker.submit(CheckItem(firsts, seconds))}

    @router.post("/questions", response_model=schemas.AddResponse, status_code=201, dependencies=[writer])
    async def add(body: schemas.AddRequest, request: Request) -> dict[str, Any]:
        """Store new questions (searchable at once, durable before the answer) and say each one's group."""
        questions = body.questions
        runtime = _batch_runtime(request, len(questions), "questions")
        _check_texts(_numbered([q.text for q in questions], "question"), runtime)
        has_metadata = any(q.metadata is not None for q in questions)
        metadata = [q.metadata or {} for q in questions] if has_metadata else None
        texts, ids = [q.text for q in questions], [q.id for q in questions]
        added, size = await runtime.write(lambda service: service.add(texts, ids, metadata))
        return {"added": added, "size": size}

    @router.post("/questions/delete", response_model=schemas.DeleteResponse, dependencies=[writer])
    async def delete_many(body: schemas.DeleteRequest, request: Request) -> dict[str, Any]:
        """Delete questions by id (ids not in the index are ignored)."""
        runtime = _batch_runtime(request, len(body.ids), "ids")
        ids = list(body.ids)
        deleted, size = await runtime.write(lambda service: service.delete(ids))
        return {"deleted": deleted, "size": size}

    @router.delete("/questions/{question_id}", response_model=schemas.DeleteResponse, dependencies=[writer])
    async def delete_one(question_id: str, request: Request) -> dict[str, Any]:
        """Delete one question (404 when the index does not hold it)."""
        runtime = runtime_of(request)
        service = runtime.ready()
        key = service.id_of(question_id)
        deleted, size = await runtime.write(lambda s: s.delete([key]))
        if not deleted:
            raise ServiceError(404, f"no question has the id {question_id!r}")
        return {"deleted": deleted, "size": size}

    @router.get("/questions/{question_id}/group", response_model=schemas.Group, dependencies=[reader])
    async def group_of(question_id: str, request: Request) -> dict[str, Any]:
        """The duplicate group of one question."""
        runtime = runtime_of(request)
        service = runtime.ready()
        return await runtime.read(lambda s: s.group_of(service.id_of(question_id)))

    @router.get("/groups/{group}", response_model=schemas.Group, dependencies=[reader])
    async def group(group: int, request: Request) -> dict[str, Any]:
        """A duplicate group: its canonical question and its members."""
        runtime = runtime_of(request)
        runtime.ready()
        return await runtime.read(lambda s: s.group(group))

    @router.get("/groups", response_model=schemas.GroupList, dependencies=[reader])
    async def largest(request: Request, n: int = Query(default=10, ge=1)) -> dict[str, Any]:
        """The `n` largest duplicate groups."""
        runtime = runtime_of(request)
        runtime.ready()
        if n > runtime.settings.limits.max_groups:
            raise ServiceError(422, f"n must be at most {runtime.settings.limits.max_groups}, got {n}")
        return await runtime.read(lambda s: s.largest_groups(n))

    @router.get("/info", response_model=schemas.Info, dependencies=[reader])
    async def info(request: Request) -> dict[str, Any]:
        """What the service serves."""
        runtime = runtime_of(request)
        runtime.ready()
        found = await runtime.read(lambda s: s.info())
        return {**found, "read_only": runtime.settings.read_only or runtime.settings.replica}

    return router


def create_app(
    settings: ServeSettings,
    *,
    keys: ApiKeys | None = None,
    opener: Callable[[], DuplicateService] | None = None,
) -> FastAPI:
    """
    The service's ASGI app. `keys`: default the `--api_keys_file` and `HFSIAMESE_API_KEYS` ones; without any, the
    app refuses to be built for a non-loopback host unless `settings.allow_no_keys`. `opener`: what loads the
    service (default `DuplicateService.open(settings)`), run when the server starts.
    """
    keys = keys if keys is not None else ApiKeys.load(settings.api_keys_file)
    if not keys.enabled and not is_loopback(settings.host) and not settings.allow_no_keys:
        raise ValueError(
            f"serving on {settings.host} (beyond this machine) needs API keys: pass --api_keys_file or set "
            "HFSIAMESE_API_KEYS (or --allow_no_keys to serve anyone)"
        )
    runtime = ServiceRuntime(settings, keys, opener or (lambda: DuplicateService.open(settings)))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loading = asyncio.create_task(runtime.start())
        try:
            yield
        finally:
            await asyncio.gather(loading, return_exceptions=True)
            await runtime.stop()

    app = FastAPI(
        title="hfsiamese duplicate detection",
        version=API_VERSION,
        description="Has this question been asked before? Search, check, add and group questions.",
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    install_error_handlers(app)
    app.include_router(_router())

    @app.get("/health/live")
    async def live() -> dict[str, str]:
        """The process answers."""
        return {"status": "live"}

    @app.get("/health/ready")
    async def ready() -> JSONResponse:
        """The index and model are loaded (503 until then, or with why loading failed)."""
        if runtime.service is None:
            status = "failed" if runtime.load_error else "loading"
            return JSONResponse({"status": status, "error": runtime.load_error}, status_code=503)
        return JSONResponse({"status": "ready"})

    @app.get("/metrics", dependencies=[reader])
    async def metrics() -> Response:
        """Prometheus metrics (a read key where the service has keys)."""
        page, content_type = runtime.metrics.render()
        return Response(page, media_type=content_type)

    app.add_middleware(BodyLimit, max_bytes=settings.limits.max_request_bytes)
    app.add_middleware(RequestMetrics, metrics=runtime.metrics)
    return app


__all__ = ["API_VERSION", "RequestMetrics", "ServiceRuntime", "create_app"]
