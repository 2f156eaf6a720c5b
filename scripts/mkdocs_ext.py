"""Extensions for the documentation site (mkdocs.yml names this file twice).

- ``SphinxRoles``, a griffe extension for mkdocstrings: the package's docstrings are written
  for reading in a terminal, with Sphinx roles (``:func:`write_dataset```) and doctest
  examples. It turns each role into a cross-reference to the object's entry in the API
  reference (plain code where the object has none), and each run of doctest lines into a
  ``pycon`` code block, without its ``# doctest:`` directives. It also makes
  ``tfrecordkit.ray`` visible to griffe: the package imports that module on first use
  only, through a module ``__getattr__``, which static analysis cannot follow.
- ``on_page_markdown``, an MkDocs hook: on the guide and the other prose pages, the first
  inline mention of each ``tfr.NAME`` links to NAME's entry in the API reference.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|data|exc|mod|obj):`(~?)([^`]+)`")
_DIRECTIVE = re.compile(r"\s*#\s*doctest:.*$")
#: Special methods with a place in the reference: what ``len()``, ``iter()``, ``x[i]`` and
#: ``x()`` do. The rest (``__repr__``, ``__enter__``...) are left out.
_DUNDERS_SHOWN = {"__init__", "__len__", "__iter__", "__getitem__", "__call__"}


def _autoref(identifier: str, title: str) -> str:
    # "optional": an object without an entry of its own shows as code, with no warning.
    return (
        f'<autoref identifier="{html.escape(identifier)}" optional>'
        f"<code>{html.escape(title)}</code></autoref>"
    )


def _identifier(obj: griffe.Object, name: str) -> str:
    if name.startswith("tfrecordkit."):
        return name
    if name.startswith("."):  # a module relative to the package (:mod:`.rows`)
        package = obj.module if obj.module.is_package else obj.module.parent
        return f"{package.path if package else obj.module.path}{name}"
    first, _, rest = name.partition(".")
    try:
        path = obj.resolve(first)
    except Exception:  # a name griffe cannot place: left as it is written
        return name
    return f"{path}.{rest}" if rest else path


def _roles(obj: griffe.Object, text: str) -> str:
    def link(match: re.Match[str]) -> str:
        short, name = match.groups()
        title = name.rsplit(".", 1)[-1] if short else name
        return _autoref(_identifier(obj, name.lstrip("~")), title)

    return _ROLE.sub(link, text)


def _doctests(text: str) -> str:
    """Each run of ``>>>`` lines with their continuations and output (up to a blank line) as
    a fenced ``pycon`` block."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.lstrip().startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(line.lstrip())]
        block = []
        while i < len(lines) and lines[i].strip():
            block.append(_DIRECTIVE.sub("", lines[i].removeprefix(indent)))
            i += 1
        if out and out[-1].strip():
            out.append("")
        out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```", ""]
    return "\n".join(out).rstrip("\n")


class SphinxRoles(griffe.Extension):
    """Sphinx roles as cross-references, doctests as code blocks, ``tfrecordkit.ray`` and
    ``tfrecordkit.spark``, and
    only the special methods worth reading."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **_: Any) -> None:
        if pkg.path != "tfrecordkit":
            return
        for lazy in ("ray", "spark"):  # imported on first use: see tfrecordkit.__getattr__
            if lazy not in pkg.members:
                target = f"tfrecordkit.integrations.{lazy}"
                pkg.set_member(lazy, griffe.Alias(lazy, target, parent=pkg))
        seen: set[str] = set()

        def visit(obj: griffe.Object) -> None:
            if obj.path in seen:
                return
            seen.add(obj.path)
            if obj.docstring is not None:
                obj.docstring.value = _doctests(_roles(obj, obj.docstring.value))
            for name in [n for n in obj.members if obj.is_class and n.startswith("__")]:
                if name not in _DUNDERS_SHOWN:
                    obj.del_member(name)
            for member in obj.members.values():
                if not member.is_alias:
                    visit(member)

        visit(pkg)


# The MkDocs hook.

_FENCE = re.compile(r"^\s*(```|~~~)")
_TFR = re.compile(r"(?<![\[\w])`(tfr\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)[^`\n]*)`")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if page.file.src_uri.startswith("reference/"):
        return markdown
    linked: set[str] = set()

    def link(match: re.Match[str]) -> str:
        code, dotted = match.groups()
        identifier = f"tfrecordkit.{dotted}"
        if identifier in linked:
            return match.group(0)
        linked.add(identifier)
        return _autoref(identifier, code)

    out, fenced = [], False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        out.append(line if fenced else _TFR.sub(link, line))
    return "\n".join(out)
