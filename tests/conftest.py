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
