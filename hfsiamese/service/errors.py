"""
Every error of the service as JSON `{"error": {"code", "message"}}` with a 4xx status (5xx only for the service's
own faults, and then a message without a trace): malformed JSON, wrong types, over-limit requests, missing keys,
unknown ids. Installed on an app by `install_error_handlers`; `body_limit` refuses oversized bodies before they are
parsed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from hfsiamese.service.auth import AuthError
from hfsiamese.service.service import IdConflict, UnknownId

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_STATUS_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
                 409: "conflict", 413: "too_large", 415: "unsupported_media_type", 422: "invalid_request",
                 503: "not_ready"}  # fmt: skip


class ServiceError(Exception):
    """An answer the service chose: a status, a code and a one-line message."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message = status, message
        self.code = code or _STATUS_CODES.get(status, "error")


def error_response(
    status: int, message: str, code: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    code = code or _STATUS_CODES.get(status, "error")
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def validation_message(errors: list[Any]) -> str:
    """FastAPI's validation errors as one line: where and what, for the first three (the values are not echoed)."""
    if any(error.get("type") == "json_invalid" for error in errors):
        return "the request body is not valid JSON"
    parts = []
    for error in errors[:3]:
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
        what = error.get("msg", "is invalid")
        parts.append(f"{where}: {what}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(parts) + more


def not_json_body(content_type: str | None, errors: list[Any]) -> str | None:
    """What to say where a route's JSON body came as another media type (`curl -d` sends a form) or with none, else
    None. FastAPI reads such a body as bytes (it parses JSON only under a JSON media type, its strict default), and
    the request model then reports "Input should be a valid dictionary", which does not say what the client got
    wrong."""
    if not any(tuple(error.get("loc", ())) == ("body",) for error in errors):  # the body as a whole, not a field
        return None
    media_type = (content_type or "").split(";")[0].strip().lower()
    if media_type.startswith("application/") and (media_type == "application/json" or media_type.endswith("+json")):
        return None  # FastAPI's own rule for a JSON body: such a body was parsed, and is wrong as JSON (422)
    came = f"it came as {media_type}" if media_type else "it came without one"
    return f"send the body as JSON with the header Content-Type: application/json ({came})"


def install_error_handlers(app: FastAPI) -> None:
    """Make every error of `app` a JSON error answer."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        errors = list(err.errors())
        not_json = not_json_body(request.headers.get("content-type"), errors)
        return error_response(415, not_json) if not_json else error_response(422, validation_message(errors))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, err: StarletteHTTPException) -> JSONResponse:
        message = err.detail if isinstance(err.detail, str) else "request refused"
        return error_response(err.status_code, message, headers=getattr(err, "headers", None))

    @app.exception_handler(ServiceError)
    async def _service(request: Request, err: ServiceError) -> JSONResponse:
        return error_response(err.status, err.message, err.code)

    @app.exception_handler(AuthError)
    async def _auth(request: Request, err: AuthError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else None
        return error_response(err.status, str(err), headers=headers)

    @app.exception_handler(UnknownId)
    async def _unknown(request: Request, err: UnknownId) -> JSONResponse:
        return error_response(404, str(err).strip("'\""))

    @app.exception_handler(IdConflict)
    async def _conflict(request: Request, err: IdConflict) -> JSONResponse:
        return error_response(409, str(err))

    @app.exception_handler(ValueError)
    async def _value(request: Request, err: ValueError) -> JSONResponse:  # the library's messages are for users
        return error_response(422, first_line(err))

    @app.exception_handler(TypeError)
    async def _type(request: Request, err: TypeError) -> JSONResponse:
        return error_response(422, first_line(err))

    @app.exception_handler(Exception)
    async def _fault(request: Request, err: Exception) -> JSONResponse:
        logger.exception("%s %s failed", request.method, request.url.path)  # the trace goes to the log only
        return error_response(500, "internal error: the service's log says more", "internal")


def first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0]


class BodyLimit:
    """ASGI middleware that reads a request's body (at most `max_bytes`, else 413) before the app sees it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_large = error_response(413, f"the request body is larger than the limit of {self.max_bytes:,} bytes")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await too_large(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await too_large(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


__all__ = ["BodyLimit", "ServiceError", "error_response", "install_error_handlers", "validation_message"]
