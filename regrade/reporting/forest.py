"""The forest plot of a paired table: each comparison's delta and interval, original and regraded in one chart.

Drawn with matplotlib's SVG backend and returned as the text of an ``<svg>`` element, so a
page can hold it inline (no file, no network). The SVG is the same for the same rows: no
date in its metadata, a fixed hash salt for its ids, text kept as text (searchable, and
small).
"""

from __future__ import annotations

import io

STYLE = {"original": {"color": "#8a8a8a", "marker": "o", "label": "original grades"},
         "regraded": {"color": "#1f5fa8", "marker": "s", "label": "regraded"}}
OFFSET = {"original": 0.17, "regraded": -0.17}  # original above, regraded below on each row


def forest_svg(rows: list[dict], alpha: float = 0.05) -> str:
    """An SVG forest plot of comparison rows (:meth:`Comparison.as_row`), delta in percentage points."""
    # here, not at import: every other command starts without matplotlib. A Figure of its own,
    # not pyplot: a program that calls this keeps its own backend and figures.
    from matplotlib import rc_context
    from matplotlib.figure import Figure
    labels = _labels(rows)
    order = list(dict.fromkeys(labels))
    height = 1.1 + 0.55 * len(order)
    with rc_context({"svg.hashsalt": "regrade", "svg.fonttype": "none", "font.size": 10,
                         "font.family": "sans-serif"}):
        figure = Figure(figsize=(7.5, height))
        axes = figure.subplots()
        axes.axvline(0, color="#444444", linewidth=0.8, zorder=1)
        for grading, style in STYLE.items():
            chosen = [(labels[i], r) for i, r in enumerate(rows) if r["grading"] == grading]
            if not chosen:
                continue
            ys = [len(order) - 1 - order.index(label) + OFFSET[grading] for label, _ in chosen]
            deltas = [100 * r["delta"] for _, r in chosen]
            lower = [d - 100 * r["ci_lower"] if r["ci_lower"] is not None else 0 for d, (_, r) in zip(deltas, chosen)]
            upper = [100 * r["ci_upper"] - d if r["ci_upper"] is not None else 0 for d, (_, r) in zip(deltas, chosen)]
            axes.errorbar(deltas, ys, xerr=[lower, upper], fmt=style["marker"], color=style["color"],
                          ecolor=style["color"], elinewidth=1.6, capsize=3, markersize=6, label=style["label"],
                          zorder=2)
        axes.set_yticks(range(len(order)), list(reversed(order)))
        axes.set_ylim(-0.7, len(order) - 0.3)
        axes.set_xlabel(f"Δ pass rate, treatment − baseline (percentage points), {100 * (1 - alpha):g}% interval")
        axes.grid(axis="x", color="#e3e3e3", linewidth=0.6)
        axes.set_axisbelow(True)
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
        axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
        figure.tight_layout()
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # the element alone: no XML declaration or DOCTYPE inside HTML


def _labels(rows: list[dict]) -> list[str]:
    """Each row's condition, with its stack and benchmark where the rows have several."""
    several = len({(r["stack"], r["benchmark"]) for r in rows}) > 1
    return [f"{r['stack']} / {r['benchmark']} / {r['condition']}" if several else r["condition"] for r in rows]
