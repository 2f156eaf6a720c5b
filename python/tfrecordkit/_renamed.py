"""Arguments and modules that were renamed: the old spelling keeps working, with a
warning."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any


def renamed(call: str, now: str, value: Any, before: str, old: Any, why: str) -> Any:
    """The value of argument ``now`` of ``call``, or of its deprecated spelling ``before``
    (``old``, None when not given) with a ``DeprecationWarning`` that says ``why``; both
    given is a ``TypeError``."""
    if old is None:
        return value
    if value is not None:
        raise TypeError(f"{call}() takes {now}=, not also {before}=")
    warnings.warn(f"{call}({before}=) is now {call}({now}=): {why}", DeprecationWarning, 3)
    return old


#: Modules that moved into the concept packages: old name → new name, relative to the
#: package. (``verify`` is not among them: importing a module by that name would replace
#: the function ``tfr.verify``.)
MOVED_MODULES = {
    "records": "io.records",
    "options": "io.options",
    "reports": "io.reports",
    "index": "datasets.index",
    "tensors": "schema.values",
    "sequence": "schema.sequence",
    "example": "schema.example",
    "arrow_layout": "schema.arrow",
    "table": "schema.columns",
    "dataset": "pipeline.dataset",
    "writer": "datasets.writer",
    "commit": "datasets.commit",
    "manifest": "datasets.manifest",
    "indexed": "datasets.random_access",
    "arrow": "integrations.arrow",
    "ray": "integrations.ray",
    "tfds": "integrations.tfds",
    "beam": "integrations.beam",
    "adapters": "integrations",
    "adapters.torch": "integrations.torch",
    "adapters.jax": "integrations.jax",
    "adapters.tf": "integrations.tf",
    "adapters.arrow": "integrations.arrow_batches",
    "conversion.beam": "conversion.beam_runner",
}


class _MovedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a module by its old name as the module it became, with a warning."""

    def __init__(self, package: str) -> None:
        self.package = package
        # The import system sets the module's __spec__ to the old name's: it is put back.
        self.specs: dict[str, Any] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        old = fullname.removeprefix(f"{self.package}.")
        if old == fullname or old not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: Any) -> ModuleType:
        old = spec.name.removeprefix(f"{self.package}.")
        new = f"{self.package}.{MOVED_MODULES[old]}"
        warnings.warn(f"{spec.name} is now {new}", DeprecationWarning, 2)
        module = importlib.import_module(new)
        self.specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.specs.pop(module.__name__, module.__spec__)


def alias_moved_modules(package: str) -> None:
    """Lets the old names of ``package``'s moved modules be imported (deprecated)."""
    if not any(isinstance(f, _MovedModule) for f in sys.meta_path):
        # First: a moved package's old name must not reach its new directory.
        sys.meta_path.insert(0, _MovedModule(package))
