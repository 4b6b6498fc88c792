"""Headless Chromium for the tests that look at a page: Debian's browser, driven by Playwright.

The browser is Debian's ``chromium`` (``make test`` installs it, see the Makefile's ``browser``
target); Playwright (the test extra) drives it through ``executable_path`` and never downloads one
of its own. The flags keep the browser off every address but loopback: without the
background-networking ones Chromium reaches for Google's hosts at every start. A page is opened
with a recorder of its console errors and uncaught exceptions, which every test asserts empty.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions"]


def chromium() -> str:
    exe = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if exe is None:
        raise RuntimeError("no Chromium: `make browser` installs Debian's chromium (make test does it)")
    return exe


@dataclass
class Watched:
    """A page and what went wrong in it: console errors and uncaught exceptions, as text."""

    page: Page
    errors: list[str] = field(default_factory=list)


@contextmanager
def browser() -> Iterator[Browser]:
    """A headless Chromium, closed on exit."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), args=FLAGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


def watched_page(browser: Browser) -> Watched:
    """A new page in a fresh context whose console errors and page errors are recorded."""
    page = browser.new_context().new_page()
    watched = Watched(page)
    page.on("console", lambda message: watched.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: watched.errors.append(str(error)))
    return watched
