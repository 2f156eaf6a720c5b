"""Every docstring example in the package runs (those marked ``# doctest: +SKIP`` need
data, servers or optional libraries that a docstring cannot set up)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import numpy as np
import pytest
import tfrecordkit

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(tfrecordkit.__path__, "tfrecordkit.")
    # Imported on first use: each needs its optional library.
    if m.name
    not in (
        "tfrecordkit.integrations.ray",
        "tfrecordkit.integrations.beam",
        "tfrecordkit.conversion.beam_runner",
        # Run the command when imported.
        "tfrecordkit.__main__",
        "tfrecordkit.cli.__main__",
    )
)


def test_modules_are_found() -> None:
    assert len(MODULES) >= 30 and "tfrecordkit.io.paths" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS
        | doctest.NORMALIZE_WHITESPACE
        | doctest.IGNORE_EXCEPTION_DETAIL
    )
    # As a user runs them: after ``import numpy as np, tfrecordkit as tfr`` and
    # ``from tfrecordkit import *``, with the module's own names.
    public = {n: getattr(tfrecordkit, n) for n in tfrecordkit.__all__}
    globs = {**public, "tfr": tfrecordkit, "tfrecordkit": tfrecordkit, "np": np}
    for test in finder.find(module, name, globs={**globs, **vars(module)}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


@pytest.mark.parametrize("name", MODULES)
def test_skipped_examples_name_what_exists(name: str) -> None:
    # Examples that cannot run still name real things: every ``tfr.a`` and ``tfr.a.b``.
    import re

    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    for test in finder.find(module, name):
        for example in test.examples:
            if not example.options.get(doctest.SKIP):
                continue
            for first, second in re.findall(r"\btfr\.(\w+)(?:\.(\w+))?", example.source):
                assert hasattr(tfrecordkit, first), f"{test.name}: tfr.{first}"
                if second:
                    owner = getattr(tfrecordkit, first)
                    assert hasattr(owner, second), f"{test.name}: tfr.{first}.{second}"
