"""The Rust core's modules depend on each other one way: no cycle among them, counting a
parent module's uses of its children and their uses of it (`super::`), test modules aside."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "crates" / "core" / "src"

#: Where a path to another module starts: `crate::a::b`, `super::x`, or (inside a module)
#: the name of one of its own children.
PATH = re.compile(
    r"\b(crate|super(?:::super)*|self)::((?:[a-z_][a-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)"
)
GROUP = re.compile(r"\b(crate|super(?:::super)*|self)::((?:[a-z_][a-z0-9_]*::)*)\{([^}]*)\}")


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(SRC.rglob("*.rs")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] in ("mod", "lib"):
            parts.pop()
        found["::".join(parts)] = path
    return found


MODULES = _modules()


def _code(path: Path) -> str:
    """The module's code without comments, strings and `#[cfg(test)]` modules."""
    text = path.read_text()
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+\w+\s*(;|\{)", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        if m.group(1) == ";":
            i = m.end()
            continue
        depth, j = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def _test_modules(name: str, path: Path) -> set[str]:
    text = path.read_text()
    found = re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+(\w+)\s*;", text)
    return {f"{name}::{m}" if name else m for m in found}


TESTS = {t for name, path in MODULES.items() for t in _test_modules(name, path)}


def _resolve(name: str, base: str, rest: str) -> str | None:
    if base == "crate":
        start: list[str] = []
    elif base == "self":
        start = name.split("::") if name else []
    else:
        ups = base.count("super")
        parts = name.split("::") if name else []
        start = parts[: len(parts) - ups]
    segments = [s for s in rest.split("::") if s]
    target = start + segments
    while target and "::".join(target) not in MODULES:
        target.pop()
    found = "::".join(target)
    return found if found != name and found not in TESTS else None


def _uses(name: str, path: Path) -> set[str]:
    code = _code(path)
    found: set[str] = set()
    for m in GROUP.finditer(code):
        for item in m.group(3).split(","):
            item = item.strip().split(" as ")[0].split("::{")[0]
            if item and item != "self":
                found.add(_resolve(name, m.group(1), m.group(2) + item) or "")
            elif item == "self":
                found.add(_resolve(name, m.group(1), m.group(2)) or "")
    for m in PATH.finditer(code):
        found.add(_resolve(name, m.group(1), m.group(2)) or "")
    # A module's own children, named without a prefix.
    prefix = f"{name}::" if name else ""
    children = {
        m[len(prefix) :].split("::")[0]
        for m in MODULES
        if m.startswith(prefix) and m != name and "::" not in m[len(prefix) :]
    }
    for child in children:
        if f"{prefix}{child}" in TESTS:
            continue
        if re.search(rf"(?<![:\w]){child}::", code):
            found.add(f"{prefix}{child}")
    found.discard("")
    found.discard(name)
    return found


GRAPH = {name: _uses(name, path) for name, path in MODULES.items() if name and name not in TESTS}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph``, as the path that closes it, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_is_read():
    assert "parse" in GRAPH and "column" in GRAPH["parse"]
    assert "pipeline::readers" in GRAPH["pipeline::stages"]
    assert "pipeline::tests" in TESTS and "pipeline::tests" not in GRAPH


def test_the_cycle_finder_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_parents_and_children_count_both_ways():
    # A child's `super::` use of its parent, and the parent's use of the child.
    assert "pipeline::readers" in GRAPH["pipeline"]
    assert "image" in GRAPH["image::batch"] or "image::spec" in GRAPH["image::batch"]
    assert "pipeline::origin" in GRAPH["pipeline::stream"]


def test_no_module_cycle():
    cycle = _cycle(GRAPH)
    assert cycle is None, " -> ".join(cycle or [])
