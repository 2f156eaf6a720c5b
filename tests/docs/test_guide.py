"""The user guide's code blocks run, in the order of the site's navigation, as one script."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def nav_pages(nav: object) -> list[str]:
    """The pages of an mkdocs ``nav``, in order."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    return []


def guide_pages() -> list[Path]:
    """The guide's pages (docs/guide/*.md) in the order mkdocs.yml's nav gives them."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    return [DOCS / page for page in nav_pages(config["nav"]) if page.startswith("guide/")]


def test_every_guide_page_is_in_the_nav() -> None:
    pages = guide_pages()
    assert sorted(pages) == sorted((DOCS / "guide").glob("*.md"))
    assert len(pages) == len(set(pages))


def test_guide_has_code() -> None:
    assert sum(len(python_blocks(page.read_text())) for page in guide_pages()) >= 10


# The Spark page's SparkSession leaves the sockets of its result streams to the garbage collector.
@pytest.mark.filterwarnings(
    "ignore:unclosed <socket:ResourceWarning",
    "ignore:Exception ignored in. <socket:pytest.PytestUnraisableExceptionWarning",
)
def test_guide_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    # The guide names files relative to where it runs: a Ray cluster another test started
    # elsewhere would look for them in its own directory.
    if "ray" in sys.modules:
        sys.modules["ray"].shutdown()
    # Spark takes relative paths from its JVM's working directory, fixed when the JVM
    # started: a JVM another test started would look for them there too.
    if "pyspark" in sys.modules:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
        gateway = SparkContext._gateway
        if gateway is not None:
            gateway.shutdown()
            # The JVM ends when its stdin closes.
            gateway.proc.stdin.close()
            gateway.proc.wait(timeout=120)
            SparkContext._gateway = SparkContext._jvm = None
    namespace: dict[str, object] = {}
    for page in guide_pages():
        name = page.relative_to(DOCS).as_posix()
        for i, block in enumerate(python_blocks(page.read_text())):
            exec(compile(block, f"{name}[block {i}]", "exec"), namespace)
    import gc

    gc.collect()  # while this test's filters apply
    out = capsys.readouterr().out
    assert "['feature0', 'feature1', 'feature2', 'feature3']" in out
    assert "ElementSpec(shape=(None,), dtype='int64')" in out
    assert "\n[4, 4]\n" in out  # batches bounded in bytes
    assert "\n[4, 4, 2]\n" in out  # pipeline batches bounded in bytes
    assert "\nTrue ByteRange 10\nTrue\n" in out  # one large file, many readers
    # The object-storage chapter, against its S3 server.
    assert "s3://training-data/scores/train-00000-of-00004.tfrecord\n20000\n20000\n(1024,)" in out
    assert "20000 5\n[3, 9, 7]\n" in out
    assert "FileNotFoundError s3://training-data/nothing.tfrecord" in out
    # Arrow's neighbours: DuckDB, Hugging Face datasets, Ray Data.
    assert "\ncat\nValue('float32')\n" in out
    assert "\n4 True\n" in out
    assert (tmp_path / "test.tfrecord").exists()
    # The rest of tf.io.
    assert "[(4, 16), (2, 16)]\n[[0, 1, 2, 3], [4, 5, 6, 7]]\n[[0, 1], [4, 5]]\n" in out
    assert "\nTrue [1, 2]\nmem_level 12 is out of range 1-9\n0 True\nCorruptRecordError\n" in out
    # Apache Spark, and Dask.
    assert " |-- feature2: binary (nullable = true)\n" in out
    assert "\n10000 4\nTrue\n" in out
    assert "'feature2=horse']\nTrue\n['feature0', 'feature1', 'feature3']\n" in out
    assert "\n['feature0', 'feature1', 'feature3', 'feature2'] True\n" in out
    assert "\n8 20000\nTrue 20000\n" in out
    assert (tmp_path / "from-spark" / "chickens.manifest.json").exists()
    # Statistics, per split, with what differs between the splits.
    assert (
        "9000 ['test', 'train', 'validation']\n9000 4.5 True\n2.0 4.0\n['cat', 'dog', 'emu']\n"
        "distribution_shift animal test\nunseen_category animal test\n"
        "distribution_shift weight test\n"
    ) in out
    assert (tmp_path / "zoo-report.html").read_text().count("<svg class='plot'") == 3


def test_readme_tour_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (block,) = python_blocks((ROOT / "README.md").read_text())
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out.split("\n")
    assert out[0] == "1000"
    assert out[1] == "out/train-00000-of-00004.tfrecord 10000"


def test_home_page_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (block,) = python_blocks((DOCS / "index.md").read_text())
    exec(compile(block, "index.md", "exec"), {})
    assert capsys.readouterr().out == "(256,)\n"
