"""Checks over the whole test run: in CI a skipped test is a failure, since every dependency the
suite needs (TensorFlow included) is installed by the test command."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every test must run: {report.longrepr}"
    return report


@pytest.fixture(scope="package")
def ray_cluster():
    """A real local Ray cluster of two CPUs, started once and shared (Ray stops it at exit)."""
    import ray

    if not ray.is_initialized():
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            object_store_memory=200 * 1024 * 1024,
            log_to_driver=False,
        )
    ray.data.DataContext.get_current().enable_progress_bars = False
    return ray


@pytest.fixture(scope="session")
def chromium():
    """Headless Chromium from Debian's packages (``CHROMIUM`` names another binary), driven
    by Playwright. Missing, it skips the test, which fails it in CI."""
    from pathlib import Path

    binary = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not Path(binary).exists():
        pytest.skip(f"no Chromium at {binary} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed (pip install playwright)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=binary, headless=True, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def keep_artifacts():
    """``keep_artifacts(folder, name)`` copies ``folder`` (screenshots, say) to
    ``$TEST_ARTIFACTS/name`` when ``TEST_ARTIFACTS`` names a folder."""
    import shutil
    from pathlib import Path

    def keep(folder: Path, name: str) -> None:
        if os.environ.get("TEST_ARTIFACTS"):
            target = Path(os.environ["TEST_ARTIFACTS"]) / name
            shutil.copytree(folder, target, dirs_exist_ok=True)

    return keep
