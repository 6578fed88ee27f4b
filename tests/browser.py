"""A real headless Chromium (Debian's, installed by scripts/install-deps) driven through
Playwright, recording what every page does: requests, console messages, page errors and
dialogs — so a test can say "loaded from disk, fetched nothing, said nothing, ran nothing".

Never `playwright install`: the browser is the system's /usr/bin/chromium.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ALLOWED_SCHEMES = ("file://", "data:")


@dataclass
class Visit:
    """What one page did while it was open."""

    page: Any
    requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    @property
    def foreign_requests(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(ALLOWED_SCHEMES)]

    @property
    def console_errors(self) -> list[str]:
        return [text for kind, text in self.console if kind in ("error", "warning")]

    def assert_clean(self) -> None:
        assert self.foreign_requests == [], self.foreign_requests
        assert self.console_errors == [], self.console_errors
        assert self.errors == [], self.errors
        assert self.dialogs == [], self.dialogs


class Browser:
    def __init__(self, browser: Any) -> None:
        self._browser = browser

    @contextmanager
    def visit(self, url: str, width: int = 1100, height: int = 900) -> Iterator[Visit]:
        context = self._browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        visit = Visit(page)
        page.on("request", lambda r: visit.requests.append(r.url))
        page.on("console", lambda m: visit.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: visit.errors.append(str(e)))

        def dialog(d: Any) -> None:
            visit.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        try:
            page.goto(url, wait_until="load")
            yield visit
        finally:
            context.close()


@contextmanager
def chromium() -> Iterator[Browser]:
    """One headless Chromium (Playwright gives it a fresh temporary profile), closed after."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            yield Browser(browser)
        finally:
            browser.close()


def not_blank(png: bytes) -> tuple[float, float]:
    """(standard deviation of grey levels, share of pixels that are not near-white): a blank
    or single-colour screenshot has both near zero."""
    from PIL import Image, ImageStat

    image = Image.open(io.BytesIO(png)).convert("L")
    stddev = ImageStat.Stat(image).stddev[0]
    histogram = image.histogram()
    inked = sum(histogram[:230]) / max(1, sum(histogram))
    return stddev, inked


def url(path: Path) -> str:
    return path.resolve().as_uri()
