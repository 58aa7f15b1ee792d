"""recipes/app.py in a real browser: headless Chromium (Debian's) drives the page as a user would."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import gradio  # noqa: F401  (recipes/app.py's; the test extra has it, so a broken install is an error)
import pytest
import torch
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from hfsiamese import SiameseConfig, SiameseModel
from tests.browser import ask, chromium, text_of  # fails the module where Chromium is not installed
from tests.conftest import REPO_ROOT, TEXTS
from tests.helpers import offline_env

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

APP = REPO_ROOT / "recipes" / "app.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_app(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = open(tmp_path / f"app_{port}.log", "w")  # noqa: SIM115  (closed with the process)
    process = subprocess.Popen(
        [sys.executable, str(APP), *args, "--port", str(port)], cwd=tmp_path, env=offline_env(OMP_NUM_THREADS="1"),
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the app exited: {(tmp_path / f'app_{port}.log').read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return process, url
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise AssertionError("the app did not answer within 120 s")


@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def model_and_corpus(tmp_path_factory, word_tokenizer):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm",
        vocab_size=len(word_tokenizer),
        embedding_dim=8,
        hidden_size=6,
        pad_token_id=0,
        threshold=0.95,
    )
    tmp = tmp_path_factory.mktemp("app")
    SiameseModel(config).save_pretrained(tmp / "model")
    word_tokenizer.save_pretrained(tmp / "model")
    (tmp / "corpus.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return tmp


@pytest.fixture(scope="module")
def app_url(model_and_corpus):
    process, url = start_app(model_and_corpus, "--model_name_or_path", "model", "--corpus", "corpus.txt", "--k", "3")
    yield url
    process.terminate()
    process.wait(timeout=30)


def test_a_known_question_finds_itself_first_and_is_called_a_duplicate(browser, app_url):
    ask(browser, app_url, TEXTS[4])
    # The verdict states the score it rests on and the threshold it was compared with.
    assert "best match scores 1.000 ≥ threshold" in text_of(browser, "#verdict", "Already asked")
    rows = text_of(browser, "#results", TEXTS[4]).splitlines()
    first_row = next(line for line in rows if line.startswith("1"))
    assert TEXTS[4] in first_row and "1.000" in first_row and "yes" in first_row


def test_bad_questions_get_a_message_not_a_stack_trace(browser, app_url):
    ask(browser, app_url, "   ")
    assert "Type a question first" in text_of(browser, "#verdict", "Type a question")
    ask(browser, app_url, "why " * 2500)  # 10,000 characters
    message = text_of(browser, "#verdict", "characters long")
    assert "10,000 characters long; the limit is 2,000" in message and "Traceback" not in browser.page_source


def test_the_pair_tab_checks_one_pair(browser, app_url):
    browser.get(app_url)
    tab = WebDriverWait(browser, 60).until(
        lambda d: next(
            (b for b in d.find_elements(By.CSS_SELECTOR, "button[role=tab]") if "Check a pair" in b.text), None
        )
    )
    tab.click()
    WebDriverWait(browser, 30).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "#first textarea, #first input").is_displayed()
    )
    browser.find_element(By.CSS_SELECTOR, "#first textarea, #first input").send_keys(TEXTS[0])
    browser.find_element(By.CSS_SELECTOR, "#second textarea, #second input").send_keys(TEXTS[0])
    browser.find_element(By.CSS_SELECTOR, "#check").click()
    assert "score 1.000" in text_of(browser, "#pair-verdict", "Duplicates")


def test_a_corpus_that_does_not_parse_is_a_message_on_the_page(browser, model_and_corpus):
    bad = model_and_corpus / "broken.csv"
    bad.write_bytes(b"\xff\xfe\x00garbage,\x00\x01\n")
    process, url = start_app(model_and_corpus, "--model_name_or_path", "model", "--corpus", "broken.csv")
    try:
        browser.get(url)
        message = text_of(browser, "#load-error", "Could not load", timeout=60)
        assert "broken.csv" in message and "Traceback" not in browser.page_source
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_binds_loopback_by_default(app_url):
    """Started without --host: reachable on 127.0.0.1, refused on the machine's other addresses."""
    port = int(app_url.rstrip("/").rsplit(":", 1)[1])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:  # a UDP "connect" sends nothing: it only picks the address this machine would go out from
            probe.connect(("192.0.2.1", 9))
            outside = probe.getsockname()[0]
        except OSError:
            outside = "127.0.0.1"
    if outside.startswith("127."):
        pytest.skip("no non-loopback IPv4 address: nothing to try the loopback-only binding from")
    with pytest.raises(OSError), socket.create_connection((outside, port), timeout=2):
        pass
