"""The short text summary of a statistics report, for a terminal."""

from __future__ import annotations

from typing import Any


def num(x: Any) -> str:
    """A number for people: integers as they are, others to 4 significant digits."""
    if x is None:
        return "-"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.4g}"


def kind_of(feature: dict[str, Any]) -> str:
    kinds = feature["kinds"]
    return "/".join(sorted(kinds, key=lambda k: -kinds[k])) or "-"


def describe(feature: dict[str, Any]) -> str:
    """One line of what a feature's values look like."""
    if "numbers" in feature:
        n = feature["numbers"]
        q = n["quantiles"]
        parts = [
            f"min {num(n['min'])}",
            f"p50 {num(q.get('p50'))}",
            f"max {num(n['max'])}",
            f"mean {num(n['mean'])}",
            f"std {num(n['std'])}",
        ]
        if n["nan"]:
            parts.append(f"NaN {num(n['nan'])}")
        return "  ".join(parts)
    if "bytes" in feature:
        b = feature["bytes"]
        about = "" if b["distinct_exact"] else "~"
        parts = [f"distinct {about}{num(b['distinct'])}", f"length {num(b['mean_length'])}"]
        if "images" in b:
            i = b["images"]
            formats = ", ".join(f"{f} {num(c)}" for f, c in i["formats"].items())
            parts.append(f"images: {formats}")
            if i["sizes"]:
                w, h, _ = i["sizes"][0]
                parts.append(f"mostly {w}x{h}")
        elif b["top"]:
            t = b["top"][0]
            shown = repr(t["value"]) if t["value"] is not None else f"0x{t['hex'][:16]}"
            parts.append(f"top {shown[:40]} ({num(t['count'])})")
        return "  ".join(parts)
    return "no values"


def summary(report: dict[str, Any]) -> str:
    records = report["records"]
    splits = ", ".join(f"{name} ({num(s['records'])})" for name, s in report["splits"].items())
    lines = [
        f"{len(report['files'])} files, {num(records)} records, "
        f"{len(report['features'])} features; splits: {splits}"
    ]
    width = max((len(n) for n in report["features"]), default=0)
    for name, f in report["features"].items():
        share = f["present"] / records if records else 0.0
        lines.append(f"  {name:<{width}}  {kind_of(f):<6} present {share:6.1%}  {describe(f)}")
    if report["uncounted_features"]:
        lines.append(f"  (and {num(report['uncounted_features'])} uncounted feature values)")
    anomalies = report["anomalies"]
    if report["baseline"] is not None:
        lines.append(f"Anomalies against {report['baseline']}: {len(anomalies)}")
        lines.extend(f"  {a['kind']}: {a['message']}" for a in anomalies)
    return "\n".join(lines)
