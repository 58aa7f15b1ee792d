"""`hfsiamese serve --mount_app /app`: the web page on the service's own server, behind its keys, driven over HTTP
(the page and Gradio's API answer a key in a header, or a person signed in with one; 401 without), beside the
JSON API; and the paths it refuses."""

from __future__ import annotations

import json

import httpx
import pytest

from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.serve import ServeArguments, check_mount_path
from hfsiamese.service.page_sign_in import COOKIE, WRONG_KEY
from tests.conftest import TEXTS
from tests.service.running_service import READ_KEY, service_with_page

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

READ = {"Authorization": f"Bearer {READ_KEY}"}


@pytest.fixture(scope="module")
def service(tmp_path_factory, word_tokenizer):
    running = service_with_page(tmp_path_factory.mktemp("serve_page"), word_tokenizer)
    yield running
    running.stop()


def gradio_call(client: httpx.Client, name: str, *data: str) -> list:
    """One call of the page's `name` function through Gradio's HTTP API: its outputs."""
    started = client.post(f"/app/gradio_api/call/{name}", json={"data": list(data)})
    assert started.status_code == 200, started.text
    stream = client.get(f"/app/gradio_api/call/{name}/{started.json()['event_id']}")
    lines = stream.text.splitlines()
    assert "event: complete" in lines, stream.text
    return json.loads(lines[lines.index("event: complete") + 1].removeprefix("data: "))


def test_the_page_and_its_api_answer_with_a_key(service):
    with httpx.Client(base_url=service.url, headers=READ, timeout=60) as client:
        page = client.get("/app/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        _verdict, results = gradio_call(client, "search", TEXTS[4])
        assert TEXTS[4] in results  # the indexed question itself is the first match
        (pair_verdict,) = gradio_call(client, "check_pair", TEXTS[4], TEXTS[4])
        assert "duplicate" in pair_verdict.lower()
        assert client.post("/v1/search", json={"query": TEXTS[4], "k": 1}).status_code == 200  # the API beside it


def test_without_a_key_the_page_and_its_api_answer_401(service):
    with httpx.Client(base_url=service.url, timeout=60) as client:
        assert client.get("/app/").status_code == 401
        assert client.post("/app/gradio_api/call/search", json={"data": [TEXTS[0]]}).status_code == 401
        assert client.get("/app/", headers={"X-API-Key": "not-a-key-0000000000"}).status_code == 401


@pytest.mark.parametrize("path, said", [("app", "must be a path like /app"), ("/", "must be a path like /app"),
                                        ("/v1/page", "service's own routes"), ("/health", "service's own routes")])  # fmt: skip
def test_a_mount_path_that_is_not_its_own_is_refused(path, said):
    with pytest.raises(UsageError, match=said):
        check_mount_path(ServeArguments(index_dir="i", model_name_or_path="m", mount_app=path))
    with pytest.raises(UsageError, match="not by a --replica"):
        check_mount_path(ServeArguments(index_dir="i", model_name_or_path="m", mount_app="/app", replica=True))


def test_a_person_signs_in_with_a_read_key_and_uses_the_page_not_the_api(service):
    with httpx.Client(base_url=service.url, timeout=60) as client:
        opened = client.get("/app/", headers={"Accept": "text/html"})  # a browser, no key: sent to the form
        assert opened.status_code == 303 and opened.headers["location"] == "sign-in"
        assert 'name="key"' in client.get("/app/sign-in").text
        signed_in = client.post("/app/sign-in", data={"key": READ_KEY})
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "./"
        cookie = signed_in.headers["set-cookie"]
        assert all(part in cookie.lower() for part in ("httponly", "samesite=strict", "path=/app;")), cookie
        assert READ_KEY not in cookie  # a session token, not the key
        assert client.get("/app/").status_code == 200  # the session cookie, no header
        _verdict, results = gradio_call(client, "search", TEXTS[4])
        assert TEXTS[4] in results
        session = {"Cookie": f"{COOKIE}={client.cookies[COOKIE]}"}
        assert client.post("/v1/search", json={"query": TEXTS[4]}, headers=session).status_code == 401  # not a key
        assert client.get("/app/sign-out").headers["location"] == "sign-in"
        assert client.post("/app/gradio_api/call/search", json={"data": [TEXTS[4]]}, headers=session).status_code == 401


def test_a_wrong_key_is_refused_on_the_form_and_never_logged(service):
    wrong = "wrong-key-" + "x" * 16
    with httpx.Client(base_url=service.url, timeout=60) as client:
        refused = client.post("/app/sign-in", data={"key": wrong})
        assert refused.status_code == 401 and WRONG_KEY in refused.text and "set-cookie" not in refused.headers
        assert wrong not in refused.text and "Traceback" not in refused.text
        assert client.get("/app/", headers={"Cookie": f"{COOKIE}=made-up-session"}).status_code == 401
    assert wrong not in service.log()
