"""Modules that moved into the concept packages still import by their old names, as the
same module, with a ``DeprecationWarning`` naming the new one."""

from __future__ import annotations

import importlib
import sys

import pytest
import tfrecordkit as tfr
from tfrecordkit._renamed import MOVED_MODULES


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_module_name_imports_the_new_module(old):
    new = f"tfrecordkit.{MOVED_MODULES[old]}"
    parent = old.rpartition(".")[0]
    if parent in MOVED_MODULES and f"tfrecordkit.{parent}" not in sys.modules:
        with pytest.warns(DeprecationWarning):
            importlib.import_module(f"tfrecordkit.{parent}")
    sys.modules.pop(f"tfrecordkit.{old}", None)
    with pytest.warns(DeprecationWarning, match=f"tfrecordkit.{old} is now {new}"):
        module = importlib.import_module(f"tfrecordkit.{old}")
    assert module is importlib.import_module(new)
    # The module keeps its own name and spec: its relative imports still work.
    assert module.__name__ == new and module.__spec__.name == new


def test_old_names_of_public_objects_are_the_same_objects():
    for old in ("records", "writer"):
        sys.modules.pop(f"tfrecordkit.{old}", None)
    with pytest.warns(DeprecationWarning):
        from tfrecordkit.records import read_records
        from tfrecordkit.writer import write_dataset
    assert read_records is tfr.read_records and write_dataset is tfr.write_dataset
    from tfrecordkit.schema import FixedLen, Ragged

    assert FixedLen is tfr.FixedLen and Ragged is tfr.Ragged


def test_old_module_names_leave_the_public_functions_alone():
    for old in MOVED_MODULES:
        sys.modules.pop(f"tfrecordkit.{old}", None)
        with pytest.warns(DeprecationWarning):
            importlib.import_module(f"tfrecordkit.{old}")
    assert callable(tfr.verify) and callable(tfr.read_records)
    assert tfr.tfds is importlib.import_module("tfrecordkit.integrations.tfds")


def test_names_that_never_existed_still_fail():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tfrecordkit.no_such_module")
