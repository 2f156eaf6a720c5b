"""A Spark worker killed in the middle of a ``format("tfrecord")`` write on a standalone
cluster, whole (its Worker JVM, executor JVM and Python workers, as when a machine dies)
or its executor alone: Spark runs the lost tasks again, or the job fails, and either way
no dataset is left half committed and no part is left behind; the same write then
succeeds with exactly the rows."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import tfrecordkit as tfr

N = 6000
TASKS = 6  # three waves of the cluster's two one-core executors

pytestmark = [
    pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the processes in /proc"),
    pytest.mark.timeout(180),
]


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:  # gone meanwhile
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _slowly(df, markers: Path, seconds: float):
    """``df`` through a map that notes the task it runs (partition, attempt, process) in
    ``markers`` and takes ``seconds`` per batch: a write slow enough to be killed in."""

    def slow(batches):  # defined here, so that Spark pickles it whole
        from pyspark import TaskContext

        ctx = TaskContext.get()
        name = f"{ctx.partitionId()}-{ctx.attemptNumber()}-{os.getpid()}"
        (markers / name).write_text("")
        for batch in batches:
            time.sleep(seconds)
            yield batch

    return df.mapInArrow(slow, df.schema)


def _litter(directory: Path) -> list[str]:
    """What a write leaves that is no dataset: parts, temporary files, staging."""
    return sorted(
        str(p.relative_to(directory))
        for p in directory.rglob("*")
        if ".part-" in p.name or ".tmp-" in p.name or p.name.startswith(".staging-")
    )


def _rows(root: Path) -> list[int]:
    """The ``id`` of every row of every committed dataset under ``root``."""
    ids = []
    for manifest in root.rglob("*.manifest.json"):
        files = tfr.Manifest.load(str(manifest)).files
        ids += tfr.read_table(files).column("id").to_pylist()
    return sorted(ids)


def _kill_in_wave_two(
    workers: list, whole: bool, markers: Path, out: Path, killed: list, stop: threading.Event
) -> None:
    """As soon as a task of the second wave starts (the first wave's parts are written by
    then), kills at once the worker running it, ``whole`` (as when its machine dies), or
    else its executor (its JVM and Python workers). Notes the worker, the processes killed
    (their commands) and what was staged in ``out`` then in ``killed``."""
    while not stop.is_set():
        for name in os.listdir(markers):
            partition, _, pid = (int(v) for v in name.split("-"))
            if partition < 2 or not _alive(pid):
                continue
            for worker in workers:
                tree = _descendants(worker.pid)
                if pid not in tree:
                    continue
                if not whole:
                    executor = next(
                        p
                        for p in tree
                        if "CoarseGrainedExecutorBackend" in _command(p) and pid in _descendants(p)
                    )
                    tree = _descendants(executor)
                commands = {p: _command(p) for p in tree}
                for p in tree:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(p, signal.SIGKILL)
                killed.append((worker, commands, _litter(out)))
                return
        stop.wait(0.05)


@pytest.mark.parametrize("partitioned", [False, True], ids=["dataset", "partitionBy"])
@pytest.mark.parametrize(
    ("breakable_cluster_spark", "whole"),
    [
        # A lost worker is no task's fault: Spark runs its tasks again, elsewhere.
        ({}, True),
        # A dead executor is its task's failure, which this job is not allowed.
        ({"spark.task.maxFailures": "1"}, False),
    ],
    ids=["worker-lost", "executor-killed"],
    indirect=["breakable_cluster_spark"],
)
def test_a_worker_killed_mid_write_leaves_no_half_dataset(
    breakable_cluster_spark, whole: bool, tmp_path: Path, partitioned: bool
) -> None:
    from pyspark.sql import functions as F

    spark, workers = breakable_cluster_spark
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    df = spark.range(N, numPartitions=TASKS).withColumn("lang", (F.col("id") % 3).cast("string"))
    markers = tmp_path / "markers"
    markers.mkdir()
    out = tmp_path / "out" / "train"

    def write(frame, mode: str = "errorifexists") -> None:
        writer = frame.write.format("tfrecord").mode(mode)
        writer = writer.partitionBy("lang") if partitioned else writer
        writer.save(str(out))

    killed: list[tuple[subprocess.Popen, dict[int, str], list[str]]] = []
    stop = threading.Event()
    args = (workers, whole, markers, tmp_path / "out", killed, stop)
    killer = threading.Thread(target=_kill_in_wave_two, args=args)
    killer.start()
    failure = None
    try:
        write(_slowly(df, markers, 0.2))
    except Exception as err:  # Spark's error, whatever it wraps
        failure = err
    finally:
        stop.set()
        killer.join()
    assert killed, "the write ended before anything was killed"
    victim, doomed, staged = killed[0]
    assert any(".tfrecord" in p for p in staged), staged  # parts were staged: mid-write
    assert any("CoarseGrainedExecutorBackend" in c for c in doomed.values())
    assert any("pyspark" in c for c in doomed.values())  # the task's Python worker
    assert ("deploy.worker.Worker" in doomed.get(victim.pid, "")) == whole
    if whole:
        victim.wait(30)
    assert not any(_alive(p) for p in doomed)

    # Spark ran the lost task again, or failed the job: a whole dataset or none, and
    # no part left either way.
    assert (failure is None) == whole, failure
    assert _litter(tmp_path / "out") == []
    assert _rows(tmp_path / "out") == ([] if failure else list(range(N)))

    # The same write again succeeds, on what is left of the cluster.
    write(_slowly(df, markers, 0), mode="overwrite")
    assert _litter(tmp_path / "out") == []
    assert _rows(tmp_path / "out") == list(range(N))
    if partitioned:
        assert sorted(os.listdir(out)) == ["lang=0", "lang=1", "lang=2"]
    else:
        assert len(tfr.Manifest.load(str(out)).files) == TASKS
