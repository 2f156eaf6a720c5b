"""The HTML statistics report in a real browser (headless Chromium): it renders with no
console errors and fetches nothing, and every feature has its plot. Its screenshot is kept
in ``$TEST_ARTIFACTS/stats-report/`` when ``TEST_ARTIFACTS`` names a folder."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import tfrecordkit as tfr
from PIL import Image


def _image(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (200, 40, 90)).save(buf, format="PNG")
    return buf.getvalue()


def test_report_renders_every_plot_without_errors(chromium, keep_artifacts, tmp_path: Path) -> None:
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

    page = chromium.new_page(viewport={"width": 1100, "height": 900})
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

    shots = tmp_path / "screenshots"
    shots.mkdir()
    page.screenshot(path=shots / "report.png", full_page=True)
    assert (shots / "report.png").stat().st_size > 10_000
    page.close()
    keep_artifacts(shots, "stats-report")
    assert problems == []
    assert fetched == [page_path.as_uri()]
