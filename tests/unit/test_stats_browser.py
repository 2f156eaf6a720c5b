"""The HTML statistics report in a real browser (headless Chromium): it renders with no
console errors and fetches nothing, and every feature has its plot. A screenshot is kept
under ``$TEST_ARTIFACTS`` (or the test's temporary directory)."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit as tfr
from PIL import Image

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"Chromium is missing ({CHROMIUM}); scripts/test.sh installs it")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _image(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (200, 40, 90)).save(buf, format="PNG")
    return buf.getvalue()


def test_report_renders_every_plot_without_errors(browser, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    for split, shift in (("train", 0.0), ("test", 2.0)):
        with tfr.RecordWriter(str(tmp_path / f"{split}-00000-of-00001.tfrecord")) as w:
            for i in range(400):
                w.write(
                    tfr.encode_example(
                        {
                            "x": np.float32([rng.normal(shift, 1)]),
                            "label": np.int64([i % 7]),
                            "name": [f"<b>&{i % 13}'\"".encode()],  # escaped, never markup
                            "image": [_image((8 + i % 3, 6))],
                            "tokens": np.int64(rng.integers(0, 9, i % 4)),
                            "empty": [] if i % 2 else np.float32([]),
                        }
                    )
                )
    report = tfr.stats(str(tmp_path / "*.tfrecord"))
    page_path = tmp_path / "report.html"
    report.to_html(page_path)

    page = browser.new_page(viewport={"width": 1100, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    page.goto(page_path.as_uri())
    page.wait_for_load_state("load")

    assert page.locator("h1").inner_text() == "TFRecord statistics"
    features = sorted(report["features"])
    sections = page.locator("section.feature")
    assert sections.count() == len(features)
    for name in features:
        plot = page.locator(f"section[id='feature-{name}'] svg.plot")
        assert plot.count() == 1, name
        box = plot.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 50, name
        assert plot.locator("rect.bar").count() >= 1, name
    assert page.locator("text=distribution_shift").count() >= 1
    labels = page.locator("section[id='feature-name'] svg text").all_text_contents()
    assert "<b>&0'\"" in labels  # shown as text, not taken as markup
    assert page.locator("section[id='feature-name'] svg b").count() == 0

    artifacts = Path(os.environ.get("TEST_ARTIFACTS") or tmp_path)
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / "stats-report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    page.close()
    assert problems == []
    assert fetched == [page_path.as_uri()]
