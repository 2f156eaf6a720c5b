"""The package's layering: imports flow one way, with no cycle, not even through imports
inside functions (``TYPE_CHECKING`` imports aside); leaves import no other module of the
package; adapters use only the public ``Dataset`` API."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import tfrecordkit

PACKAGE = Path(tfrecordkit.__file__).parent
ROOT = "tfrecordkit"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path) -> set[str]:
    """The package modules ``name`` imports anywhere in its body."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(target: str) -> None:
        # The module itself, or the nearest package module holding the name.
        if target == f"{ROOT}._core" or target.startswith(f"{ROOT}._core."):
            found.add(f"{ROOT}._core")
            return
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == ROOT:
                        resolve(alias.name)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module or ""
                if module.split(".")[0] != ROOT:
                    continue
                for alias in child.names:
                    resolve(f"{module}.{alias.name}")
            visit(child)

    visit(tree)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    return cycles


def test_the_graph_is_read():
    # The checks below mean something only if imports are found at all.
    assert "tfrecordkit.schema.reading" in GRAPH["tfrecordkit.pipeline.dataset"]
    assert "tfrecordkit.io.paths" in GRAPH["tfrecordkit.io.records"]
    assert len(GRAPH) >= 25


def test_no_import_cycle():
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


LEAVES = {
    "tfrecordkit.errors": set(),
    "tfrecordkit.io.paths": {"tfrecordkit.errors"},
    "tfrecordkit.io.policy": {"tfrecordkit.errors"},
    "tfrecordkit.io.reports": {"tfrecordkit.errors"},
    "tfrecordkit.io.sidecars": {"tfrecordkit.errors", "tfrecordkit.io.paths"},
    "tfrecordkit.schema.values": set(),
    "tfrecordkit.schema.features": {
        "tfrecordkit.errors",
        "tfrecordkit._core",
        "tfrecordkit.schema.values",
    },
    "tfrecordkit.datasets.manifest": {
        "tfrecordkit._core",
        "tfrecordkit.io.paths",
        "tfrecordkit.io.sidecars",
        "tfrecordkit.errors",
        "tfrecordkit.schema.features",
    },
    "tfrecordkit.pipeline.cache_format": {"tfrecordkit.schema.values"},
    "tfrecordkit.io.options": {
        "tfrecordkit.io.paths",
        "tfrecordkit.io.policy",
        "tfrecordkit.io.reports",
    },
    "tfrecordkit.schema.guess": {
        "tfrecordkit.errors",
        "tfrecordkit.io.paths",
        "tfrecordkit.schema.features",
    },
    "tfrecordkit.integrations.tfds_features": {"tfrecordkit.schema.features"},
    "tfrecordkit.schema.arrow": {"tfrecordkit.errors", "tfrecordkit.schema.features"},
}


#: The layers, lowest first: a package imports only from its own layer or lower ones.
LAYERS = {
    "errors": 0,
    "io": 0,
    "_renamed": 0,
    "schema": 1,
    "image": 1,
    "pipeline": 2,
    "datasets": 2,
    "statistics": 2,
    "integrations": 3,
    "conversion": 3,
    "cli": 4,
    "__main__": 4,
}
#: Where a lower layer reaches up, each for a reason: ``RecordWriter.write_examples``
#: encodes tables, and ``Dataset.to_torch`` / ``to_tf`` / ``to_jax`` / ``to_arrow`` are the
#: entry points to their adapters (imported when called).
UPWARD = {
    ("tfrecordkit.io.records", "tfrecordkit.schema.columns"),
    *(
        ("tfrecordkit.pipeline.dataset", f"tfrecordkit.integrations.{name}")
        for name in ("torch", "tf", "jax", "arrow_batches")
    ),
}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS[parts[1]] if len(parts) > 1 and parts[1] != "_core" else None


def test_the_upward_imports_allowed_are_real():
    # The check below sees them (so it sees imports inside functions), and none is stale.
    assert all(d in GRAPH[m] for m, d in UPWARD)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m) is not None))
def test_imports_flow_down_the_layers(module):
    upward = [
        d
        for d in GRAPH[module]
        if (_layer(d) is None and d != "tfrecordkit._core")
        or (_layer(d) or 0) > (_layer(module) or 0)
    ]
    assert sorted(set(upward) - {d for m, d in UPWARD if m == module}) == []


@pytest.mark.parametrize("module", sorted(LEAVES))
def test_leaves_import_only_leaves(module):
    assert GRAPH[module] <= LEAVES[module]


@pytest.mark.parametrize(
    "module",
    [f"tfrecordkit.integrations.{name}" for name in ("torch", "jax", "tf", "arrow_batches")],
)
def test_adapters_use_the_public_dataset_api(module):
    tree = ast.parse(MODULES[module].read_text())
    private = [
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id == "self")
    ]
    assert private == []
    assert "tfrecordkit.pipeline.plan" not in GRAPH[module]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_readable(module):
    assert len(MODULES[module].read_text().splitlines()) <= 700
