"""The ``regrade`` command line: parse, call the library, render, map errors to exit codes."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import click

from regrade.xml_parser import let_openpyxl_use_the_c_parser

let_openpyxl_use_the_c_parser()  # before any module below imports openpyxl

from regrade.engines.base import DEFAULT_TIMEOUT_S
from regrade.engines.rules import RULES
from regrade.engines.registry import ENGINES, FULL_ENGINES, default_full_engines, get_engine, open_engine
from regrade import demo as demo_run
from regrade.paired import diff
from regrade.grading.policies import POLICIES, get_policy
from regrade.audit.benchmark import RECALC_ENGINES, SEVERITIES, audit_benchmark
from regrade.audit.generated import CATEGORIES as CONTROL_CATEGORIES
from regrade.audit.generated import generate_pack, test_cases
from regrade.audit.grader import AUDIT_COLUMNS, audit_grader, audit_table
from regrade.audit.conformance import benchmark_files, conformance, folder_files, percentile
from regrade.audit.controls import PACK as CONTROL_PACK
from regrade.audit.excel_oracle import by_suite, load_suites, locale_neutral, write_workbooks
from regrade.audit.controls import ControlPack, load_pack, select_controls
from regrade.grading.graders import GRADERS, GraderError, RegradeGrader, make_grader
from regrade.grading.grade import grade_case
from regrade.paired.tables import (
    AGGREGATES, UNITS, PairingError, aggregate, changed_transitions, count_changes, paired_table, table_warnings,
)
from regrade.audit.probes import MATRIX, OUTCOMES, load_matrix, record_matrix, run_pack
from regrade.audit.probes import scores as probe_scores
from regrade.render.pipes import tolerate_closed_pipes
from regrade.render.progress import Progress
from regrade.render.paper import ORIGINAL_MEANINGS, PAPER_FORMATS, PAPER_HEADERS, original_from, paper_table
from regrade.render.rows import FORMATS, TABLE_FORMATS, render
from regrade.paired.sources import load_outcomes
from regrade.results.files import ResultsError, json_value, read_results, require_rescored, results_warnings, write_jsonl
from regrade.paired.stats import CORRECTIONS, INTERVALS, TESTS
from regrade.reporting.content import build_report
from regrade.reporting.page import write_page
from regrade.run import RescoreSettings, ResultCache, SettingsError, default_cache_dir, rescore_settings, rescore_to_file
from regrade.run.settings import SHALLOW_ENGINES
from regrade.runs.cases import ArgumentError, Case, RunError, load_dataset, spreadsheetbench_cases
from regrade.runs.load import LoadedRun, load_run
from regrade.runs.inventory import EmptyCondition, check_inventory
from regrade.grading.summary import RunSummary, summarise, verdict_counts
from regrade.messages import first_few

LIBRARY_ERRORS = (RunError, ResultsError, PairingError, ValueError, OSError)


def library_errors(command: Callable) -> Callable:
    """Library errors become ``Error: ...`` and exit status 1; ``--debug`` keeps the traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            raise click.exceptions.Exit(INTERRUPTED) from None
        except (EmptyCondition, ArgumentError) as exc:
            if _debugging():
                raise
            raise click.UsageError(str(exc)) from exc  # exit status 2: nothing of the run was graded
        except LIBRARY_ERRORS as exc:
            if _debugging():
                raise
            raise click.ClickException(str(exc)) from exc

    return wrapper


POSITIVE_SECONDS = click.FloatRange(min=0, min_open=True)
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a program Ctrl-C stopped
REPOSITORY = Path(__file__).resolve().parent.parent


def in_repository(path: Path) -> str:
    """A bundled path as --help shows it: relative to the repository, the same in every clone."""
    return path.relative_to(REPOSITORY).as_posix()


def _debugging() -> bool:
    return bool(click.get_current_context().find_root().params.get("debug"))


def progress(total: int, unit: str) -> Progress:
    """The progress display of this command line: none with -q."""
    return Progress(total, unit, quiet=quiet())


class CommandLine(click.Group):
    """The ``regrade`` group: ``--debug`` and ``-q`` are read anywhere on the line, not only before the subcommand."""

    def main(self, args=None, *rest, **extra):
        words = list(sys.argv[1:] if args is None else args)
        for flag, spellings in (("--debug", ("--debug",)), ("--quiet", ("-q", "--quiet"))):
            if any(w in spellings for w in words[1:]):
                words = [flag, *(w for w in words if w not in spellings)]
        streams = sys.stdout, sys.stderr
        tolerate_closed_pipes()  # a reader that goes away (| head) costs no work and is no error
        try:
            return super().main(words, *rest, **extra)
        finally:
            sys.stdout, sys.stderr = streams


def run_options(command: Callable) -> Callable:
    """The options that say which run to load: a SpreadsheetBench folder or a manifest."""
    options = [
        click.option("--dataset", type=click.Path(path_type=Path, file_okay=False), help="SpreadsheetBench-layout folder (dataset.json, spreadsheet/)."),
        click.option("--condition", "conditions", multiple=True, metavar="NAME=OUTDIR", help="A condition and its output folder (repeat). With --dataset."),
        click.option("--harbor", "harbor_jobs", multiple=True, metavar="[NAME=]JOB_DIR", help="With --dataset: a Harbor job folder as a condition (named after the folder unless NAME= is given; repeat): each trial's output workbooks from its collected artifacts, its verifier reward as the original grade (the layout of harbor 0.26's TrialPaths). A --condition folder that is a Harbor job is read as one."),
        click.option("--runs", "runs_dir", type=click.Path(path_type=Path, file_okay=False), help="With --dataset: every subfolder of this folder is a condition named after it (SpreadsheetBench's outputs/{setting}_{model}/)."),
        click.option("--allow-missing", is_flag=True, help="Grade a condition none of whose outputs exist (each a confirmed-fail, reason missing-output) instead of stopping with exit status 2."),
        click.option("--tasks-with-outputs", is_flag=True, help="Grade only the tasks some condition has an output for (a pilot, a subset, one shard of a run): the dataset's other tasks are left out, counted and said, instead of graded as missing outputs. A task kept has every case graded in every condition; a missing one is still a failure."),
        click.option("--stack", default="default", show_default=True, help="Stack (agent/model) label for --dataset runs."),
        click.option("--benchmark", default="spreadsheetbench", show_default=True, help="Benchmark label for --dataset runs."),
        click.option("--manifest", type=click.Path(path_type=Path, dir_okay=False), help="CSV or JSONL manifest of cases instead of --dataset."),
        click.option("--policy", type=click.Choice(sorted(POLICIES)), default="spreadsheetbench", show_default=True, help="Which cells are graded and how values compare."),
        click.option("--timeout", type=POSITIVE_SECONDS, default=DEFAULT_TIMEOUT_S, show_default=True, help="CPU seconds an engine (and the processes it starts) may spend on one workbook; one that computes nothing is stopped after 4 times as long on the clock."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def load_cases(dataset: Path | None, conditions: tuple[str, ...], harbor_jobs: tuple[str, ...], runs_dir: Path | None,
               stack: str, benchmark: str, manifest: Path | None, allow_missing: bool,
               tasks_with_outputs: bool = False) -> LoadedRun:
    """The run's cases, after its inventory is said on stderr (:mod:`regrade.runs.inventory`):
    with -q only the lines that report something wrong."""
    run = load_run(dataset, conditions, runs_dir, manifest, stack, benchmark, harbor_jobs, tasks_with_outputs)
    for inventory in run.inventories:
        if not quiet() or not inventory.complete:
            click.echo(inventory.message(), err=True)
    for line in [*run.notes, *run.left_out.messages(dataset)]:
        click.echo(line, err=True)
    if (warning := run.most_outputs_missing()) is not None:
        click.echo(warning, err=True)
    check_inventory(run.inventories, allow_missing, manifest)
    return run


def quiet() -> bool:
    """-q anywhere on the line: no progress, no lines that only report that all is well."""
    return bool(click.get_current_context().find_root().params.get("quiet"))


@click.group(cls=CommandLine)
@click.version_option(package_name="regrade")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of short error messages (anywhere on the line).")
@click.option("-q", "--quiet", is_flag=True, help="No progress, inventory or summary on stderr; warnings, what was "
              "missing or not judged, and errors still show (anywhere on the line).")
def main(debug: bool, quiet: bool) -> None:
    """regrade: find which spreadsheet-benchmark failures are real.

    It grades each agent output twice: as value-only graders do (the values cached
    in the file) and with a full formula engine that recomputes every formula, then
    says which failures were grader artifacts and how paired tables change.

    \b
    Start with:  regrade demo
    Then:        regrade rescore --dataset DATA --condition none=OUT_NONE \\
                     --condition skills=OUT_SKILLS -o results.jsonl
                 regrade table results.jsonl
                 regrade report results.jsonl -o report.html
    """


@main.command("grade")
@run_options
@click.option("--values", type=click.Choice(sorted(ENGINES)), default="cached", show_default=True, help="Where cell values come from: 'cached' reads the file's stored values; a full engine recomputes.")
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), help="Write here instead of stdout.")
@library_errors
def grade_command(dataset, conditions, harbor_jobs, runs_dir, allow_missing, tasks_with_outputs, stack, benchmark, manifest,
                  policy, timeout, values, fmt, output):
    """Grade every case with one source of values; one JSON line per case.

    Each line has task_id, case, condition, passed (true, false, or null when the
    engine could not evaluate it), reason, and the graded cells that did not match
    (golden and output values).

    \b
    Example:
      regrade grade --values ironcalc --policy spreadsheetbench \\
          --dataset DATA --condition none=OUT_NONE
    """
    cases = load_cases(dataset, conditions, harbor_jobs, runs_dir, stack, benchmark, manifest, allow_missing,
                       tasks_with_outputs).cases
    chosen = get_policy(policy)
    engine = open_engine(values, timeout)
    stored = open_engine("cached", timeout)
    records = (_grade_record(case, chosen, engine, stored) for case in cases)
    if output is None:
        for record in records:
            click.echo(_json_line(record))
    else:
        count = write_jsonl(output, records)
        click.echo(f"wrote {count} cases to {output}", err=True)


def _grade_record(case: Case, policy, engine, stored) -> dict:
    result = grade_case(case, policy, engine, stored)
    cells = [{"cell": str(c.ref), "golden": json_value(c.golden), "value": json_value(c.value)} for c in result.cells]
    return {"stack": case.stack, "benchmark": case.benchmark, "condition": case.condition, "task_id": case.task_id,
            "case": case.case, "trial": case.trial, "engine": engine.name, "policy": policy.name,
            "passed": result.passed, "reason": result.reason, "message": result.message, "cells": cells}


def _json_line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, default=str)


def scale_options(command: Callable) -> Callable:
    """How a run is carried out: the value-only view, workers and the results cache."""
    options = [
        click.option("--shallow", type=click.Choice(SHALLOW_ENGINES), default="cached", show_default=True,
                     help="How the value-only grade is made: the values cached in the file (the official grader), "
                          "or after a recalculation by gnumeric (ssconvert --recalc) or LibreOffice."),
        click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="CPU count",
                     help="Worker processes; each opens its own engines."),
        click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
                     help=f"Where finished gradings are kept by content hash [default: {default_cache_dir()}]."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


DEFAULT_ENGINES_HELP = ("ironcalc, libreoffice and formulon where available (the most faithful, three "
                        "independent implementations; see docs/engines.md)")


def executor_options(command: Callable) -> Callable:
    """Where regrade's gradings run: a pool here, or a Dask cluster."""
    options = [
        click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
                     help="Where regrade grades cases: a pool of --workers processes here, or a Dask cluster "
                          "(pip install 'regrade[dask]'; docs/scale.md)."),
        click.option("--scheduler", metavar="ADDRESS", default=None,
                     help="With --executor dask: the scheduler of an existing cluster (tcp://host:8786). "
                          "Default: a LocalCluster of --workers processes on this machine."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def check_executor(executor: str, scheduler: str | None) -> None:
    if scheduler is not None and executor != "dask":
        raise click.UsageError("--scheduler is an address of a Dask cluster: pass --executor dask with it")


def quorum_option(command: Callable) -> Callable:
    return click.option("--quorum", type=click.IntRange(min=1), default=None, show_default="2 with three or more engines, else 1",
                        help="How many engines must compute a graded cell (and agree) for it to count; with fewer, "
                             "the cell abstains as below-quorum.")(command)


def chosen_settings(engines: list[str], quorum: int | None, policy: str, shallow: str, timeout: float) -> RescoreSettings:
    """The run's settings, made as the API makes them; a quorum beyond the engines is --quorum's error."""
    try:
        return rescore_settings(engines, quorum, policy, shallow, timeout)
    except SettingsError as exc:
        raise click.BadParameter(str(exc), param_hint="--quorum") from None


@main.command("rescore")
@run_options
@click.option("--engines", "engine_names", metavar="NAMES", help=f"Comma-separated full engines for the consensus ({', '.join(FULL_ENGINES)}). Default: {DEFAULT_ENGINES_HELP}.")
@quorum_option
@scale_options
@executor_options
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True, help="Results file (JSON Lines) to write.")
@library_errors
def rescore_command(dataset, conditions, harbor_jobs, runs_dir, allow_missing, tasks_with_outputs, stack, benchmark, manifest,
                    policy, timeout, engine_names, quorum, shallow, workers, cache_dir, no_cache, executor, scheduler,
                    output):
    """Grade every case value-only and with a full engine, and classify it.

    Verdicts: confirmed-pass, confirmed-fail, artifact (the value-only grade failed a
    correct output), false-pass (it passed a wrong one, e.g. a stale cache),
    engines-disagree (the full engines computed different values), unevaluable (no
    engine could compute a graded cell, or fewer than --quorum did) and invalid-golden
    (the golden cannot judge: unreadable, never computed, or NOW()/RAND() in its
    answer's cone). A golden that depends on TODAY() is recomputed as of each day it
    may have been saved on (docProps/core.xml); the output is judged as of the days
    that reproduce its cached values (reason dated-golden), and the golden is invalid
    where none does. A cell that reads another workbook is computed from the values
    of it the file caches. The full grade is the consensus of the engines: an engine that
    cannot compute a cell abstains on it, never guesses; the others must agree, and
    with three engines at least two must compute the cell (--quorum). The
    results file starts with a provenance record (versions, settings, sha256 of every
    input file); stdout gets the count of each verdict.

    Every output is treated as hostile: before any engine opens it, it is screened
    (missing, not a regular file, not a zip, corrupt, encrypted, a renamed .xls, over
    256 MB, a zip bomb, an XML part with a DTD or entities): such an output is a
    confirmed-fail with the reason (unreadable-output, encrypted, legacy-format,
    too-large, zip-bomb, hostile-xml). No engine reaches the network (LibreOffice runs
    in a network namespace where Linux allows it and declines WEBSERVICE) and no input
    file is modified.

    Before grading it says, per condition, how many outputs it found, which are
    missing and which files match no case; a condition with no output at all (or a
    run with no answer file) stops it with exit status 2 unless --allow-missing.
    After grading, stderr gets a summary: what could not be judged and why, the
    elapsed time, and the commands to run next. Ctrl-C stops it with exit status
    130; the same command resumes from the cache.

    Cases run in a pool of --workers processes (or, with --executor dask, on a Dask
    cluster: the same isolation and limits, records and cache); every engine runs each workbook
    under a time limit (--timeout) and a memory limit, so a crash or hang makes that
    case unevaluable and the run goes on. Finished gradings are cached by content
    hash: a second run is near-instant, and a run killed at any point resumes where
    it stopped when started again with the same arguments. The results file is
    written once, complete; progress goes to stderr.

    \b
    Example:
      regrade rescore --dataset DATA --condition none=OUT_NONE \\
          --condition skills=OUT_SKILLS -o results.jsonl
    """
    run = load_cases(dataset, conditions, harbor_jobs, runs_dir, stack, benchmark, manifest, allow_missing,
                     tasks_with_outputs)
    engines = chosen_engines(engine_names)
    settings = chosen_settings(engines, quorum, policy, shallow, timeout)
    started = time.monotonic()
    check_executor(executor, scheduler)
    left_out = run.left_out.to_json()
    records = run_rescore(run.cases, settings, workers,
                          None if no_cache else ResultCache(cache_dir or default_cache_dir()),
                          output, {"command": "rescore", "tasks_with_outputs": tasks_with_outputs}, run.described_by,
                          executor=executor, scheduler=scheduler, left_out=left_out)
    click.echo(render(["verdict", "cases"], verdict_counts(records), "table"))
    say_summary(summarise(records, time.monotonic() - started, left_out), output)


def say_summary(summary: RunSummary, results: Path | None) -> None:
    """The run's summary on stderr; with -q only what was missing, broken, left out or not judged."""
    for line in summary.lines(results, quiet()):
        click.echo(line, err=True)


def chosen_engines(names: str | None) -> list[str]:
    """The full engines named on the command line, or every available one."""
    if not names:
        available = default_full_engines()
        if not available:
            raise click.ClickException("no full engine is available here; run `regrade engines` to see why")
        return available
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    for name in chosen:
        if name not in FULL_ENGINES:
            raise click.BadParameter(f"{name!r} is not a full engine; choose from {', '.join(FULL_ENGINES)}", param_hint="--engines")
        reason = get_engine(name).unavailable_reason()
        if reason:
            raise click.ClickException(f"engine {name} is not available here: {reason}")
    return chosen


def run_rescore(cases: list[Case], settings: RescoreSettings, workers: int, cache: ResultCache | None, output: Path,
                command: dict, described_by: list[Path], kept: bool = True, executor: str = "local",
                scheduler: str | None = None, left_out: dict[str, list[str]] | None = None) -> list[dict]:
    """Rescore with progress, write the results file and return the case records.
    ``kept``: the results file outlives the command (the demo's scratch file does not)."""
    shown = progress(len(cases), "cases")
    try:
        with shown:
            _, records = rescore_to_file(cases, settings, output, workers, cache, lambda index, record, cached:
                                         shown.advance(f"{record['condition']} task {record['task_id']} case "
                                                       f"{record['case']}: {record['verdict']}", cached),
                                         command, described_by, executor, scheduler, left_out)
    except KeyboardInterrupt:
        done = f"{shown.done} of {len(cases)} cases were graded"
        click.echo(f"\n{done} and saved in the results cache; the same command resumes from there" if cache is not None
                   else f"\n{done}; with --no-cache none is kept, so the same command starts over", err=True)
        raise
    if quiet():
        return records
    click.echo(f"wrote {len(records)} cases to {output}" if kept else
               f"graded {len(records)} cases (pass -o FILE to keep the results)", err=True)
    if len(settings.engines) > 1:
        alone = sum(r.get("decided_by_one", 0) for r in records)
        click.echo(f"quorum {settings.quorum}: {alone} graded cells were decided by one engine alone", err=True)
    return records


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
@library_errors
def table_command(sources, scorer, stack, benchmark, baseline, ci, alpha, correction, unit, scoring, test, fmt, percent,
                  column_names):
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
    columns = chosen_columns(column_names, paper) or (FULL_TABLE_COLUMNS if fmt in ("json", "csv") else TABLE_COLUMNS)
    loaded = load_outcomes(sources, scorer, stack, benchmark)
    meta, records = loaded.provenance, loaded.records
    for note in loaded.notes:
        click.echo(note, err=True)
    regraded = any("verdict" in r for r in records)
    if regraded and len(sources) == 1:
        for warning in results_warnings(Path(sources[0]), meta):
            click.echo(warning, err=True)
    comparisons = paired_table(records, baseline, ci, alpha, correction, unit, scoring, test)
    for warning in table_warnings(comparisons, records, baseline, unit):
        click.echo(warning, err=True)
    if not regraded:
        comparisons = [c for c in comparisons if c.grading == "original"]
    if not comparisons:
        click.echo(f"no condition was paired with {baseline}: the table is empty (see the warning above)", err=True)
    rows = [c.as_row() for c in comparisons]
    if paper:
        click.echo(paper_table(rows, fmt, alpha, percent, chosen_columns(column_names, paper), unit))
        return
    if fmt == "json":
        changes = changed_transitions(records, baseline, unit, scoring) if regraded else []
        click.echo(render(columns, rows, fmt, {"provenance": meta, "baseline": baseline,
                                               "aggregate": aggregate(comparisons), "count_changes": count_changes(comparisons),
                                               "changed_transitions": changes}))
        return
    click.echo(render(columns, rows, fmt))
    if fmt != "table":
        return
    click.echo("")
    if comparisons:
        click.echo(f"p_value: {test} {'sign' if scoring == 'soft' else 'McNemar'} test; p_adjusted: {correction} over "
                   f"a family of {comparisons[0].family_size} comparisons per grading; interval: "
                   f"{comparisons[0].ci_method}, {100 * (1 - alpha):g}%")
        click.echo(f"gradings: original is {ORIGINAL_MEANINGS[original_from(rows)]}"
                   + ("; regraded is recomputed by full engines where they could decide" if regraded else ""))
    for grading, total in aggregate(comparisons).items():
        if total["gains"] or total["regressions"] or grading == "original":
            offset = "-" if total["share_offset"] is None else f"{100 * total['share_offset']:.0f}%"
            click.echo(f"{grading}: {total['gains']} gains, {total['regressions']} regressions, {offset} of gains offset")
    if regraded:
        for change in count_changes(comparisons):
            counts = ", ".join(f"{k} {change[k]:+d}" for k in ("gains", "regressions", "retained", "residual", "net"))
            click.echo(f"regrading changed {change['condition']}: {counts}")
        changes = changed_transitions(records, baseline, unit, scoring)
        click.echo(f"{len(changes)} tasks changed transition when regraded" + (":" if changes else "."))
        for change in changes:
            click.echo(f"  {change['condition']} task {change['task_id']}: {change['original']} -> {change['regraded']}")


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
    provenance_record, records = read_results(results)
    require_rescored(results, records)
    for warning in results_warnings(results, provenance_record):
        click.echo(warning, err=True)
    if show_cells and by_rule:
        raise click.UsageError("--cells and --rules are two different listings: choose one")
    if by_rule:
        rows, columns = diff.abstentions(records), diff.ABSTENTION_COLUMNS
    elif show_cells:
        rows, columns = diff.differing_cells(records), diff.CELL_COLUMNS
    else:
        rows, columns = diff.summary(records), diff.SUMMARY_COLUMNS
    meta = {"provenance": provenance_record} if fmt == "json" and provenance_record else None
    click.echo(render(columns, rows, fmt, meta))
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
@library_errors
def report_command(results, output, baseline, ci, alpha, correction, test, title):
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
    report = build_report(list(results), baseline, ci, alpha, correction, test)
    for warning in [*report.warnings, *report.pairing_warnings]:
        click.echo(warning, err=True)
    size = write_page(report, output, title)
    for line in summarise(report.records, left_out=report.left_out()).warnings():
        click.echo(line, err=True)
    click.echo(f"wrote {output} ({size / 1024:.0f} KB: {len(report.records)} cases, "
               f"{len(report.comparisons)} comparisons)", err=True)


@main.command("demo")
@click.option("--run", "run_dir", type=click.Path(path_type=Path, file_okay=False), default=demo_run.DEMO_RUN, show_default=in_repository(demo_run.DEMO_RUN), help="A demo run folder (dataset/ and outputs/<condition>/).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), help="Keep the results file here (default: a temporary file).")
@click.option("--engines", "engine_names", metavar="NAMES", help=f"Comma-separated full engines. Default: {DEFAULT_ENGINES_HELP}.")
@library_errors
def demo_command(run_dir, output, engine_names):
    """Rescore the bundled demo run and show what regrading changes.

    The demo holds real SpreadsheetBench tasks and three conditions (none and two
    skill libraries) whose outputs include correct answers written as formulas with
    no cached values, genuinely wrong answers, and a stale cache hiding a wrong
    formula. It prints the verdicts, the paired table before and after regrading,
    and how many failures were grader artifacts.

    \b
    Example:
      regrade demo
    """
    conditions = demo_run.conditions(run_dir)
    cases = spreadsheetbench_cases(run_dir / "dataset", conditions, stack="demo-agent", benchmark="spreadsheetbench")
    engines = chosen_engines(engine_names)
    settings = rescore_settings(engines)
    with tempfile.TemporaryDirectory() as scratch:
        target = output or Path(scratch) / "results.jsonl"
        records = run_rescore(cases, settings, os.cpu_count() or 1, None, target, {"command": "demo"},
                              [run_dir / "dataset" / "dataset.json"], kept=output is not None)
    click.echo(render(["verdict", "cases"], verdict_counts(records), "table"))
    click.echo("")
    rows = [c.as_row() for c in paired_table(records, "none")]
    click.echo(render(TABLE_COLUMNS, rows, "table"))
    click.echo("")
    click.echo(summarise(records).headline + ".")


@main.command("conformance")
@click.argument("corpus", type=click.Path(path_type=Path, file_okay=False))
@click.option("--engines", "engine_names", metavar="NAMES", help=f"Comma-separated full engines. Default: {DEFAULT_ENGINES_HELP}.")
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
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
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
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
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
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
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
@click.option("--engines", "engine_names", metavar="NAMES", help=f"Comma-separated full engines. Default: {DEFAULT_ENGINES_HELP}.")
@click.option("--record", is_flag=True, help=f"Write the outcomes to {MATRIX.relative_to(MATRIX.parents[2])}, with the engines' versions "
              "(on purpose: the tests compare with it). Engines not run keep their recorded outcomes.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
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


@main.group("audit")
def audit_group():
    """Audit a benchmark's data, or a grader against sealed controls whose truth is known.

    \b
    Examples:
      regrade audit benchmark ../shared/spreadsheetbench
      regrade audit grader spreadsheetbench-official gnumeric-recalc regrade
      regrade audit table official.json mine.json
    """


@audit_group.command("benchmark")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--grader", default="spreadsheetbench-official", show_default=True, type=click.Choice(list(GRADERS)),
              help="The grader the self-match and do-nothing checks use.")
@click.option("--recalc", type=click.Choice(RECALC_ENGINES), help="Also report answer cells this recalculation cannot compute "
              "(e.g. AGGREGATE under gnumeric). Slower: it recalculates every answer file.")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default="error", show_default=True,
              help="Exit with status 1 when a finding of this severity or worse exists.")
@click.option("--workers", type=click.IntRange(min=1), help="Processes (default: CPU count).")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks of dataset.json.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@library_errors
@click.pass_context
def audit_benchmark_command(ctx, folder, grader, recalc, fail_on, workers, limit, fmt):
    """Check a benchmark's tasks: goldens that fail themselves, inputs that already pass,
    malformed or repaired answer_position, goldens with uncached formulas, volatile
    functions or mostly empty answer ranges, missing or corrupt files, unusual test-case
    counts (and, with --recalc, functions a recalculation cannot compute).

    FOLDER is SpreadsheetBench-layout (dataset.json, spreadsheet/<id>/<n>_<id>_answer.xlsx
    and _input.xlsx; the Verified _golden/_init naming too). Every finding has a stable id,
    a severity, the task and a message (docs/audits.md lists the ids). --format json gives the
    report with a summary; csv gives one row per finding.

    \b
    Example:
      regrade audit benchmark ../shared/spreadsheetbench --format json > audit.json
    """
    with progress(len(load_dataset(folder)[:limit]), "tasks") as shown:
        report = audit_benchmark(folder, grader, recalc, workers, limit,
                                 on_task=lambda task: shown.advance(f"task {task.task_id}"))
    columns = ["id", "severity", "task_id", "case", "message"]
    if fmt == "json":
        click.echo(json.dumps({"format_version": 1, **report.as_json()}, indent=2, ensure_ascii=False))
    elif fmt == "csv":
        click.echo(render(["grader", *columns], report.flatten(), "csv"))
    else:
        summary = report.summary()
        click.echo(render(columns, [asdict(f) for f in report.findings()], fmt))
        click.echo(f"\n{summary['tasks']} tasks, {summary['cases']} test cases, graded by {report.grader}: "
                   f"{summary['golden_fails_itself']} goldens fail themselves, {summary['inputs_passing']} unmodified "
                   f"inputs pass ({summary['tasks_passing_unmodified']} tasks pass in full without any change).")
        click.echo("findings: " + (", ".join(f"{k} {v}" for k, v in summary["findings"].items()) or "none"))
    worst = report.worst()
    if worst is not None and SEVERITIES.index(worst) >= SEVERITIES.index(fail_on):
        ctx.exit(1)


@audit_group.command("grader")
@click.argument("names", nargs=-1)
@click.option("--command", "command", metavar="'CMD {output} {answer} {position}'", help="A grader run as a command: "
              "exit status 0 is a pass (or, with --threshold, the last number it prints is its score). Also "
              "{answer_sheet}, {input} (the task's input workbook, which a generated pack carries) and "
              "{instruction_type}; a control without what the command names is an error of that control.")
@click.option("--callable", "callable_target", metavar="MODULE:FUNCTION", help="A Python grader called as "
              "function(output, answer, position) -> bool, or a score with --threshold; a function that names "
              "input, answer_sheet or instruction_type among its parameters gets them by keyword (input is None "
              "where the pack has no input: the hand-made pack).")
@click.option("--threshold", type=float, help="The score a --command or --callable grader needs to pass.")
@click.option("--name", "label", help="What reports call a --command or --callable grader (default: command, callable).")
@click.option("--pack", "pack_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help=f"A sealed control pack: the hand-made one ({in_repository(CONTROL_PACK)}, the default) or one generated with "
                   "--controls-from --pack-out.")
@click.option("--expect-digest", metavar="DIGEST", help="Refuse to run unless the pack's digest is this one.")
@click.option("--controls-from", "controls_from", type=click.Path(path_type=Path, file_okay=False),
              help="Generate the controls from this SpreadsheetBench-layout dataset's own tasks (see below) "
                   "instead of using a pack.")
@click.option("--tasks", type=click.IntRange(min=1), help="With --controls-from: only N tasks, drawn at random with --seed.")
@click.option("--seed", type=int, default=0, show_default=True, help="With --tasks: the seed of the draw.")
@click.option("--pack-out", type=click.Path(path_type=Path, file_okay=False),
              help="With --controls-from: keep the sealed pack in this new folder (default: a temporary one, removed).")
@click.option("--task", "only_tasks", multiple=True, metavar="TASK_ID",
              help="Grade only the controls made from this benchmark task (repeat for several).")
@click.option("--calling", multiple=True, metavar="FUNCTION",
              help="Grade only the controls whose output has a cell formula calling FUNCTION (e.g. AGGREGATE; "
                   "repeat for several). The report records the selection and the pack's count.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Processes that grade controls (default: the CPU count).")
@executor_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@library_errors
def audit_grader_command(names, command, callable_target, threshold, label, pack_dir, expect_digest, controls_from,
                         tasks, seed, pack_out, only_tasks, calling, workers, executor, scheduler, fmt):
    """Run graders over a sealed control pack and count what each gets wrong.

    Positive controls are correct outputs, negative ones wrong outputs. Per category:
    false fails (correct outputs failed) and false passes (wrong outputs passed), the rate
    with its Wilson 95% interval, the failing controls and the tasks they come from. Every
    report carries the pack digest, the grader's settings and regrade's version.

    The hand-made pack (fixtures/controls) writes correct outputs many ways (no cached
    values, AGGREGATE, structured references, XLOOKUP, spilled arrays, numbers as text,
    dates ...) and wrong ones (a stale cache, the unmodified input, the right value in the
    wrong cell ...). --controls-from DATASET instead generates controls from the
    benchmark's own golden files, whose truth is known by construction: positive (the
    golden; its answer formulas without cached values; the answer range as constants; its
    references made absolute) and negative (a formula changed with its stale cache kept,
    or with no cache; a perturbed constant; the unmodified input; the values one row off;
    the answer range emptied). A control whose answer range holds formulas is kept only if
    regrade's engines decide it; what was left out, and test cases that yield no control,
    are listed as not_checked. The generated pack is sealed like the hand-made one:
    --pack-out keeps it, and --pack DIR --expect-digest D runs it again.

    --executor dask runs regrade's own work (checking generated controls, the regrade
    grader) on a Dask cluster, as regrade rescore does; the other built-in graders run
    in --workers processes here.

    --task and --calling grade a part of a pack (the whole pack stays sealed and is checked
    as a whole): a grader's rate on the controls that call AGGREGATE, say. The report's
    "selection" says which part, out of how many controls.

    NAMES are built-in graders: spreadsheetbench-official, spreadsheetbench,
    gnumeric-recalc, libreoffice-recalc, regrade (several make one table). Or give
    --command or --callable instead.

    \b
    Examples:
      regrade audit grader spreadsheetbench-official gnumeric-recalc regrade
      regrade audit grader --command 'python my_grader.py {output} {answer} {position}'
      regrade audit grader spreadsheetbench-official regrade --controls-from DATA --pack-out pack/
      regrade audit grader my-grader --pack pack/ --expect-digest 3f2a...
      regrade audit grader gnumeric-recalc --pack pack/ --calling AGGREGATE
    """
    if label and not (command or callable_target):
        raise GraderError("--name labels a --command or --callable grader; a built-in grader has its own name")
    graders = [make_grader(None, command, callable_target, threshold, label)] if command or callable_target else []
    if graders and names:
        raise GraderError("give built-in names or --command/--callable, not both")
    graders += [make_grader(name) for name in names]
    if not graders:
        raise GraderError(f"name a grader: one of {', '.join(GRADERS)}, or --command, or --callable")
    if controls_from is None and (tasks is not None or pack_out is not None):
        raise click.UsageError("--tasks and --pack-out go with --controls-from")
    if controls_from is not None and (pack_dir is not None or expect_digest is not None):
        raise click.UsageError("--controls-from generates a pack; --pack and --expect-digest run an existing one")
    check_executor(executor, scheduler)
    if executor == "dask" and controls_from is None and not any(isinstance(g, RegradeGrader) for g in graders):
        raise click.UsageError("--executor dask runs regrade's own work (--controls-from, the regrade grader); "
                               "these graders run here")
    workers = workers or os.cpu_count() or 1
    with contextlib.ExitStack() as stack:
        if controls_from is not None:
            folder = pack_out or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="regrade-controls-")))
            pack = generated_pack(controls_from, folder, tasks, seed, workers, executor, scheduler)
        else:
            pack = load_pack(pack_dir or CONTROL_PACK, expect_digest)
        pack = select_controls(pack, only_tasks, calling)
        if pack.selection is not None:
            click.echo(f"grading {len(pack.controls)} of the pack's {pack.selection['of']} controls "
                       f"(tasks: {', '.join(pack.selection['tasks']) or 'all'}; "
                       f"calling: {', '.join(pack.selection['calling']) or 'any'})", err=True)
        reports = []
        for grader in graders:
            with progress(len(pack.controls), f"controls graded by {grader.name}") as shown:
                reports.append(audit_grader(grader, pack, workers,
                                            lambda control: shown.advance(f"{grader.name} {control.id}"),
                                            executor, scheduler).as_json())
    _show_grader_audits(reports, fmt)
    errored = [r for r in reports if r["errors"]]
    for report in errored:
        control, why = next(iter(report["errors"].items()))
        click.echo(f"{report['grader']}: {len(report['errors'])} controls could not be judged, counted neither pass "
                   f"nor fail (first, {control}: {why})", err=True)
    if errored:
        raise click.exceptions.Exit(1)


def generated_pack(dataset: Path, folder: Path, tasks: int | None, seed: int, workers: int,
                   executor: str = "local", scheduler: str | None = None) -> ControlPack:
    """Generate and seal a pack from ``dataset`` in ``folder``, saying on stderr what it holds and left out."""
    settings = rescore_settings()
    started = time.monotonic()
    with contextlib.ExitStack() as displays:
        written = displays.enter_context(progress(len(test_cases(dataset, tasks, seed)[0]), "test cases written"))

        def check(count: int) -> Callable[[int, dict, bool], None]:
            displays.close()  # the writing is done
            checking = displays.enter_context(progress(count, "controls checked"))
            return lambda index, record, cached: checking.advance(
                f"{record['condition']} {record['task_id']}-{record['case']}: {record['verdict']}", cached)

        made = generate_pack(dataset, folder, settings, tasks, seed, workers, ResultCache(default_cache_dir()),
                             lambda case: written.advance(f"{case.task_id}-{case.case}"), check,
                             executor, scheduler)
    by_kind = Counter(CONTROL_CATEGORIES[c.category][0] for c in made.kept)
    reasons = Counter(n.reason.split(" (")[0] for n in made.not_checked)
    click.echo(f"generated {len(made.kept)} controls ({by_kind['positive']} positive, {by_kind['negative']} negative) "
               f"from {dataset} in {time.monotonic() - started:.0f} s; pack digest {made.digest}", err=True)
    if made.not_checked:
        shown = "; ".join(f"{count} {reason}" for reason, count in reasons.most_common())
        click.echo(f"not checked ({len(made.not_checked)}): {shown}", err=True)
    click.echo(f"run it again: regrade audit grader NAMES --pack {folder} --expect-digest {made.digest}", err=True)
    return load_pack(folder, made.digest)


@audit_group.command("table")
@click.argument("reports", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@library_errors
def audit_table_command(reports, fmt):
    """Put saved grader audits (audit grader --format json) side by side; says so when they
    were made with different control packs or regrade versions.

    \b
    Example:
      regrade audit grader regrade --format json > regrade.json
      regrade audit table official.json regrade.json
    """
    loaded: list[dict] = []
    for path in reports:
        data = json.loads(path.read_text())
        loaded.extend(data["reports"] if "reports" in data else [data])
    _show_grader_audits(loaded, fmt)


def _show_grader_audits(reports: list[dict], fmt: str) -> None:
    rows, warnings = audit_table(reports)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    if fmt == "json":
        payload = reports[0] if len(reports) == 1 else {"reports": reports, "warnings": warnings}
        click.echo(json.dumps({"format_version": 1, **payload}, indent=2, ensure_ascii=False))
        return
    if fmt == "table":  # the controls named in full in json and csv
        rows = [{**row, "failing": first_few(row["failing"].split(), 3)} for row in rows]
    click.echo(render([*AUDIT_COLUMNS, "tasks"] if fmt != "table" else AUDIT_COLUMNS, rows, fmt))
    if fmt == "table":
        for report in reports:
            wrong = sum(c["false_fail"] + c["false_pass"] for c in report["categories"])
            judged = sum(c["probes"] - c.get("errored", 0) for c in report["categories"])
            overall = report.get("overall") or {}
            rates = "; ".join(f"{kind} {_rate(overall[kind])}" for kind in ("positive", "negative") if kind in overall)
            part = ""
            if selection := report.get("selection"):
                part = f" of the pack's {selection['of']}, " + "; ".join(
                    f"{key} {' or '.join(selection[key])}" for key in ("tasks", "calling") if selection[key])
            click.echo(f"{report['grader']}: {wrong} of {judged} controls{part} judged wrongly ({rates}; "
                       f"pack {report['pack_digest'][:12]}, regrade {report['regrade_version']})")
        not_checked = reports[0].get("not_checked") or []
        if not_checked:
            click.echo(f"{len(not_checked)} test cases or controls were not checked (--format json lists each "
                       "with its reason)")


def _rate(row: dict) -> str:
    rate = row.get("false_fail_rate") if row.get("false_fail_rate") is not None else row.get("false_pass_rate")
    interval = row.get("false_fail_interval") or row.get("false_pass_interval")
    if rate is None or interval is None:
        return "-"
    return f"{100 * rate:.1f}% [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
