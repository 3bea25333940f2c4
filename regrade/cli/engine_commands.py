"""``regrade conformance``, ``engines``, ``rules`` and ``probes``: the engines themselves."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections import Counter
from pathlib import Path

import click

from regrade.engines.base import DEFAULT_TIMEOUT_S
from regrade.engines.rules import RULES
from regrade.engines.registry import ENGINES, FULL_ENGINES, get_engine, open_engine
from regrade.grading.policies import get_policy
from regrade.audit.conformance import benchmark_files, conformance, folder_files, percentile
from regrade.audit.excel_oracle import by_suite, load_suites, locale_neutral, write_workbooks
from regrade.audit.probes import MATRIX, OUTCOMES, load_matrix, record_matrix, run_pack
from regrade.audit.probes import scores as probe_scores
from regrade.render.rows import render
from regrade.cli.app import POSITIVE_SECONDS, library_errors, main, progress
from regrade.cli.options import chosen_engines, chosen_settings, engines_option, format_option, quorum_option


@main.command("conformance")
@click.argument("corpus", type=click.Path(path_type=Path, file_okay=False))
@engines_option
@quorum_option
@click.option("--all-formulas", is_flag=True, help="CORPUS is any folder: compare every formula cell of every "
              ".xlsx/.xlsm under it that Excel saved (docProps/app.xml says so), not answer_position of a "
              "SpreadsheetBench layout.")
@click.option("--excel-oracle", is_flag=True, help="CORPUS is a folder of Excel-captured oracle cases (Formulon's "
              "golden JSON, as fixtures/oracles/excel365 holds them): each is written as a workbook the way Excel's "
              "capture laid it out and compared with the value Excel gave; the table is then also given per suite "
              "(function family). Cases whose value a locale may change are left out and counted (the oracle "
              "was captured in a ja-JP Excel): --ja-jp-cases keeps them.")
@click.option("--ja-jp-cases", is_flag=True, help="With --excel-oracle: also the cases whose value is that of a "
              "Japanese Excel (text that is not ASCII, DOLLAR, LENB ..., dates typed as text).")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N files (in dataset.json order, or by path).")
@click.option("--timeout", type=POSITIVE_SECONDS, default=DEFAULT_TIMEOUT_S, show_default=True, help="CPU seconds an engine (and the processes it starts) may spend on one workbook; one that computes nothing is stopped after 4 times as long on the clock.")
@format_option
@library_errors
def conformance_command(corpus, engine_names, quorum, all_formulas, excel_oracle, ja_jp_cases, limit, timeout, fmt):
    """How often each engine computes what Excel computed.

    Recomputes the formula cells inside answer_position of every answer file Excel
    saved (files without cached values are skipped and counted) and compares them
    with Excel's cached values under SpreadsheetBench's value rules. With
    --all-formulas, CORPUS is any folder of workbooks: every formula cell of each
    one that Excel saved is compared (others are skipped and counted). Left out and
    counted: cells whose cone is volatile (TODAY, RAND ...), cells reading other
    workbooks that the file holds no usable cache of (the others are computed from
    that cache), and cells whose cache contradicts another answer file of the task
    that holds the same formula over the same inputs (a stale cache). Per engine and
    for the consensus, cells compared, equal, abstained (and, for the consensus,
    disagreed). --format json adds the abstentions per engine counted by rule id
    (`regrade rules`) and every mismatch (task, cell, formula, Excel's value, the
    engine's value). regrade's own reading of an answer file (the golden, its
    volatile cells, the contradiction check) runs under --timeout too: a file past it
    is counted as timed out, not compared.

    \b
    Example:
      regrade conformance ../shared/spreadsheetbench --format json > conformance.json
      regrade conformance --all-formulas poi/test-data/spreadsheet
    """
    if all_formulas and excel_oracle:
        raise click.UsageError("--all-formulas and --excel-oracle read two different kinds of CORPUS: choose one")
    with contextlib.ExitStack() as scratch:
        if ja_jp_cases and not excel_oracle:
            raise click.UsageError("--ja-jp-cases chooses cases of --excel-oracle")
        if excel_oracle:
            written = Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix="regrade-excel-oracle-")))
            suites = load_suites(corpus)
            if not ja_jp_cases:
                suites, left_out = locale_neutral(suites)
                if left_out:
                    click.echo(f"left out {sum(left_out.values())} cases a locale may change (the oracle is a ja-JP "
                               f"Excel's; --ja-jp-cases keeps them): "
                               + ", ".join(f"{n} {why}" for why, n in left_out.most_common()), err=True)
            files = write_workbooks(suites, written)
        else:
            files = folder_files(corpus) if all_formulas else benchmark_files(corpus)
        if not files:
            raise click.UsageError(f"{corpus} holds no .xlsx or .xlsm files" if all_formulas else
                                   f"{corpus} holds no *.golden.json oracle cases" if excel_oracle else
                                   f"{corpus} holds no answer files (spreadsheet/<id>/<n>_<id>_answer.xlsx)")
        names = chosen_engines(engine_names)
        engines = [open_engine(name, timeout) for name in names]
        with progress(len(files[:limit]), "files") as shown:
            report = conformance(files, engines, get_policy("spreadsheetbench"), limit,
                                 on_file=lambda n, path: shown.advance(path.name), limit_s=timeout,
                                 quorum=chosen_settings(names, quorum, "spreadsheetbench", "cached", timeout).quorum)
    if fmt == "json":
        payload = report.to_json()
        if excel_oracle:
            payload["by_suite"] = by_suite(report.by_file, names)
        click.echo(json.dumps({"format_version": 1, **payload}, indent=2, ensure_ascii=False, default=str))
        return
    rows = [{"engine": t.name, "compared": t.compared, "agree": t.agree, "abstain": t.abstain, "disagree": None,
             "agree_pct": _percent(t.agree, t.compared - t.abstain), "abstain_pct": _percent(t.abstain, t.compared),
             "median_s": percentile(t.seconds, 0.5), "p90_s": percentile(t.seconds, 0.9)} for t in report.engines]
    c = report.consensus
    rows.append({"engine": "consensus", "compared": c.compared, "agree": c.agree, "abstain": c.abstain, "disagree": c.disagree,
                 "agree_pct": _percent(c.agree, c.compared - c.abstain - c.disagree),
                 "abstain_pct": _percent(c.abstain + c.disagree, c.compared), "median_s": None, "p90_s": None})
    click.echo(render(["engine", "compared", "agree", "abstain", "disagree", "agree_pct", "abstain_pct", "median_s", "p90_s"],
                      rows, fmt))
    f = report.files
    where = "" if all_formulas else " in answer_position"
    click.echo(f"\n{f.examined} files: {f.compared} compared, {f.not_excel} not saved by Excel, "
               f"{f.without_cache} without Excel's cached values, "
               f"{f.without_formulas} without formulas{where}, {f.unreadable} unreadable, "
               f"{f.timed_out} past the time limit; "
               f"{report.volatile} volatile cells (TODAY, RAND ... in their cone), {report.external} cells "
               f"reading other workbooks and {report.inconsistent} cells whose Excel caches contradict another "
               f"answer file's (same formula, same inputs) left out.")
    click.echo(f"The consensus (quorum {report.quorum}) decided {c.decided_by_one} cells with one engine alone.")
    if excel_oracle:
        per_suite = by_suite(report.by_file, names)
        click.echo("")
        click.echo(render(list(per_suite[0]) if per_suite else ["suite"], per_suite, fmt))


def _percent(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 2) if whole else None


@main.command("engines")
@format_option
@library_errors
def engines_command(fmt):
    """List the engines: version, whether each can run here and why not, and probe scores.

    The probe scores (right/wrong/abstain of the probes in fixtures/probes) are the
    recorded ones, which the test suite checks against the engines; `regrade probes`
    measures them afresh.

    \b
    Example:
      regrade engines --format json
    """
    recorded = probe_scores(load_matrix())
    rows = []
    for name in ENGINES:
        engine = get_engine(name)
        reason = engine.unavailable_reason()
        score = recorded.get(name, {})
        rows.append({"name": name, "full": engine.full, "available": reason is None, "version": engine.version(),
                     "probes_right": score.get("right"), "probes_wrong": score.get("wrong"),
                     "probes_abstain": score.get("abstain"), "why_not": reason})
    click.echo(render(["name", "full", "available", "version", "probes_right", "probes_wrong", "probes_abstain", "why_not"],
                      rows, fmt))


@main.command("rules")
@click.option("--engine", "engine_name", type=click.Choice(FULL_ENGINES), help="Only the rules that apply to this engine.")
@format_option
@library_errors
def rules_command(engine_name, fmt):
    """List the rules by which engines abstain instead of giving a value.

    Each rule has a stable id (what results, diff and conformance count abstentions by),
    the engines it applies to, when it fires, why (Excel's behaviour or the engine's
    departure from it), where it was seen, and its probe workbook in fixtures/rules/.
    single_task marks a rule whose only evidence is one SpreadsheetBench task: watch it on
    tasks it was not found on. A hazard is a rule about the formula: it binds every engine
    (IronCalc, LibreOffice, Formulon) except those cleared of it by cells whose value Excel
    computed (the Excel 365 oracle, a workbook Excel saved); cleared lists them.

    \b
    Example:
      regrade rules --engine libreoffice --format json
    """
    rows = [{"id": rule.id, "engines": list(rule.engines), "reason": rule.reason, "trigger": rule.trigger,
             "why": rule.why, "evidence": list(rule.evidence), "single_task": rule.single_task,
             "hazard": rule.hazard,
             "cleared": [{"engine": c.engine, "cells": list(c.cells), "note": c.note} for c in rule.cleared],
             "probe": f"fixtures/rules/{rule.probe.name}#{rule.probe_cell}"}
            for rule in RULES if engine_name is None or engine_name in rule.engines]
    columns = ["id", "engines", "hazard", "reason", "single_task", "evidence", "why"]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    flat = [{**row, "engines": ",".join(rule.engines), "evidence": "; ".join(rule.evidence),
             "cleared": "; ".join(f"{c.engine}: {', '.join(c.cells)}" for c in rule.cleared)}
            for row, rule in zip(rows, (r for r in RULES if engine_name is None or engine_name in r.engines))]
    click.echo(render(columns if fmt == "table" else [*columns, "cleared", "trigger", "probe"], flat, fmt))


@main.command("probes")
@engines_option
@click.option("--record", is_flag=True, help=f"Write the outcomes to {MATRIX.relative_to(MATRIX.parents[2])}, with the engines' versions "
              "(on purpose: the tests compare with it). Engines not run keep their recorded outcomes.")
@format_option
@library_errors
def probes_command(engine_names, record, fmt):
    """Run the engines over the probe pack: per probe, right, wrong or abstain.

    Each probe in fixtures/probes is a small workbook whose right values were worked
    out by hand (fixtures/make_probes.py says why). Prints one row per probe and a
    total per engine; stderr gets the abstentions counted by rule id (`regrade rules`).

    \b
    Example:
      regrade probes --engines ironcalc,libreoffice
    """
    names = chosen_engines(engine_names)
    engines = [open_engine(name) for name in names]
    abstained: Counter[str] = Counter()
    matrix = run_pack(engines, on_probe=lambda p: click.echo(p, err=True), rules=abstained)
    if record:
        record_matrix(matrix, engines)
        click.echo(f"recorded {len(matrix)} probes in {MATRIX}, with the engines' versions", err=True)
    rows: list[dict[str, object]] = [{"probe": probe, **outcomes} for probe, outcomes in matrix.items()]
    totals = probe_scores(matrix)
    rows += [{"probe": f"total {outcome}", **{n: totals[n][outcome] for n in names}} for outcome in OUTCOMES]
    click.echo(render(["probe", *names], rows, fmt))
    if abstained:  # on stderr: stdout keeps the one table (or JSON document)
        click.echo("abstentions by rule: " + ", ".join(f"{key} ({count})" for key, count in sorted(abstained.items())),
                   err=True)
