"""The page's sign-in sessions: when they end, and the cookie's flags (tests/cli/test_serve_page.py signs in to the
real service's page; tests/cli/test_serve_page_browser.py does it in a browser)."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hfsiamese.service.auth import ApiKeys
from hfsiamese.service.page_sign_in import COOKIE, PageSessions, PageSignIn
from tests.service.running_service import READ_KEY


def test_a_session_ends_after_its_lifetime_or_at_sign_out():
    now = [0.0]
    sessions = PageSessions(lifetime_s=60, clock=lambda: now[0])
    token = sessions.open("read")
    assert sessions.kind_of(token) == "read"
    assert sessions.kind_of("made-up") is None and sessions.kind_of(None) is None
    now[0] = 59.0
    assert sessions.kind_of(token) == "read"
    now[0] = 60.0
    assert sessions.kind_of(token) is None
    other = sessions.open("write")  # opening drops the ended session: the table only holds live ones
    assert len(sessions) == 1 and sessions.kind_of(other) == "write"
    sessions.close(other)
    assert sessions.kind_of(other) is None and len(sessions) == 0


@pytest.mark.parametrize("base_url, secure", [("http://testserver", False), ("https://testserver", True)])
def test_the_cookie_is_secure_where_the_page_is_served_over_https(base_url, secure):
    app = FastAPI()
    app.include_router(PageSignIn(ApiKeys({READ_KEY: "read"}), "/app/").router())
    with TestClient(app, base_url=base_url, follow_redirects=False) as client:
        answer = client.post("/app/sign-in", data={"key": READ_KEY})
    cookie = answer.headers["set-cookie"].lower()
    assert answer.status_code == 303 and cookie.startswith(f"{COOKIE}=") and "path=/app;" in cookie
    assert ("; secure" in cookie) is secure
