"""What the browser tests share: Debian's headless Chromium driven by selenium, and a person's steps on the page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):  # an error, not a skip: CI would pass without the browser
    pytest.fail(
        "Debian's chromium and chromium-driver are not installed (apt-get install -y chromium chromium-driver; .ci/run does it)",
        pytrace=False,
    )

from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A headless Chromium, quit on leaving."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def text_of(driver, selector: str, contains: str, timeout: float = 30) -> str:
    """The text of the element at `selector` once it contains `contains`."""
    WebDriverWait(driver, timeout).until(lambda d: contains in d.find_element(By.CSS_SELECTOR, selector).text)
    return driver.find_element(By.CSS_SELECTOR, selector).text


def ask(driver, url: str, question: str) -> None:
    """Open the page at `url`, type `question` and press Search."""
    driver.get(url)
    box = WebDriverWait(driver, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, "#question textarea"))
    if len(question) > 200:  # typing 10,000 keys is slow: set the value as a paste would, then notify the page
        driver.execute_script(
            "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));",
            box,
            question,
        )
    else:
        box.send_keys(question)
    driver.find_element(By.CSS_SELECTOR, "#search").click()
