"""The HTML report: one self-contained page, its plots drawn as inline SVG (no scripts,
fonts or anything else fetched)."""

from __future__ import annotations

from html import escape
from typing import Any

from .text import describe, kind_of, num

_W, _H = 560, 180
_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 980px;
       color: #1d2330; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { border-bottom: 1px solid #e3e6ee; padding: 3px 10px; text-align: left; }
th { background: #f3f5f9; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
section.feature { border: 1px solid #e3e6ee; border-radius: 6px; padding: 0 1em 1em;
                  margin: 1.2em 0; }
.kind { color: #5a6275; font-weight: normal; font-size: .8em; }
.anomaly { color: #9b2c1f; }
svg.plot { display: block; margin-top: .5em; }
svg.plot text { font: 11px system-ui, sans-serif; fill: #3a4152; }
.row { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.bar { fill: #4f7cc4; } .bar:hover { fill: #2d5aa0; }
"""


def _table(rows: list[tuple[str, Any]]) -> str:
    cells = "".join(
        f"<tr><th>{escape(k)}</th><td class='n'>{escape(str(v))}</td></tr>" for k, v in rows
    )
    return f"<table>{cells}</table>"


def _svg(name: str, title: str, body: str) -> str:
    return (
        f"<svg class='plot' data-feature='{escape(name, quote=True)}' width='{_W}' "
        f"height='{_H}' viewBox='0 0 {_W} {_H}' role='img' "
        f"aria-label='{escape(title, quote=True)}'>"
        f"<title>{escape(title)}</title>{body}</svg>"
    )


def _columns(name: str, title: str, labels: list[str], counts: list[float]) -> str:
    """Vertical bars, one per label, scaled to the largest count."""
    top = max(counts, default=0) or 1
    left, bottom, width = 64, _H - 30, _W - 74
    step = width / max(len(counts), 1)
    parts = [f"<text x='{left}' y='12'>{escape(title)}</text>"]
    for i, (label, c) in enumerate(zip(labels, counts, strict=True)):
        h = (bottom - 20) * c / top
        x = left + i * step
        parts.append(
            f"<rect class='bar' x='{x + 1:.1f}' y='{bottom - h:.1f}' "
            f"width='{max(step - 2, 1):.1f}' height='{h:.1f}'>"
            f"<title>{escape(label)}: {num(c)}</title></rect>"
        )
    if labels:
        parts.append(f"<text x='{left}' y='{_H - 12}'>{escape(labels[0])}</text>")
        parts.append(
            f"<text x='{left + width}' y='{_H - 12}' text-anchor='end'>{escape(labels[-1])}</text>"
        )
    parts.append(
        f"<text x='{left - 4}' y='{bottom - (bottom - 20) + 4}' text-anchor='end'>{num(top)}</text>"
    )
    parts.append(
        f"<line x1='{left}' y1='{bottom}' x2='{left + width}' y2='{bottom}' stroke='#8a93a6'/>"
    )
    return _svg(name, title, "".join(parts))


def _rows(name: str, title: str, labels: list[str], counts: list[float]) -> str:
    """Horizontal bars with their labels, for categories."""
    top = max(counts, default=0) or 1
    left, row = 190, (_H - 20) / max(len(counts), 1)
    parts = [f"<text x='0' y='12'>{escape(title)}</text>"]
    for i, (label, c) in enumerate(zip(labels, counts, strict=True)):
        y = 18 + i * row
        w = (_W - left - 70) * c / top
        shown = label if len(label) <= 28 else label[:27] + "…"
        parts.append(
            f"<text x='{left - 6}' y='{y + row * 0.7:.1f}' text-anchor='end'>{escape(shown)}</text>"
            f"<rect class='bar' x='{left}' y='{y + 1:.1f}' width='{max(w, 1):.1f}' "
            f"height='{max(row - 3, 1):.1f}'><title>{escape(label)}: {num(c)}</title></rect>"
            f"<text x='{left + w + 4:.1f}' y='{y + row * 0.7:.1f}'>{num(c)}</text>"
        )
    return _svg(name, title, "".join(parts))


def _top_label(t: dict[str, Any]) -> str:
    text = t["value"] if t["value"] is not None else "0x" + t["hex"]
    return text + ("…" if t["truncated"] else "")


def plot(name: str, f: dict[str, Any]) -> str:
    """The one plot that says most about a feature."""
    if "numbers" in f and f["numbers"]["histogram"]:
        hist = f["numbers"]["histogram"]
        labels = [f"{num(lo)} to {num(hi)}" for lo, hi, _ in hist]
        return _columns(name, "values (histogram)", labels, [c for _, _, c in hist])
    b = f.get("bytes")
    if b and "images" in b and b["images"]["sizes"]:
        sizes = b["images"]["sizes"][:10]
        return _rows(name, "image sizes", [f"{w}x{h}" for w, h, _ in sizes], [c for *_, c in sizes])
    if b and b["top"] and (b["top_exact"] or b["top"][0]["count"] > 1) and b["distinct"] <= 1000:
        return _rows(
            name,
            "most frequent values",
            [_top_label(t) for t in b["top"]],
            [t["count"] for t in b["top"]],
        )
    if b:
        hist = b["length_histogram"]
        labels = [f"{lo}-{hi} bytes" for lo, hi, _ in hist]
        return _columns(name, "value lengths (bytes)", labels, [c for *_, c in hist])
    lengths = f["list_lengths"]
    return _columns(name, "list lengths", [str(n) for n, _ in lengths], [c for _, c in lengths])


def _feature(name: str, f: dict[str, Any], report: dict[str, Any]) -> str:
    records = report["records"] or 1
    rows: list[tuple[str, Any]] = [
        ("present", f"{num(f['present'])} ({f['present'] / records:.1%})"),
        ("missing", num(f["missing"])),
        ("values", num(f["values"])),
        ("list lengths", ", ".join(f"{n}: {num(c)}" for n, c in f["list_lengths"][:8])),
    ]
    if "numbers" in f:
        n = f["numbers"]
        rows += [(k, num(n[k])) for k in ("min", "max", "mean", "std", "zeros", "nan", "infinite")]
    if "bytes" in f:
        b = f["bytes"]
        rows += [
            ("distinct", ("" if b["distinct_exact"] else "~") + num(b["distinct"])),
            (
                "length min / mean / max",
                f"{num(b['min_length'])} / {num(b['mean_length'])} / {num(b['max_length'])}",
            ),
        ]
        if "images" in b:
            i = b["images"]
            rows.append(("images", ", ".join(f"{k} {num(v)}" for k, v in i["formats"].items())))
            if i["undecodable"]:
                rows.append(("unreadable image headers", num(i["undecodable"])))
    quantiles = ""
    if "numbers" in f and f["numbers"]["count"]:
        q = f["numbers"]["quantiles"]
        head = "".join(f"<th>{escape(k)}</th>" for k in q)
        values = "".join(f"<td class='n'>{num(v)}</td>" for v in q.values())
        quantiles = f"<h4>Quantiles</h4><table><tr>{head}</tr><tr>{values}</tr></table>"
    splits = ""
    if len(report["splits"]) > 1:
        cells = []
        for split, s in report["splits"].items():
            g = s["features"].get(name)
            line = describe(g) if g else "absent"
            share = g["present"] / s["records"] if g and s["records"] else 0.0
            cells.append(
                f"<tr><th>{escape(split)}</th><td class='n'>{share:.1%}</td>"
                f"<td>{escape(line)}</td></tr>"
            )
        splits = f"<h4>By split</h4><table>{''.join(cells)}</table>"
    anomalies = "".join(
        f"<p class='anomaly'>{escape(a['kind'])}: {escape(a['message'])}</p>"
        for a in report["anomalies"]
        if a["feature"] == name
    )
    return (
        f"<section class='feature' id='feature-{escape(name, quote=True)}'>"
        f"<h3>{escape(name)} <span class='kind'>{escape(kind_of(f))}</span></h3>"
        f"{anomalies}<div class='row'>{plot(name, f)}{_table(rows)}</div>{quantiles}{splits}"
        "</section>"
    )


def render(report: dict[str, Any]) -> str:
    """The page for a report in the JSON layout."""
    splits = "".join(
        f"<tr><th>{escape(name)}</th><td class='n'>{len(s['files'])}</td>"
        f"<td class='n'>{num(s['records'])}</td></tr>"
        for name, s in report["splits"].items()
    )
    anomalies = report["anomalies"]
    found = "".join(
        f"<tr><td>{escape(a['kind'])}</td><td>{escape(a['feature'])}</td><td>{escape(a['split'])}</td>"
        f"<td>{escape(a['message'])}</td></tr>"
        for a in anomalies
    )
    anomaly_part = (
        f"<h2>Anomalies against {escape(str(report['baseline']))}</h2>"
        + (
            f"<table><tr><th>kind</th><th>feature</th><th>split</th><th>what</th></tr>{found}</table>"
            if anomalies
            else "<p>None found.</p>"
        )
        if report["baseline"] is not None
        else ""
    )
    features = "".join(_feature(name, f, report) for name, f in report["features"].items())
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>TFRecord statistics</title><style>{_STYLE}</style></head><body>"
        f"<h1>TFRecord statistics</h1><p>{num(report['records'])} records in "
        f"{len(report['files'])} files, {len(report['features'])} features.</p>"
        f"<table><tr><th>split</th><th>files</th><th>records</th></tr>{splits}</table>"
        f"{anomaly_part}<h2>Features</h2>{features}</body></html>"
    )
