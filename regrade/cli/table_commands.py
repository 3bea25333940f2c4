"""``regrade table``, ``diff`` and ``report``: reading results."""

from __future__ import annotations

from pathlib import Path

import click

from regrade import api
from regrade.paired import diff
from regrade.paired.tables import AGGREGATES, UNITS
from regrade.paired.refusal import REFUSAL_FIELDS
from regrade.render.refusal import refusal_text
from regrade.render.paper import ORIGINAL_MEANINGS, PAPER_FORMATS, PAPER_HEADERS, original_from, paper_table
from regrade.render.rows import FORMATS, TABLE_FORMATS, render
from regrade.paired.stats import CORRECTIONS, INTERVALS, TESTS
from regrade.results.summary import summarise
from regrade.cli.app import library_errors, main
from regrade.cli.options import check_protocol_options, protocol_options, refused_on_mismatch


TABLE_COLUMNS = ["stack", "benchmark", "condition", "grading", "n", "pass_rate_baseline", "pass_rate_treatment",
                 "gains", "regressions", "retained", "residual", "net", "delta", "ci_lower", "ci_upper", "p_value",
                 "p_adjusted"]
FULL_TABLE_COLUMNS = [*TABLE_COLUMNS, "ci_method", "test", "correction", "family_size", "regression_tax", "normalized_gain",
                      "unpaired", "without_output", "original_from", "trials_baseline", "trials_treatment", "noise_discordance", "noise_gains",
                      "noise_regressions"]


@main.command("table")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@click.option("--scorer", help="The scorer whose scores are read, where an inspect_ai log has several; NAME.KEY "
              "reads one value of a scorer whose scores are dicts.")
@click.option("--stack", help="Label every outcome with this stack: conditions run by different agents or models "
              "(an inspect_ai log's model, a Harbor job's agent/model) then pair with each other.")
@click.option("--benchmark", help="Label every outcome with this benchmark (an inspect_ai log's task name): "
              "conditions run under different task names then pair with each other.")
@click.option("--baseline", default="none", show_default=True, help="The condition every other condition is paired against.")
@click.option("--ci", type=click.Choice(INTERVALS), default="newcombe", show_default=True,
              help="Interval for delta: Newcombe's hybrid score (method 10) or the paired Wald interval "
                   "(which reproduces the Regression Tax study's Table 2).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True)
@click.option("--correction", type=click.Choice(CORRECTIONS), default="bonferroni", show_default=True,
              help="Adjustment of p-values over the family of comparisons of each grading.")
@click.option("--unit", type=click.Choice(UNITS), default="task", show_default=True,
              help="Pair tasks (a task passes when all its test cases pass) or test cases.")
@click.option("--aggregate", "scoring", type=click.Choice(AGGREGATES), default="hard", show_default=True,
              help="hard: a task passes when all its test cases pass; soft: a task scores the fraction that pass "
                   "(delta is then the mean change of score with a normal interval, p the exact sign test).")
@click.option("--test", type=click.Choice(TESTS), default="exact", show_default=True,
              help="McNemar test on the discordant tasks: exact (conservative when they are few) or mid-p "
                   "(Fagerland, Lydersen and Laake 2013: the exact p less half the probability of what was seen).")
@click.option("--format", "fmt", type=click.Choice(TABLE_FORMATS), default="table", show_default=True,
              help="latex and markdown are typeset for a paper: readable headers, the interval as [lo, hi] and "
                   "a caption or note naming the baseline, interval, test and correction.")
@click.option("--percent", is_flag=True, help="latex and markdown: rates, delta and interval in percentage points "
              "(default: fractions).")
@click.option("--columns", "column_names", metavar="NAMES", help="Comma-separated fields to show, in this order "
              "(any field of the JSON rows; latex and markdown also take 'interval' for both limits in one cell).")
@protocol_options
@library_errors
def table_command(sources, scorer, stack, benchmark, baseline, ci, alpha, correction, unit, scoring, test, fmt, percent,
                  column_names, exploratory, protocol_file, protocol_digest):
    """Paired table before and after regrading, per (stack, benchmark, condition).

    Each SOURCE is a regrade results file; per-task outcomes from any grader (CSV or
    JSON Lines: stack, benchmark, condition, task_id, passed as true/false, 1/0,
    pass/fail or yes/no; optional case, trial); or NAME=LOG, an inspect_ai log (.eval
    or .json) or a folder of logs, read as condition NAME: sample id is the task,
    epoch the trial, the log's model the stack and its task the benchmark; a score
    passes when it is C, true or at least 1 (I, N, P, false and smaller numbers
    fail); an unscored sample is left out and said.
    For each condition against the baseline, paired on task: n, pass rates, gains
    (fail to pass), regressions (pass to fail), retained, residual, net, delta =
    net / n with its interval, the exact two-sided McNemar p-value and the p-value
    adjusted over the comparisons of the same grading; in JSON and CSV also the
    regression tax (regressions / gains), the normalized gain (p1 - p0) / (1 - p0)
    and, with several trials, the noise floor. Rates, delta and interval limits are
    fractions. A results file gives two gradings: the original grades and the
    regraded ones, then the tasks whose transition changed; an outcomes file gives the
    original only.

    A refusal slice's results (`regrade rescore --pack`) pair on success over its
    ordinary tasks and on abstention over its negative controls apart, and every
    format shows each condition's figures beside its rates: success rate (regraded
    and original), abstention accuracy, invalid-completion and false-abstain rates,
    each with its Wilson 95% interval and count, and the covariates' medians and
    totals (absent where no attempt logged one); the JSON and CSV rows carry them.
    Every format says whether a refusal slice stands beside the rates and under which
    channel (caption, note or footer; CSV on stderr): "no refusal slice" where none
    does. Conditions a locked protocol marks exploratory (a run whose records
    contradict it) are left out and said, unless --exploratory.

    Several trials per task: pass rates are the mean over trials; pairing uses each
    task's majority (a tie counts as a fail).

    \b
    Example:
      regrade table results.jsonl --baseline none --format markdown
      regrade table outcomes.csv --ci wald --correction holm --format latex
      regrade table results.jsonl --test mid-p --format markdown --percent
      regrade table results.jsonl --columns condition,grading,n,gains,regressions,delta
      regrade table none=logs/none.eval skills=logs/skills/
    """
    paper = fmt in PAPER_FORMATS
    if percent and not paper:
        raise click.UsageError(f"--percent typesets latex and markdown; --format {fmt} keeps fractions")
    check_protocol_options(protocol_file, protocol_digest)
    table = refused_on_mismatch(lambda: api.table(sources, baseline, ci, alpha, correction, unit, scoring, test, scorer,
                                                  stack, benchmark, exploratory, protocol_file, protocol_digest))
    columns = chosen_columns(column_names, paper) or (
        [*FULL_TABLE_COLUMNS, *(REFUSAL_FIELDS if table.refusal else [])] if fmt in ("json", "csv") else TABLE_COLUMNS)
    for warning in table.warnings:
        click.echo(warning, err=True)
    comparisons, rows = table.comparisons, table.rows()
    if paper:
        click.echo(paper_table(rows, fmt, alpha, percent, chosen_columns(column_names, paper), unit, table.caption))
        if table.refusal:
            click.echo("")
            click.echo(refusal_text(table.refusal_rows(), fmt))
        return
    if fmt == "json":
        click.echo(render(columns, rows, fmt, table.as_json()))
        return
    click.echo(render(columns, rows, fmt))
    if fmt != "table":
        click.echo(table.caption, err=True)  # CSV has no footer
        return
    click.echo("")
    if table.refusal:
        click.echo(refusal_text(table.refusal_rows(), fmt))
        click.echo("")
    if comparisons:
        click.echo(f"p_value: {test} {'sign' if scoring == 'soft' else 'McNemar'} test; p_adjusted: {correction} over "
                   f"a family of {comparisons[0].family_size} comparisons per grading; interval: "
                   f"{comparisons[0].ci_method}, {100 * (1 - alpha):g}%")
        click.echo(f"gradings: original is {ORIGINAL_MEANINGS[original_from(rows)]}"
                   + ("; regraded is recomputed by full engines where they could decide" if table.regraded else ""))
    for grading, total in table.totals().items():
        if total["gains"] or total["regressions"] or grading == "original":
            offset = "-" if total["share_offset"] is None else f"{100 * total['share_offset']:.0f}%"
            click.echo(f"{grading}: {total['gains']} gains, {total['regressions']} regressions, {offset} of gains offset")
    if table.regraded:
        changes = table.count_changes()
        several = len({(c["stack"], c["benchmark"]) for c in changes}) > 1
        for change in changes:
            counts = ", ".join(f"{k} {change[k]:+d}" for k in ("gains", "regressions", "retained", "residual", "net"))
            where = f"{change['stack']} / {change['benchmark']} / " if several else ""
            click.echo(f"regrading changed {where}{change['condition']}: {counts}")
        click.echo(f"{len(table.changed)} tasks changed transition when regraded" + (":" if table.changed else "."))
        for change in table.changed:
            click.echo(f"  {change['condition']} task {change['task_id']}: {change['original']} -> {change['regraded']}")
    click.echo(table.caption)  # the footer: whether the rates carry refusal figures, and the channel


def chosen_columns(names: str | None, paper: bool) -> list[str] | None:
    """The fields named by --columns, checked: any field of a comparison row (and, typeset, 'interval')."""
    if not names:
        return None
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    known = [*PAPER_HEADERS] if paper else [c for c in PAPER_HEADERS if c != "interval"]
    unknown = [n for n in chosen if n not in known]
    if unknown or not chosen:
        raise click.UsageError(f"--columns: unknown field {', '.join(unknown) or '(none given)'}; choose from: "
                               f"{', '.join(known)}")
    return chosen


@main.command("diff")
@click.argument("results", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--cells", "show_cells", is_flag=True, help="List every graded cell that either grading failed: case, "
              "cell, formula, shallow value, each engine's value, golden value and reason (wrong-value where both "
              "failed it).")
@click.option("--rules", "by_rule", is_flag=True, help="Count the engines' abstentions on graded cells by rule id "
              "(see `regrade rules`): cells and cases per rule and engine.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@library_errors
def diff_command(results, show_cells, by_rule, fmt):
    """Shallow (value-only) against full grading, from a rescore results file.

    Per (stack, benchmark, condition) and overall: of the value-only failures whose
    answer cells hold formulas, how many were already correct (artifact), genuinely
    wrong, unevaluable, split the engines, or had a golden that cannot judge; and
    how many value-only passes were wrong (false-pass). --rules counts the engines'
    abstentions by rule id. --cells lists every graded cell that either grading
    failed, with its reason: where the two grades differ, why (uncached-formula,
    stale-cache, unsupported-in-recalc, type-mismatch, rounding, date-serial,
    spill-not-materialised, ...); where both failed it, wrong-value; where the
    engines could not decide it, their reason. The column artifact counts what
    the other commands call artifact: failures that were correct when recomputed.

    \b
    Example:
      regrade diff results.jsonl --cells --format csv > cells.csv
    """
    if show_cells and by_rule:
        raise click.UsageError("--cells and --rules are two different listings: choose one")
    listing = api.diff_listing(results, "rules" if by_rule else "cells" if show_cells else "summary")
    for warning in listing.warnings:
        click.echo(warning, err=True)
    rows = listing.rows
    meta = {"provenance": listing.provenance} if fmt == "json" and listing.provenance else None
    click.echo(render(listing.columns, rows, fmt, meta))
    if fmt == "table" and not show_cells and not by_rule:
        click.echo("")
        for row in rows:
            label = "overall" if row["condition"] == diff.ALL else f"{row['stack']} / {row['benchmark']} / {row['condition']}"
            click.echo(f"{label}: {diff.sentence(row)}")


@main.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False), metavar="RESULTS...")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="The HTML file to write (replaced only when complete).")
@click.option("--baseline", default="none", show_default=True, help="The condition every other condition is paired against.")
@click.option("--ci", type=click.Choice(INTERVALS), default="newcombe", show_default=True, help="Interval for delta (as `regrade table`).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True)
@click.option("--correction", type=click.Choice(CORRECTIONS), default="bonferroni", show_default=True,
              help="Adjustment of p-values over the family of comparisons of each grading.")
@click.option("--test", type=click.Choice(TESTS), default="exact", show_default=True, help="McNemar test (as `regrade table`).")
@click.option("--title", default="regrade report", show_default=True, help="The page's title.")
@protocol_options
@library_errors
def report_command(results, output, baseline, ci, alpha, correction, test, title, exploratory, protocol_file,
                   protocol_digest):
    """One self-contained HTML page from rescore results files, to open offline or share.

    The page holds the provenance of each results file (regrade and engine versions,
    settings, the sha256 of every input), verdict counts per condition, what could not be
    judged and why, the paired table with the original and regraded grades side by side
    and a forest plot of each comparison's delta and interval, the tasks whose transition
    changed, and every case with a drill-down to its differing cells: formula, golden
    value, cached value, each engine's value and the reason with its meaning. Its tables
    sort and filter (by condition, verdict, reason) with JavaScript on, and read as plain
    tables with it off. Nothing is fetched: styles, script and chart are inline.
    Several RESULTS files are taken together (a case may be in only one of them).

    \b
    Example:
      regrade report results.jsonl -o report.html
      regrade report none.jsonl skills.jsonl --baseline none --test mid-p -o report.html
    """
    check_protocol_options(protocol_file, protocol_digest)
    report = refused_on_mismatch(lambda: api.report(list(results), output, baseline, ci, alpha, correction, test, title,
                                                    exploratory, protocol_file, protocol_digest))
    for warning in [*report.warnings, *report.pairing_warnings]:
        click.echo(warning, err=True)
    size = output.stat().st_size
    for line in summarise(report.records, left_out=report.left_out()).warnings():
        click.echo(line, err=True)
    click.echo(f"wrote {output} ({size / 1024:.0f} KB: {len(report.records)} cases, "
               f"{len(report.comparisons)} comparisons)", err=True)
