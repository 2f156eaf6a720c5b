#!/usr/bin/env bash
# Builds the documentation site into site/: installs the package with its [docs] extra into
# .venv (compiling the extension, as the README's install command does), then runs
# `mkdocs build --strict`, which fails on any warning (a broken link, a reference to no
# object). The site works offline: open site/index.html in a browser. Only its search needs
# a server (a browser runs no web worker from file://).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet ".[docs]"
# Material for MkDocs prints a notice about MkDocs 2 on every build; it changes nothing here.
NO_MKDOCS_2_WARNING=1 "$VENV/bin/python" -m mkdocs build --strict --site-dir site
echo
echo "Open $(pwd)/site/index.html"
echo "(the search box needs the site served: $VENV/bin/python -m http.server -d site)"
