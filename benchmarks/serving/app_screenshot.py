#!/usr/bin/env python
"""Screenshot of the web app (docs/app.png, for the README): recipes/app.py in headless Chromium, one search.

    python benchmarks/serving/app_screenshot.py --model_name_or_path outputs/lstm_qqp_int8 --corpus recipes/data/qqp_dev.tsv \\
        --query "How can I improve my English speaking skills ?" --output docs/app.png

Needs Debian's chromium and chromium-driver, selenium and the `app` extra.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import REPO, argument_parser

APP = REPO / "recipes" / "app.py"


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--model_name_or_path", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--query", required=True)
    parser.add_argument("--output", default="docs/app.png")
    args = parser.parse_args(argv)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, str(APP), "--model_name_or_path", args.model_name_or_path, "--corpus", args.corpus]
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    server = subprocess.Popen([*command, "--port", str(port)], env=env)
    url = f"http://127.0.0.1:{port}/"
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,800"):
        options.add_argument(flag)
    driver = None
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                time.sleep(0.5)
        driver = webdriver.Chrome(
            service=webdriver.ChromeService(executable_path="/usr/bin/chromedriver"), options=options
        )
        driver.get(url)
        box = WebDriverWait(driver, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, "#question textarea"))
        box.send_keys(args.query)
        driver.find_element(By.CSS_SELECTOR, "#search").click()
        WebDriverWait(driver, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, "#results").text.strip())
        time.sleep(1)
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(args.output)
        print(f"{args.output}: {Path(args.output).stat().st_size / 1024:.0f} KB")
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
