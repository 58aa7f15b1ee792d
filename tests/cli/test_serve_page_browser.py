"""`hfsiamese serve --mount_app /app` in a real browser: a person with no header to send is sent to the sign-in form,
refused with a wrong key, and searches the page after signing in with a read key."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from hfsiamese.service.page_sign_in import WRONG_KEY
from tests.browser import ask, chromium, text_of  # fails the module where Chromium is not installed
from tests.conftest import TEXTS
from tests.service.running_service import READ_KEY, service_with_page

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real


@pytest.fixture(scope="module")
def page_url(tmp_path_factory, word_tokenizer):
    running = service_with_page(tmp_path_factory.mktemp("serve_page_browser"), word_tokenizer)
    yield f"{running.url}/app/"
    running.stop()


@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        yield driver


def sign_in(driver, key: str) -> None:
    """Type `key` into the sign-in form the browser shows and send it."""
    field = WebDriverWait(driver, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, "#key"))
    field.clear()
    field.send_keys(key)
    driver.find_element(By.CSS_SELECTOR, "#sign-in").click()


def test_a_person_signs_in_with_a_read_key_and_finds_the_indexed_duplicate(browser, page_url):
    browser.get(page_url)  # no key: the sign-in form, not the page
    assert browser.current_url.endswith("/app/sign-in") and not browser.find_elements(By.CSS_SELECTOR, "#question")
    sign_in(browser, "not-a-key-of-this-service")
    assert WRONG_KEY in text_of(browser, "#sign-in-message", WRONG_KEY)
    assert "Traceback" not in browser.page_source and not browser.find_elements(By.CSS_SELECTOR, "#question")
    sign_in(browser, READ_KEY)
    WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#question textarea"))
    ask(browser, page_url, TEXTS[4])  # the session cookie opens the page again
    rows = text_of(browser, "#results", TEXTS[4], timeout=60).splitlines()
    assert TEXTS[4] in next(line for line in rows if line.startswith("1"))  # the indexed question, first
