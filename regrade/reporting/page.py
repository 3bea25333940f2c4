"""A :class:`~regrade.reporting.content.Report` as one self-contained HTML page.

Everything is inline: the stylesheet and the script (``assets/``), the forest plot as SVG.
The page fetches nothing. Its tables are plain HTML, complete with the script off; the
script only adds sorting (click a header) and filters (by condition, verdict, reason).
Every text from a results file is escaped: a formula or a path an agent wrote is data.
"""

from __future__ import annotations

import json
import re
from html import escape
from importlib.resources import files
from pathlib import Path

from regrade.grading.reasons import TRANSITION_MEANINGS, meaning
from regrade.grading.verdicts import SLICE_VERDICTS
from regrade.paired.refusal import COVARIATES
from regrade.render.refusal import SHORT
from regrade.results.summary import summarise
from regrade.render.paper import note
from regrade.reporting.content import Report, case_anchor, reason_meanings
from regrade.results.records import CaseRecord
from regrade.reporting.forest import forest_svg
from regrade.results.files import atomic_file

MAX_CELLS_SHOWN = 200  # per case; the rest are counted, and `regrade diff --cells` lists them all
SIDE = ["pass_rate_baseline", "pass_rate_treatment", "gains", "regressions", "net", "delta", "interval", "p_value",
        "p_adjusted"]
LOCAL_SETTINGS = ("cache",)  # settings that say where this machine keeps things: left out of a page to share


def write_page(report: Report, path: Path, title: str = "regrade report") -> int:
    """Write the page to ``path`` atomically; returns its size in bytes."""
    text = render_page(report, title)
    with atomic_file(path) as handle:
        handle.write(text)
    return len(text.encode())


def render_page(report: Report, title: str = "regrade report") -> str:
    """The whole page as text."""
    assets = files("regrade.reporting") / "assets"
    css, script = (assets / "report.css").read_text(), (assets / "report.js").read_text()
    sections = [_summary(report), _refusal(report), _provenance(report), _verdicts(report), _not_judged(report),
                _comparisons(report), _changed(report), _cases(report), _meanings(report)]
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # nothing may be fetched: no network, no other file (a page opened from a mail or a share)
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">",
        f"<title>{escape(title)}</title>", f"<style>\n{css}</style>", "</head>", "<body>",
        f"<h1>{escape(title)}</h1>",
        '<nav><a href="#refusal">refusal slice</a><a href="#provenance">provenance</a><a href="#verdicts">verdicts</a>'
        '<a href="#not-judged">not judged</a><a href="#comparisons">paired table</a><a href="#changed">changed tasks</a><a href="#cases">cases</a>'
        '<a href="#reasons">reasons</a></nav>',
        *sections, f"<script>\n{script}</script>", "</body>", "</html>", ""])


def _summary(report: Report) -> str:
    records = report.records
    failures = sum(r.shallow_pass is False and r.verdict not in SLICE_VERDICTS for r in records)
    artifacts = sum(r.verdict == "artifact" for r in records)
    false_passes = sum(r.verdict == "false-pass" for r in records)
    not_judged = sum(count for _, count in report.not_judged())
    scope = f"{escape(report.scope)}: " if report.scope else ""
    summary = summarise(records, left_out=report.left_out())
    own = f" {escape(summary.own.line)}" if summary.own is not None else ""
    extra = own + "".join(f" {escape(line)}" for line in summary.broken_and_left_out())
    return (f'<p class="lede">{scope}{len(records)} cases in {len(report.conditions)} conditions from '
            f"{len(report.sources)} results file{'s' if len(report.sources) != 1 else ''}. "
            f"<strong>{artifacts} of {failures} value-only failures were grader artifacts</strong> (correct when "
            f"recomputed); {false_passes} value-only passes were wrong; {not_judged} cases could not be judged."
            f"{extra}</p>"
            + "".join(f'<p class="note">{escape(w)}</p>' for w in report.warnings))


def _provenance(report: Report) -> str:
    rows = []
    for source in report.sources:
        p = source.provenance
        settings = ", ".join(f"{k}={_plain(v)}" for k, v in sorted((p.get("settings") or {}).items())
                             if k not in LOCAL_SETTINGS)
        engines = ", ".join(f"{name}: {version}" for name, version in sorted(source.engines.items()))
        inputs = p.get("inputs") or {}
        listed = "".join(f"<tr><td><code>{escape(path)}</code></td><td><code>{escape(str(digest))}</code></td></tr>"
                         for path, digest in sorted(inputs.items()))
        rows.append(
            f"<tr><td><code>{escape(source.path)}</code></td><td>{escape(str(p.get('regrade_version', '-')))}"
            f"{' (' + escape(str(p['git_revision'])[:12]) + ')' if p.get('git_revision') else ''}</td>"
            f"<td>{escape(str(p.get('created', '-')))}</td><td>{escape(engines)}</td><td>{escape(settings)}</td>"
            f'<td class="num">{source.cases}</td>'
            f"<td><details><summary>{len(inputs)} inputs, sha256 <code>{source.inputs_digest[:16]}</code>"
            f"</summary><table><tbody>{listed}</tbody></table></details></td></tr>")
    return _section("provenance", "Provenance",
                    '<p class="note">Each results file: the regrade that made it, when, its engines and their '
                    "versions, its settings, and the sha256 of every input file (the digest over them all in the "
                    "summary).</p>"
                    "<table><thead><tr><th>results file</th><th>regrade</th><th>created</th><th>engines</th>"
                    '<th>settings</th><th class="num">cases</th><th>inputs</th></tr></thead>'
                    f"<tbody>{''.join(rows)}</tbody></table>")


def _verdicts(report: Report) -> str:
    counts = report.verdict_counts()
    head = "".join(f'<th class="num">{escape(v)}</th>' for v in report.shown_verdicts)
    body = "".join(
        f"<tr>{_key_cells(report, r)}<td>{escape(r['condition'])}</td>"
        f'<td class="num">{r["cases"]}</td>' + "".join(f'<td class="num">{r[v]}</td>' for v in report.shown_verdicts)
        + "</tr>"
        for r in counts)
    return _section("verdicts", "Verdicts per condition",
                    f'<div class="wide"><table class="sortable"><thead><tr>{_key_heads(report)}<th>condition</th>'
                    f'<th class="num">cases</th>{head}</tr></thead><tbody>{body}</tbody></table></div>')


def _not_judged(report: Report) -> str:
    reasons = report.not_judged()
    left_out = "".join(
        f'<details class="note"><summary>{len(tasks)} tasks of the dataset were not graded '
        f'({escape(why.replace("_", " "))})</summary><p>{escape(", ".join(tasks))}</p></details>'
        for why, tasks in report.left_out().items())
    if not reasons:
        return _section("not-judged", "What could not be judged", f"<p>Every case was judged.</p>{left_out}")
    listed = "".join(f'<tr><td>{escape(reason)}</td><td class="num">{count}</td></tr>' for reason, count in reasons)
    cases = "".join(
        f'<tr><td>{escape(r.condition)}</td><td><a href="#{case_anchor(r)}">{escape(r.task_id)}/{r.case}</a>'
        f'</td><td>{_verdict(r.verdict)}</td><td>{escape(", ".join(r.reasons))}</td>'
        f'<td>{escape(r.message)}</td></tr>' for r in report.not_judged_cases())
    return _section("not-judged", "What could not be judged",
                    "<table><thead><tr><th>reason</th><th class=\"num\">cases</th></tr></thead>"
                    f"<tbody>{listed}</tbody></table>"
                    '<table class="sortable"><thead><tr><th>condition</th><th>case</th><th>verdict</th><th>reasons</th>'
                    f"<th>message</th></tr></thead><tbody>{cases}</tbody></table>{left_out}")


def _refusal(report: Report) -> str:
    """The refusal slice's figures per condition, each rate with its interval and count, the
    covariates beside them; or that there is no refusal slice (the rates carry no abstention figures)."""
    caption = f'<p class="note">{escape(report.caption[0].upper() + report.caption[1:])}.</p>'
    if not report.refusal:
        return _section("refusal", "Refusal slice", caption)
    heads = "".join(f'<th class="num">{escape(h)}</th>' for h in (
        "ordinary", "negative", *SHORT.values(), "no trace", *(f"{c} (median)" for c in COVARIATES)))
    body = []
    for row in report.refusal:
        rates = "".join(f'<td class="num">{_rate_cell(row, name)}</td>' for name in SHORT)
        covariates = "".join(f'<td class="num">{_median(row[c + "_median"])}</td>' for c in COVARIATES)
        body.append(f'<tr data-condition="{escape(row["condition"])}">{_key_cells(report, row)}'
                    f'<td>{escape(row["condition"])}</td><td>{escape(row["channel"])}</td>'
                    f'<td class="num">{row["ordinary"]}</td><td class="num">{row["negative"]}</td>{rates}'
                    f'<td class="num">{row["no_trace"]}</td>{covariates}</tr>')
    table = (f'<div class="wide"><table class="sortable refusal"><thead><tr>{_key_heads(report)}<th>condition</th>'
             f"<th>channel</th>{heads}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")
    return _section("refusal", "Refusal slice: success with its abstention figures",
                    table + caption + '<p class="note">Each rate with its Wilson 95% interval and count; success: '
                    "ordinary tasks whose every test case passes the full grade (original: the value-only grade); "
                    "abstention: negative controls where every case stopped with no output; invalid completion: "
                    "negative controls with an output; false abstain: ordinary tasks with an abstention. A covariate "
                    "no attempt logged is shown as –, never 0.</p>")


def _median(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _rate_cell(row: dict, name: str) -> str:
    if row[name] is None:
        return "–"
    lower, upper = row[f"{name}_interval"]
    return f"{row[name]:.2f} <small>[{lower:.2f}, {upper:.2f}] ({row[f'{name}_count']})</small>"


def _comparisons(report: Report) -> str:
    rows = report.comparisons
    if not rows:
        return _section("comparisons", "Paired table", "<p>No condition to pair against the baseline.</p>")
    by_key: dict[tuple, dict[str, dict]] = {}
    for row in rows:
        by_key.setdefault((row["stack"], row["benchmark"], row["condition"]), {})[row["grading"]] = row
    names = {"pass_rate_baseline": f"{escape(report.baseline)} %", "pass_rate_treatment": "pass %",
             "gains": "gains", "regressions": "regr.", "net": "net", "delta": "Δ",
             "interval": f"{100 * (1 - report.alpha):g}% CI", "p_value": "p", "p_adjusted": "adjusted p"}
    leaf = "".join(f'<th class="num{" split" if i == 0 else ""}">{names[c]}</th>' for grading in ("original", "regraded")
                   for i, c in enumerate(SIDE))
    body = []
    for (stack, benchmark, condition), gradings in sorted(by_key.items()):
        first = next(iter(gradings.values()))
        cells = "".join(_side(gradings.get(grading)) for grading in ("original", "regraded"))
        body.append(f'<tr class="comparison" data-condition="{escape(condition)}">'
                    f"{_key_cells(report, {'stack': stack, 'benchmark': benchmark})}<td>{escape(condition)}</td>"
                    f'<td class="num">{first["n"]}</td>{cells}</tr>')
    span = len(SIDE)
    table = ('<div class="wide"><table class="sortable comparisons"><thead>'
             f'<tr><th colspan="{2 + len(report.varying)}"></th>'
             f'<th class="group split" colspan="{span}">original grades</th>'
             f'<th class="group split" colspan="{span}">regraded</th></tr>'
             f'<tr>{_key_heads(report)}<th>condition</th><th class="num">n</th>{leaf}</tr></thead>'
             f"<tbody>{''.join(body)}</tbody></table></div>")
    warned = "".join(f'<p class="note">{escape(w)}</p>' for w in report.pairing_warnings)
    return _section("comparisons", "Paired table against the baseline",
                    f'<div class="figure">{_clean_svg(forest_svg(rows, report.alpha))}</div>{table}'
                    f'<p class="note">{escape(note(rows, report.alpha, percent=True))}</p>{warned}')


def _side(row: dict | None) -> str:
    if row is None:
        return "".join('<td class="num">–</td>' for _ in SIDE)
    interval = ("–" if row["ci_lower"] is None else
                f"[{_points(row['ci_lower'])}, {_points(row['ci_upper'])}]")
    values = {"pass_rate_baseline": f"{100 * row['pass_rate_baseline']:.1f}",
              "pass_rate_treatment": f"{100 * row['pass_rate_treatment']:.1f}", "gains": str(row["gains"]), "regressions": str(row["regressions"]), "net": f"{row['net']:+d}".replace("-", "−") if row["net"] else "0",
              "delta": _points(row["delta"]), "interval": interval, "p_value": f"{row['p_value']:.3f}",
              "p_adjusted": f"{row['p_adjusted']:.3f}"}
    return "".join(f'<td class="num{" split" if i == 0 else ""}" data-grading="{row["grading"]}">'
                   f"{escape(values[c])}</td>" for i, c in enumerate(SIDE))


def _points(value: float) -> str:
    text = f"{100 * value:+.1f}"
    return "0.0" if float(text) == 0 else text.replace("-", "−")


def _changed(report: Report) -> str:
    if not report.changed:
        return _section("changed", "Tasks whose transition changed", "<p>No task changed transition when regraded.</p>")
    body = "".join(f"<tr>{_key_cells(report, c)}<td>{escape(c['condition'])}"
                   f"</td><td>{escape(c['task_id'])}</td><td>{escape(c['original'])}</td>"
                   f'<td class="changed">{escape(c["regraded"])}</td></tr>' for c in report.changed)
    return _section("changed", "Tasks whose transition changed",
                    f'<p class="note">{len(report.changed)} tasks changed transition against the baseline '
                    f"{escape(report.baseline)} when regraded.</p>"
                    f'<table class="sortable"><thead><tr>{_key_heads(report)}<th>condition</th>'
                    f"<th>task</th><th>original</th><th>regraded</th></tr></thead><tbody>{body}</tbody></table>")


def _cases(report: Report) -> str:
    index, details = [], []
    for record in report.records:
        anchor = case_anchor(record)
        reasons = record.reasons
        cells = record.cells
        link = f'<a href="#{anchor}">{len(cells)} cell{"" if len(cells) == 1 else "s"}</a>' if cells else "–"
        index.append(
            f'<tr data-condition="{escape(record.condition)}" data-verdict="{escape(record.verdict)}" '
            f'data-reason="{escape(" ".join(reasons))}">{_key_cells(report, record.model_dump(include={"stack", "benchmark"}))}'
            f"<td>{escape(record.condition)}</td><td data-sort=\"{_natural_key(record.task_id)}\">"
            f"{escape(record.task_id)}</td><td class=\"num\">{record.case}</td>"
            f'<td class="num">{record.trial}</td><td>{_verdict(record.verdict)}</td>'
            f"<td>{escape(', '.join(reasons))}</td><td>{link}</td></tr>")
        if cells:
            details.append(_drill_down(record, anchor))
    return _section("cases", "Cases",
                    '<p class="note">Every case with its verdict; a case whose graded cells differ links to its '
                    "cells below: formula, golden value, the value cached in the output (what the value-only "
                    "grader read), each engine's value and the reason.</p>"
                    '<div class="wide"><table class="sortable filterable cases" data-filters="condition,verdict,reason">'
                    f'<thead><tr>{_key_heads(report)}<th>condition</th><th>task</th><th class="num">case</th><th class="num">trial</th>'
                    "<th>verdict</th><th>reasons</th><th>cells</th></tr></thead>"
                    f"<tbody>{''.join(index)}</tbody></table></div><h3>Cells per case</h3>{''.join(details)}")


def _drill_down(record: CaseRecord, anchor: str) -> str:
    cells = record.cells
    engines = sorted({name for cell in cells for name in cell.engines})
    head = "".join(f"<th>{escape(name)}</th>" for name in engines)
    rows = []
    for cell in cells[:MAX_CELLS_SHOWN]:
        values = cell.engines
        reason = cell.reason or ""
        rows.append(
            f'<tr class="cell"><td><code>{escape(cell.cell)}</code></td>'
            f'<td class="formula">{escape(cell.formula or "")}</td><td>{_value(cell.golden)}</td>'
            f"<td>{_value(cell.shallow)}</td>"
            + "".join(f"<td>{_value(values.get(name, ''))}</td>" for name in engines)
            + f'<td><code title="{escape(meaning(reason))}">{escape(reason)}</code></td></tr>')
    meanings = reason_meanings([record])
    legend = "".join(f"<dt>{escape(i)}</dt><dd>{escape(text)}</dd>" for i, text in meanings.items())
    more = len(cells) - MAX_CELLS_SHOWN
    rest = (f'<p class="note">{more} more cells: <code>regrade diff RESULTS --cells</code> lists them all.</p>'
            if more > 0 else "")
    title = (f"{escape(record.condition)} · task {escape(record.task_id)} case {record.case}"
             f"{' trial ' + str(record.trial) if record.trial != 1 else ''} · "
             f"{_verdict(record.verdict)} · {escape(record.message)}")
    return (f'<details class="case" id="{anchor}"><summary>{title}</summary>'
            f"<p class=\"note\">output <code>{escape(record.output_path)}</code>, golden "
            f"<code>{escape(record.answer_path)}</code></p>"
            '<div class="wide"><table><thead><tr><th>cell</th><th>formula</th><th>golden</th><th>cached</th>'
            f"{head}<th>reason</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>{rest}"
            f'<dl class="meaning">{legend}</dl></details>')


def _meanings(report: Report) -> str:
    shown = {**reason_meanings(report.records), **TRANSITION_MEANINGS} if report.comparisons \
        else reason_meanings(report.records)
    listed = "".join(f"<dt>{escape(i)}</dt><dd>{escape(text)}</dd>" for i, text in shown.items())
    return _section("reasons", "What the verdicts, reasons and transitions mean", f'<dl class="meaning">{listed}</dl>')


def _key_heads(report: Report) -> str:
    return "".join(f"<th>{k}</th>" for k in report.varying)


def _key_cells(report: Report, row: dict) -> str:
    return "".join(f"<td>{escape(str(row[k]))}</td>" for k in report.varying)


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>{body}</section>'


def _verdict(verdict: str) -> str:
    return f'<span class="verdict {escape(verdict)}" title="{escape(meaning(verdict))}">{escape(verdict)}</span>'


def _value(value: object) -> str:
    if isinstance(value, dict) and "cannot_evaluate" in value:
        why = value.get("rule") or value["cannot_evaluate"]
        return (f'<span class="abstained" title="{escape(str(value.get("detail") or meaning(why)))}">'
                f"cannot evaluate: {escape(why)}</span>")
    if value is None:
        return '<span class="note">empty</span>'
    return escape(json.dumps(value, ensure_ascii=False) if isinstance(value, str) else _plain(value))


def _plain(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value)
    return str(value)


def _natural_key(task_id: str) -> str:
    """A sort key that puts task 9 before task 10: the digits padded."""
    return re.sub(r"\d+", lambda m: m.group(0).zfill(12), task_id)


def _clean_svg(svg: str) -> str:
    """The plot without its RDF metadata block (namespace addresses a reader might take for links)."""
    return re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
