"""Headless Chromium for the verification page's tests: Debian's chromium and chromium-driver, driven by
selenium, filling the page's own fields and pressing its button as a customer would."""
from __future__ import annotations

import shutil

import pytest


def chromium():
    """Headless Debian chromium driven by selenium (skips where either is missing); quit() it."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver is None:
        pytest.skip("Debian's chromium and chromium-driver are not installed (scripts/setup.sh installs them)")
    options = Options()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,1500"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver))


def verify_in_page(driver, case) -> dict:
    """Fill the open page's fields from `case` (a PageCase), press Verify, and read the verdict."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script(
        "const set = (id, v) => { const e = document.getElementById(id); if (e) e.value = v; };"
        "set('bundle-text', arguments[0]); set('card-text', arguments[1]); set('record-text', arguments[2]);"
        "set('pinned-digest', arguments[3]); set('trusted', arguments[4]);",
        case.bundle, case.card, case.record, case.pinned, "\n".join(case.trusted))
    driver.find_element(By.ID, "verify").click()
    verdict = driver.find_element(By.ID, "verdict")
    WebDriverWait(driver, 120).until(lambda d: verdict.get_attribute("data-verdict") not in ("NONE", "WORKING"))
    return {"verdict": verdict.get_attribute("data-verdict"), "text": driver.find_element(By.ID, "report").text,
            "ms": float(driver.find_element(By.ID, "timing").get_attribute("data-milliseconds"))}
