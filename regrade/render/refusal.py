"""A refusal slice's figures as text: one row per condition, each rate with its interval, the
covariates' medians beside them (``–`` where no attempt logged one, never 0)."""

from __future__ import annotations

from typing import Any

from regrade.paired.refusal import COVARIATES, REFUSAL_FIELDS
from regrade.render.rows import latex_escape, render

REFUSAL_COLUMNS = ["stack", "benchmark", "condition", *REFUSAL_FIELDS]
SHORT = {"success_rate": "success", "original_success_rate": "success (original)",
         "abstention_accuracy": "abstention", "invalid_completion_rate": "invalid completion",
         "false_abstain_rate": "false abstain"}


def refusal_text(rows: list[dict[str, Any]], fmt: str) -> str:
    """The figures as ``fmt`` (table, markdown, latex, csv or json): each rate as ``0.70 [0.40,
    0.89]`` in the text formats, every field apart in csv and json."""
    if fmt in ("csv", "json"):
        return render(REFUSAL_COLUMNS, rows, fmt)
    headers = ["condition", "channel", "ordinary", "negative", *SHORT.values(), "no trace",
               *(f"{name} (median)" for name in COVARIATES)]
    texts = [[str(r["condition"]), str(r["channel"]), str(r["ordinary"]), str(r["negative"]),
              *(_rate(r, name) for name in SHORT), str(r["no_trace"]),
              *("–" if r[f"{name}_median"] is None else f"{r[f'{name}_median']:g}" for name in COVARIATES)]
             for r in rows]
    if fmt == "latex":
        lines = ["\\begin{tabular}{" + "l" * 2 + "r" * (len(headers) - 2) + "}", "\\toprule",
                 " & ".join(latex_escape(h) for h in headers) + r" \\", "\\midrule",
                 *(" & ".join(latex_escape(v).replace("–", "--") for v in t) + r" \\" for t in texts),
                 "\\bottomrule", "\\end{tabular}"]
        return "\n".join(lines)
    return render(headers, [dict(zip(headers, t)) for t in texts], "markdown" if fmt == "markdown" else "table")


def _rate(row: dict[str, Any], name: str) -> str:
    if row[name] is None:
        return "–"
    interval = row[f"{name}_interval"]
    return f"{row[name]:.2f} [{interval[0]:.2f}, {interval[1]:.2f}]"
