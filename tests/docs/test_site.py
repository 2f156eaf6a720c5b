"""The documentation site builds without a warning, documents every public name, loads
nothing from elsewhere, and works in a real browser (headless Chromium).

The browser test needs Chromium from Debian (``apt-get install chromium``; ``CHROMIUM``
names another binary) and Playwright from PyPI; without them it skips, except under
``CI=true``, where it fails. Its screenshots go to the test's temporary folder, and also to
``$TEST_ARTIFACTS/docs-site/`` when ``TEST_ARTIFACTS`` names a folder
(``TEST_ARTIFACTS=test-artifacts``, say).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import tfrecordkit

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once with ``mkdocs build --strict``."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    log = built.stdout + built.stderr
    assert built.returncode == 0, log
    # --strict aborts on a warning; a warning it lets through is a failure here too.
    assert [line for line in log.splitlines() if "WARNING" in line] == [], log
    return out


def public_names() -> list[str]:
    """What the API reference must document, from the ``__all__`` lists as they are now."""
    names = [f"tfrecordkit.{n}" for n in tfrecordkit.__all__ if n != "__version__"]
    for module in (tfrecordkit.tfds, tfrecordkit.ray, tfrecordkit.spark):
        names += [f"{module.__name__.replace('.integrations', '')}.{n}" for n in module.__all__]
    return names


def test_every_public_name_has_an_entry(site: Path) -> None:
    ids = set()
    for page in (site / "reference").glob("*.html"):
        ids.update(re.findall(r'\bid="([^"]+)"', page.read_text()))
    names = public_names()
    assert "tfrecordkit.ray.read" in names and "tfrecordkit.tfds.write_metadata" in names
    assert [name for name in names if name not in ids] == []


def test_cli_reference_has_every_command(site: Path) -> None:
    from tfrecordkit.cli import main

    page = (site / "reference" / "cli.html").read_text()
    assert [c for c in main.commands if f"tfrecordkit {c}" not in page] == []
    assert "--storage-option" in page


class _Assets(HTMLParser):
    """The addresses a page loads: scripts, styles, icons, images, frames, CSS urls."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "link" and a.get("rel") not in ("next", "prev", "canonical"):
            self.urls.append(a.get("href") or "")
        for key in ("src", "srcset", "data", "poster"):
            if a.get(key) and tag != "a":
                self.urls.append(a[key] or "")
        self.urls += re.findall(r"url\(\s*['\"]?([^'\")]+)", a.get("style") or "")

    def handle_data(self, data: str) -> None:
        if self.lasttag == "style":
            self.urls += re.findall(r"url\(\s*['\"]?([^'\")]+)|@import\s+['\"]([^'\"]+)", data)


def _external(url: str) -> bool:
    return bool(re.match(r"(https?:)?//", url.strip(), flags=re.I))


def test_no_page_loads_anything_from_elsewhere(site: Path) -> None:
    found = []
    for page in site.rglob("*.html"):
        parser = _Assets()
        parser.feed(page.read_text())
        found += [f"{page.relative_to(site)}: {u}" for u in map(str, parser.urls) if _external(u)]
    for sheet in site.rglob("*.css"):
        for url in re.findall(
            r"url\(\s*['\"]?([^'\")]+)|@import\s+['\"]([^'\"]+)", sheet.read_text()
        ):
            found += [f"{sheet.relative_to(site)}: {u}" for u in url if u and _external(u)]
    assert found == []
    # Pages open from the disk too: links name files, not directories.
    assert (site / "guide" / "examples.html").exists() and not (
        site / "guide" / "examples"
    ).exists()


# The browser.


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    """The site over HTTP on loopback, as a static host serves it."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


# Page, its h1, and a word its code shows.
PAGES = [
    ("index.html", "tfrecordkit", "RecordWriter"),
    ("guide/examples.html", "Examples: build, write and read", "encode_example"),
    ("reference/examples.html", "Examples and schemas", "parse_example"),
]


@pytest.mark.timeout(120)
def test_pages_render_and_search_works_in_chromium(
    chromium, keep_artifacts, server: str, tmp_path: Path
) -> None:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    problems: list[str] = []
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.set_default_timeout(15_000)
        page.on(
            "console",
            lambda m: (
                problems.append(f"console {m.type}: {m.text}")
                if m.type in ("error", "warning")
                else None
            ),
        )
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
        page.on(
            "request",
            lambda r: (
                problems.append(f"request to elsewhere: {r.url}")
                if urlsplit(r.url).hostname not in ("127.0.0.1", None)
                and not r.url.startswith("data:")
                else None
            ),
        )
        for path, title, word in PAGES:
            response = page.goto(f"{server}/{path}", wait_until="load")
            assert response is not None and response.ok, path
            h1 = page.locator("article h1").first.inner_text()
            assert h1.strip().removesuffix("¶").strip() == title, path
            code = page.locator("article pre code")
            assert code.count() > 0, path
            assert word in page.locator("article").inner_text(), path
            page.screenshot(path=shots / f"{path.replace('/', '-')[:-5]}.png")

        # The in-site search: its index loads in a web worker, then results show as
        # one types.
        page.goto(f"{server}/guide/examples.html", wait_until="load")
        box = page.locator("input.md-search__input")
        box.click()
        # "Initializing search" until the worker has built the index.
        page.wait_for_function(
            "() => !/Initializing/i.test("
            "document.querySelector('.md-search-result__meta')?.textContent ?? 'x')",
            timeout=30_000,
        )
        box.press_sequentially("parse_example", delay=20)
        results = page.locator(".md-search-result__item")
        results.first.wait_for(state="visible")
        assert results.count() > 0
        assert "parse_example" in page.locator(".md-search-result").inner_text()
        page.wait_for_timeout(500)  # the results fade in
        page.screenshot(path=shots / "search.png")
        # A result leads to its page.
        results.first.locator("a").first.click()
        page.wait_for_load_state("load")
        assert "search" not in page.url and page.locator("article h1").count() == 1
    finally:
        page.close()
    keep_artifacts(shots, "docs-site")
    assert problems == []
    assert sorted(f.name for f in shots.iterdir()) == [
        "guide-examples.png",
        "index.png",
        "reference-examples.png",
        "search.png",
    ]
