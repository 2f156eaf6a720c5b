"""The benchmarks page: rows measured alone after the full run say when and where."""

import importlib.util
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


B = _bench()


def _row(path: str, ours: float, rerun: str = "") -> "B.Row":
    return B.Row(path, "Examples/s", ours, 1.0, "TensorFlow", ">= 2x", rerun=rerun)


def _page(tmp_path: Path, date_line: str, rows: list) -> Path:
    page = tmp_path / "benchmarks.md"
    page.write_text(
        "# Benchmarks\n\n- Machine: Some CPU, 2 cores, Linux\n"
        f"- Date: {date_line}\n\n| path |\n|---|\n| x |\n\nold memory note\n"
    )
    saved = [asdict(r) | {"ratio": r.ratio} for r in rows]
    page.with_suffix(".json").write_text(json.dumps(saved))
    return page


def test_a_row_run_alone_takes_its_date_and_machine_and_the_rest_keep_theirs(tmp_path, monkeypatch):
    monkeypatch.setattr(B, "machine", lambda: "Intel(R) Xeon(R) Processor, 2 cores, Linux")
    monkeypatch.setattr(B.time, "strftime", lambda fmt: "2026-12-01")
    older = [_row("raw read", 1.0), _row("pipeline", 2.0, rerun="2026-11-30"), _row("write", 3.0)]
    page = _page(tmp_path, "2026-11-25", older)

    rows, notes, date, host = B.merged(page, [_row("raw read", 9.0)], [None])

    assert (date, host, notes) == ("2026-11-25", "Some CPU, 2 cores, Linux", ["old memory note"])
    got = {r.path: (r.ours, r.rerun) for r in rows}
    assert got == {
        "raw read": (9.0, "2026-12-01 on Intel Xeon"),
        "pipeline": (2.0, "2026-11-30"),
        "write": (3.0, ""),
    }
    B.write_doc(page, rows, [], "2.x", 3, date, host)
    text = page.read_text()
    assert "- Date: 2026-11-25 (rows measured alone since then say when)" in text
    assert "| ratio | goal | measured alone |" in text
    alone = r"\| raw read \|.*\*\*9\.00x\*\* \| >= 2x \| 2026-12-01 on Intel Xeon \|"
    assert re.search(alone, text)
    assert re.search(r"\| write \|.*\*\*3\.00x\*\* \| >= 2x \|  \|", text)


def test_a_new_row_goes_after_the_row_measured_before_it(tmp_path, monkeypatch):
    monkeypatch.setattr(B.time, "strftime", lambda fmt: "2026-12-01")
    page = _page(tmp_path, "2026-11-25", [_row("a", 1.0), _row("b", 2.0), _row("c", 3.0)])
    run = [_row("new first", 0.5), _row("b", 4.0), _row("new after b", 5.0), _row("new", 6.0)]

    rows, *_ = B.merged(page, run, [None])

    assert [r.path for r in rows] == ["a", "b", "new after b", "new", "c", "new first"]


def test_rows_of_a_page_that_lists_its_partial_runs_get_the_date_of_the_last_run_matching():
    line = (
        "; rows matching `raw read|gzip` re-run alone on 2026-11-26"
        "; rows matching `raw read, ~100 B` re-run alone on 2026-11-27 on Intel(R) Xeon(R)"
        " Processor, 2 cores, Linux 6.1"
    )
    when = B.reruns(line)
    assert when("raw read, ~100 B records") == "2026-11-27 on Intel Xeon"
    assert when("raw read, ~100 KB records") == "2026-11-26"
    assert when("gzip raw read") == "2026-11-26"
    assert when("write from columns") == ""


def test_a_full_run_page_has_no_column_for_runs_alone(tmp_path):
    page = tmp_path / "benchmarks.md"
    B.write_doc(page, [_row("raw read", 2.0)], [], "2.x", 3, None, "Some CPU")
    text = page.read_text()
    assert "| ratio | goal |\n" in text
    assert "measured alone" not in text
