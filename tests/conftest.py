"""Checks over the whole test run: in CI a skipped test is a failure, since every dependency the
suite needs (TensorFlow included) is installed by the test command."""

from __future__ import annotations

import contextlib
import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


#: The fixtures that start Spark.
SPARK_FIXTURES = frozenset({"spark", "cluster_spark", "breakable_cluster_spark"})
# PySpark leaves the sockets of its result streams to the garbage collector.
SPARK_SOCKET_WARNINGS = (
    "ignore:unclosed <socket:ResourceWarning",
    "ignore:Exception ignored in. <socket:pytest.PytestUnraisableExceptionWarning",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            for warning in SPARK_SOCKET_WARNINGS:
                item.add_marker(pytest.mark.filterwarnings(warning))


@pytest.fixture(autouse=True)
def _collect_spark_sockets(request: pytest.FixtureRequest):
    """After a test that uses Spark, collects PySpark's sockets while its warning filters
    apply."""
    yield
    if SPARK_FIXTURES & set(request.fixturenames):
        import gc

        gc.collect()


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


@pytest.fixture(scope="module")
def chromium():
    """Headless Chromium from Debian's packages (``CHROMIUM`` names another binary), driven
    by Playwright. Missing, it skips the test, which fails it in CI. It lives for one
    module: a process forked meanwhile (a DataLoader worker, say) would inherit the pipe to
    Playwright's driver, and a worker left running would keep the driver from ever ending."""
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


def _spark_at(master: str, conf: dict[str, str] | None = None):
    """A SparkSession on ``master`` (with ``conf`` besides), its Python workers this
    interpreter, on loopback."""
    import sys

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        if active.sparkContext.master == master:
            return active
        active.stop()
    builder = (
        SparkSession.builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import tfrecordkit as tfr

    tfr.spark.register(spark)
    return spark


@pytest.fixture
def spark():
    """A local SparkSession with two cores, shared by the tests (started once)."""
    return _spark_at("local[2]")


@pytest.fixture
def cluster_spark(spark_cluster):
    """A SparkSession on the standalone cluster (see ``spark_cluster``)."""
    return _spark_at(spark_cluster)


@pytest.fixture(scope="package")
def spark_cluster(tmp_path_factory):
    """A Spark standalone cluster on loopback: a master and two workers of one core each,
    started from the PySpark installation and stopped afterwards. Yields its master URL."""
    with _standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as (master, _):
        yield master


@pytest.fixture
def breakable_cluster_spark(request, tmp_path_factory):
    """A SparkSession on a standalone cluster like ``spark_cluster``'s but of the test's
    own, for a test that kills part of it; parametrized indirectly, the SparkSession's conf.
    Yields the SparkSession and the cluster's workers' processes (each the Worker JVM)."""
    conf = getattr(request, "param", None)
    with _standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as (master, workers):
        yield _spark_at(master, conf), workers


@contextlib.contextmanager
def _standalone_cluster(logs):
    """Starts a master and two one-core workers logging to ``logs``; yields the master's
    URL and the workers' processes (each the Worker JVM itself), and stops them all."""
    import socket
    import subprocess
    import time
    from pathlib import Path

    import pyspark

    home = Path(pyspark.__file__).parent
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    env["SPARK_NO_DAEMONIZE"] = "1"
    spark_class = str(home / "bin" / "spark-class")
    master = f"spark://127.0.0.1:{port}"

    def start(name: str, *args: str) -> subprocess.Popen:
        with open(logs / f"{name}.log", "w") as out:  # the process keeps its own copy
            return subprocess.Popen(
                [spark_class, *args], env=env, stdout=out, stderr=subprocess.STDOUT
            )

    procs = [
        start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            "0",
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while "Starting Spark master" not in (logs / "master.log").read_text():
            assert time.monotonic() < deadline, (logs / "master.log").read_text()
            time.sleep(0.2)
        for i in range(2):
            procs.append(
                start(
                    f"worker{i}",
                    "org.apache.spark.deploy.worker.Worker",
                    master,
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--webui-port",
                    "0",
                    "--host",
                    "127.0.0.1",
                    "--work-dir",
                    str(logs / f"work{i}"),
                )
            )
        for i in range(2):
            log = logs / f"worker{i}.log"
            while "Successfully registered with master" not in log.read_text():
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        yield master, procs[1:]
    finally:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None and active.sparkContext.master == master:
            active.stop()
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            p.wait(30)
