"""The paired table typeset for a paper: readable headers, intervals as "[lo, hi]", a note.

:func:`paper_table` renders comparison rows (:meth:`regrade.paired.tables.Comparison.as_row`)
as a LaTeX ``table`` (booktabs, caption above) or a Markdown table with a note below. The
note names everything a reader needs to judge the numbers: the baseline, the unit, the
interval and its level, the test and the correction with its family size. ``percent``
writes rates, delta and the interval in percentage points; otherwise they are fractions.

Columns are named by the comparison's field names (:data:`PAPER_HEADERS`), plus
``interval`` (both limits in one cell); ``stack`` and ``benchmark`` are left out of the
default columns when every row has the same one (the note names it instead).
"""

from __future__ import annotations


from regrade.render.rows import latex_escape

PAPER_FORMATS = ("latex", "markdown")

# field -> (header, kind); kind says how a value is written: text, count, rate, signed, p
PAPER_HEADERS: dict[str, tuple[str, str]] = {
    "stack": ("Stack", "text"),
    "benchmark": ("Benchmark", "text"),
    "condition": ("Condition", "text"),
    "baseline": ("Baseline", "text"),
    "grading": ("Grading", "text"),
    "n": ("N", "count"),
    "pass_rate_baseline": ("Baseline pass rate", "rate"),
    "pass_rate_treatment": ("Treatment pass rate", "rate"),
    "gains": ("Gains", "count"),
    "regressions": ("Regressions", "count"),
    "retained": ("Retained", "count"),
    "residual": ("Residual", "count"),
    "unpaired": ("Unpaired", "count"),
    "without_output": ("Without output", "count"),
    "original_from": ("Original grades", "text"),
    "net": ("Net", "signed-count"),
    "delta": ("Δ", "signed"),
    "interval": ("CI", "interval"),
    "ci_lower": ("CI lower", "signed"),
    "ci_upper": ("CI upper", "signed"),
    "p_value": ("p", "p"),
    "p_adjusted": ("Adjusted p", "p"),
    "regression_tax": ("Regression tax", "ratio"),
    "normalized_gain": ("Normalized gain", "ratio"),
    "trials_baseline": ("Baseline trials", "count"),
    "trials_treatment": ("Treatment trials", "count"),
    "noise_discordance": ("Noise discordance", "ratio"),
    "noise_gains": ("Noise gains", "ratio"),
    "noise_regressions": ("Noise regressions", "ratio"),
    "ci_method": ("Interval", "text"),
    "test": ("Test", "text"),
    "correction": ("Correction", "text"),
    "family_size": ("Family", "count"),
}
DEFAULT_PAPER_COLUMNS = ["stack", "benchmark", "condition", "grading", "n", "pass_rate_baseline", "pass_rate_treatment",
                         "gains", "regressions", "net", "delta", "interval", "p_value", "p_adjusted"]

INTERVAL_NAMES = {"newcombe": "Newcombe hybrid score interval (method 10)",
                  "wald": "paired Wald interval",
                  "normal": "normal interval of the mean paired difference"}
TEST_NAMES = {"exact": "exact", "mid-p": "mid-p"}
TEST_SOURCES = {"exact": "", "mid-p": " (Fagerland, Lydersen and Laake 2013)"}
CORRECTION_NAMES = {"bonferroni": "Bonferroni", "holm": "Holm"}


ORIGINAL_MEANINGS = {
    "run": "the run's own grades",
    "value-only": "the value-only grade (the benchmark's grader reading the cached values, as regrade reproduces it; "
                  "the run carries no grades of its own)",
    "mixed": "the run's own grades where it carries them, else the value-only grade as regrade reproduces it",
}


def original_from(rows: list[dict]) -> str:
    """What the rows' original grading is, together (:data:`ORIGINAL_MEANINGS`); rows of
    another grader's outcomes carry no such field: their grades are the run's own."""
    found = {r.get("original_from", "run") for r in rows}
    return found.pop() if len(found) == 1 else "mixed"


def paper_columns(rows: list[dict], chosen: list[str] | None = None) -> list[str]:
    """The columns to typeset: ``chosen`` as given, or the defaults without a constant stack or benchmark."""
    if chosen:
        return chosen
    constant = {c for c in ("stack", "benchmark") if len({r.get(c) for r in rows}) <= 1}
    return [c for c in DEFAULT_PAPER_COLUMNS if c not in constant]


def note(rows: list[dict], alpha: float, percent: bool, unit: str = "task") -> str:
    """One paragraph naming the baseline, the interval, the test and the correction."""
    if not rows:
        return "No comparisons."
    first = rows[0]
    scope = " / ".join(sorted({f"{r['stack']} / {r['benchmark']}" for r in rows}))
    level = f"{100 * (1 - alpha):g}%"
    points = "percentage points" if percent else "fractions"
    soft = first["ci_method"] == "normal"
    change = ("the mean change of each task's score (the fraction of its test cases that pass)" if soft
              else f"the change of pass rate, treatment minus baseline, over the N paired {unit}s")
    test = (f"two-sided {TEST_NAMES[first['test']]} {'sign' if soft else 'McNemar'} test{TEST_SOURCES[first['test']]}"
            f" on the discordant {unit}s")
    correction = first["correction"]
    adjusted = ("p is not adjusted for multiple comparisons" if correction == "none" else
                f"adjusted p: {CORRECTION_NAMES[correction]} over a family of {first['family_size']} comparisons "
                f"per grading")
    gradings = {r["grading"] for r in rows}
    graded = (f"Original: {ORIGINAL_MEANINGS[original_from(rows)]}; regraded: recomputed by full engines where they "
              "could decide. " if gradings == {"original", "regraded"} else "")
    return (f"{scope}, each condition against the baseline {first['baseline']}. {graded}"
            f"Rates, Δ and interval in {points}. Δ is {change}, with its {level} "
            f"{INTERVAL_NAMES[first['ci_method']]}; p: the {test}; {adjusted}.")


def paper_table(rows: list[dict], fmt: str, alpha: float = 0.05, percent: bool = False,
                columns: list[str] | None = None, unit: str = "task", remark: str = "") -> str:
    """The comparison rows as a LaTeX table or a Markdown table, each with its note (and
    ``remark`` after it: the table's channel, whether a refusal slice stands beside it)."""
    if fmt not in PAPER_FORMATS:
        raise ValueError(f"unknown paper format {fmt!r}; choose one of: {', '.join(PAPER_FORMATS)}")
    chosen = paper_columns(rows, columns)
    headers = [_header(c, rows, alpha) for c in chosen]
    texts = [[_value(c, row, percent) for c in chosen] for row in rows]
    caption = note(rows, alpha, percent, unit) + (f" {remark[0].upper()}{remark[1:]}." if remark else "")
    if fmt == "markdown":
        lines = ["| " + " | ".join(headers) + " |",
                 "|" + "|".join("---" if PAPER_HEADERS[c][1] == "text" else "---:" for c in chosen) + "|"]
        lines += ["| " + " | ".join(t) + " |" for t in texts]
        return "\n".join(lines) + f"\n\n*Note.* {caption}"
    align = "".join("l" if PAPER_HEADERS[c][1] == "text" else "r" for c in chosen)
    lines = ["\\begin{table}", "\\centering", f"\\caption{{{_latex_text(caption)}}}",
             f"\\begin{{tabular}}{{{align}}}", "\\toprule", " & ".join(_latex_text(h) for h in headers) + r" \\",
             "\\midrule"]
    lines += [" & ".join(_latex_text(v) for v in t) + r" \\" for t in texts]
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines)


def _header(column: str, rows: list[dict], alpha: float) -> str:
    header = PAPER_HEADERS[column][0]
    if column == "interval":
        return f"{100 * (1 - alpha):g}% CI"
    if column == "p_adjusted" and rows and rows[0]["correction"] != "none":
        return f"p ({CORRECTION_NAMES[rows[0]['correction']]})"
    return header


def _value(column: str, row: dict, percent: bool) -> str:
    kind = PAPER_HEADERS[column][1]
    if column == "interval":
        lower, upper = row.get("ci_lower"), row.get("ci_upper")
        if lower is None or upper is None:
            return "–"
        return f"[{_number(lower, percent, True)}, {_number(upper, percent, True)}]"
    value = row.get(column)
    if value is None:
        return "–"
    if kind == "text":
        return str(value)
    if kind == "count":
        return f"{value:g}" if isinstance(value, float) else str(value)
    if kind == "signed-count":
        return f"{value:+d}".replace("-", "−") if value else "0"
    if kind == "p":
        return "<0.001" if value < 0.001 else f"{value:.3f}"
    if kind == "ratio":
        return f"{value:.2f}"
    return _number(value, percent, kind == "signed")


def _number(value: float, percent: bool, signed: bool) -> str:
    scaled, digits = (100 * value, 1) if percent else (value, 3)
    text = f"{scaled:+.{digits}f}" if signed else f"{scaled:.{digits}f}"
    if float(text) == 0:  # no sign on a zero, whichever side it was rounded from
        text = f"{0:.{digits}f}"
    return text.replace("-", "−")


def _latex_text(text: str) -> str:
    """Escaped for LaTeX, with the Unicode signs written as LaTeX understands them everywhere."""
    escaped = latex_escape(text)
    return escaped.replace("Δ", r"$\Delta$").replace("−", "$-$").replace("–", "--")
