"""
How a person gets into the page that `hfsiamese serve --mount_app PATH` mounts when the service has keys. A browser
sends no `Authorization` header. So `PATH/sign-in` takes a key in a form and answers with a session cookie (HttpOnly,
SameSite=Strict, sent to PATH only) that the page's own requests then carry. API clients keep sending the key in a
header to the same paths. A browser that opens the page with neither is sent to the form.

Why a sign-in route of the service and not Gradio's login form (`mount_gradio_app(auth=...)`): Gradio takes `auth` or
`auth_dependency`, not both. Under `auth` it reads only its own cookie, so a client that sends the key in a header
would be refused, and that cookie is SameSite=None. So the page keeps one `auth_dependency` (`PageSignIn.holder`: the
header's key, else the cookie's session).

The cookie holds a random session token, never the key. The session is kept in this process (`PageSessions`) and
ends after `SESSION_SECONDS`, at sign-out, or when the service restarts. Starlette's signed-cookie `SessionMiddleware`
was not used: it needs itsdangerous, which none of our extras installs, and it cannot end one session at sign-out.
A session opens the page and nothing else: the `/v1` routes read keys from headers only. The page searches, checks
pairs and lists groups; it never adds or deletes, so a key of either kind may sign in.
"""

from __future__ import annotations

import html
import secrets
import time
from collections.abc import Callable

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from hfsiamese.service.auth import ApiKeys, KeyKind, request_key

SESSION_SECONDS = 12 * 60 * 60  # a working day; after that the person signs in again
COOKIE = "hfsiamese_page"
WRONG_KEY = "That is not a key of this service."


class PageSessions:
    """The people signed in to the page: each session token, the kind of key it was opened with, and when it ends."""

    def __init__(self, lifetime_s: float = SESSION_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.lifetime_s, self._clock = lifetime_s, clock
        self._sessions: dict[str, tuple[KeyKind, float]] = {}

    def __len__(self) -> int:
        """The sessions held: the live ones, and any that ended since the last `open`."""
        return len(self._sessions)

    def open(self, kind: KeyKind) -> str:
        """A new session's token. Ended sessions are dropped first, so the table only holds live ones."""
        now = self._clock()
        self._sessions = {token: held for token, held in self._sessions.items() if held[1] > now}
        token = secrets.token_urlsafe(32)
        self._sessions[token] = (kind, now + self.lifetime_s)
        return token

    def kind_of(self, token: str | None) -> KeyKind | None:
        """The kind of key that opened the live session `token`. None when there is no token, or the session is
        unknown or has ended."""
        held = self._sessions.get(token) if token else None
        if held is None or held[1] <= self._clock():
            return None
        return held[0]

    def close(self, token: str | None) -> None:
        """End the session `token` (nothing happens for an unknown one)."""
        if token:
            self._sessions.pop(token, None)


class PageSignIn:
    """Who may use the page mounted at `path` on a service with `keys`: a request with a key, or a person who has
    signed in."""

    def __init__(self, keys: ApiKeys, path: str, sessions: PageSessions | None = None) -> None:
        self.keys, self.path = keys, path.rstrip("/")
        self.sessions = sessions if sessions is not None else PageSessions()

    def holder(self, request: Request) -> str | None:
        """Gradio's `auth_dependency`. Returns the kind of the request's key (a header) or of its session (the
        cookie); Gradio uses it as the user name. None refuses the request (401). A browser that opens the page
        itself with neither is sent to the sign-in form instead."""
        key = request_key(request.headers.get("authorization"), request.headers.get("x-api-key"))
        kind = self.keys.kind_of(key) if key else self.sessions.kind_of(request.cookies.get(COOKIE))
        if kind is None and self._opens_the_page(request):
            # Relative, so it also holds behind a proxy that serves the page under a longer path.
            raise HTTPException(303, headers={"Location": "sign-in"})
        return kind

    def _opens_the_page(self, request: Request) -> bool:
        """A browser asking for the page itself (Gradio serves it at `PATH/`), not for its API or its files."""
        wants_html = "text/html" in request.headers.get("accept", "")
        return request.method == "GET" and wants_html and request.url.path.rstrip("/") == self.path

    def router(self) -> APIRouter:
        """`PATH/sign-in` (GET the form, POST a key) and `PATH/sign-out`. Include them before the page is mounted, so
        these paths are the service's, not the page's."""
        router = APIRouter(prefix=self.path, include_in_schema=False)

        @router.get("/sign-in")
        async def form() -> HTMLResponse:
            return sign_in_form()

        @router.post("/sign-in")
        async def sign_in(request: Request) -> Response:
            given = (await request.form()).get("key")
            key = given.strip() if isinstance(given, str) else ""
            kind = self.keys.kind_of(key) if key else None
            if kind is None:  # the key given is neither echoed nor logged
                return sign_in_form(WRONG_KEY, status_code=401)
            response = RedirectResponse("./", status_code=303)
            response.set_cookie(
                COOKIE, self.sessions.open(kind), max_age=int(self.sessions.lifetime_s), path=self.path or "/",
                secure=request.url.scheme == "https", httponly=True, samesite="strict",
            )  # fmt: skip
            return response

        @router.get("/sign-out")
        async def sign_out(request: Request) -> Response:
            self.sessions.close(request.cookies.get(COOKIE))
            response = RedirectResponse("sign-in", status_code=303)
            response.delete_cookie(COOKIE, path=self.path or "/", httponly=True, samesite="strict")
            return response

        return router


def sign_in_form(message: str | None = None, status_code: int = 200) -> HTMLResponse:
    """The sign-in page: one password field for the key, and `message` (why the last try was refused) above it."""
    said = f'<p id="sign-in-message" role="alert">{html.escape(message)}</p>' if message else ""
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in: has this question been asked?</title></head>
<body style="font-family: sans-serif; max-width: 32rem; margin: 4rem auto; padding: 0 1rem">
<h1>Sign in</h1>
<p>Sign in with one of this service's API keys to search its questions. A read key is enough.</p>
{said}
<form method="post" action="sign-in">
<label for="key">API key</label><br>
<input id="key" name="key" type="password" autocomplete="current-password" required autofocus size="40">
<button id="sign-in" type="submit">Sign in</button>
</form>
</body></html>
"""
    return HTMLResponse(page, status_code=status_code, headers={"Cache-Control": "no-store"})


__all__ = ["COOKIE", "SESSION_SECONDS", "WRONG_KEY", "PageSessions", "PageSignIn", "sign_in_form"]
