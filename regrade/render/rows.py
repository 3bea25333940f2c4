"""Rendering rows of data as a terminal table, CSV, JSON or Markdown.

Every renderer takes the same input: a list of column names and a list of rows
(dicts). JSON output is wrapped with a format version and, where known, provenance.
"""

from __future__ import annotations

import csv
import io
import json
import re

FORMATS = ("table", "json", "csv", "markdown")
TABLE_FORMATS = (*FORMATS, "latex")  # the paired table is also typeset for papers (regrade.render.paper)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def render(columns: list[str], rows: list[dict], fmt: str, meta: dict | None = None) -> str:
    if fmt == "json":
        payload = {"format_version": 1, **(meta or {}), "rows": [{c: r.get(c) for c in columns} for r in rows]}
        return json.dumps(payload, indent=2, ensure_ascii=False, default=str)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue().rstrip("\n")
    texts = [[_cell(r.get(c)) for c in columns] for r in rows]
    if fmt == "markdown":
        lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
        lines += ["| " + " | ".join(t) + " |" for t in texts]
        return "\n".join(lines)
    if fmt == "table":
        widths = [max([len(c)] + [len(t[i]) for t in texts]) for i, c in enumerate(columns)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(v.rjust(w) if _numeric(v) else v.ljust(w) for v, w in zip(t, widths)).rstrip() for t in texts]
        return "\n".join(lines)
    raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")


_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return re.sub(r"[\\&%$#_{}~^]", lambda m: _LATEX_ESCAPES[m.group(0)], text)


def _numeric(text: str) -> bool:
    return text.replace(".", "", 1).lstrip("-+").isdigit()
