"""``regrade grade``, ``rescore`` and ``demo``: grading a run."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import click

from regrade.engines.registry import ENGINES, FULL_ENGINES, open_engine
from regrade import demo as demo_run
from regrade.grading.policies import get_policy
from regrade.grading.grade import grade_case
from regrade import api
from regrade.paired.result import pair
from regrade.render.rows import render
from regrade.results.files import json_value, write_jsonl
from regrade.run import SettingsError
from regrade.runs.cases import Case
from regrade.results.summary import summarise, verdict_counts
from regrade.cli.app import debugging, in_repository, library_errors, main
from regrade.cli.options import (
    DEFAULT_ENGINES_HELP, RescoreDisplay, check_executor, chosen_engines, engines_option, executor_options, load_cases,
    pack_options, quorum_option, refused_on_mismatch, run_options, say_summary, say_written, scale_options,
)
from regrade.cli.slice_commands import say_slice, slice_conditions
from regrade.cli.table_commands import TABLE_COLUMNS
from regrade.render.refusal import refusal_text


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




@main.command("rescore")
@run_options
@click.option("--engines", "engine_names", metavar="NAMES", help=f"Comma-separated full engines for the consensus ({', '.join(FULL_ENGINES)}). Default: {DEFAULT_ENGINES_HELP}.")
@quorum_option
@scale_options
@executor_options
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True, help="Results file (JSON Lines) to write.")
@click.option("--pack", type=click.Path(path_type=Path, file_okay=False, exists=True), default=None,
              help="A refusal-slice pack (regrade slice build) instead of --dataset: each --condition NAME=PATH "
                   "(an outputs folder, a Harbor job or inspect_ai logs) or --manifest row is scored with the "
                   "pack's key; verdicts abstain-ok, invalid-completion, false-abstain and no-trace join the others.")
@pack_options
@library_errors
def rescore_command(dataset, conditions, harbor_jobs, runs_dir, allow_missing, tasks_with_outputs, stack, benchmark, manifest,
                    policy, timeout, engine_names, quorum, shallow, workers, cache_dir, no_cache, executor, scheduler,
                    output, pack, key, expect_digest, protocol_file, protocol_digest):
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

    With --pack, the run is over a refusal-slice pack (`regrade slice`): every test
    case gets a record, an ordinary task's output graded as above, and the figures
    (success rate, abstention accuracy, invalid completions, false abstentions) are
    printed beside the verdict counts; see `regrade slice score --help`.

    \b
    Example:
      regrade rescore --dataset DATA --condition none=OUT_NONE \\
          --condition skills=OUT_SKILLS -o results.jsonl
      regrade rescore --pack pack/ --expect-digest DIGEST --condition honest=runs/honest -o slice.jsonl
    """
    engines = chosen_engines(engine_names)
    if pack is not None:
        _rescore_pack(pack, key, expect_digest, protocol_file, protocol_digest, dataset, conditions, harbor_jobs,
                      runs_dir, manifest, engines, workers, cache_dir, no_cache, output, stack, benchmark)
        return
    unused = [name for name, value in (("--key", key), ("--expect-digest", expect_digest),
                                       ("--protocol", protocol_file), ("--protocol-digest", protocol_digest)) if value]
    if unused:
        raise click.UsageError(f"{', '.join(unused)} go with --pack (a refusal-slice pack)")
    check_executor(executor, scheduler)
    started = time.monotonic()
    with RescoreDisplay(dataset, cached=not no_cache) as display:
        try:
            results = api.rescore(dataset, conditions, runs_dir, manifest, harbor=harbor_jobs, engines=engines,
                                  quorum=quorum, policy=policy, shallow=shallow, timeout_s=timeout, workers=workers,
                                  output=output, cache=not no_cache, cache_dir=cache_dir, allow_missing=allow_missing,
                                  tasks_with_outputs=tasks_with_outputs, stack=stack, benchmark=benchmark,
                                  executor=executor, scheduler=scheduler, on_loaded=display.loaded,
                                  on_record=display.record, command={"command": "rescore"})
        except SettingsError as exc:
            raise click.BadParameter(str(exc), param_hint="--quorum") from None
    records = results.cases
    say_written(records, output, results.quorum, len(engines))
    click.echo(render(["verdict", "cases"], verdict_counts(records), "table"))
    say_summary(summarise(records, time.monotonic() - started, results.left_out), output)
    work = getattr(results.provenance, "engine_work", None)
    if debugging() and work:
        click.echo(f"debug: the engines' own CPU {sum(work['engine_cpu_s'].values()):.1f} s on workbooks and "
                   f"{sum(work['engine_start_cpu_s'].values()):.1f} s starting ({work['engine_cpu_s']}), the "
                   f"goldens' reading {work.get('golden_reading_cpu_s', 0.0):.1f} s, over "
                   f"{work['workers']} workers: floor {work['floor_s']:.1f} s, wall {work['wall_s']:.1f} s "
                   f"({work['wall_over_floor']}x the floor); evaluations answered from shared work: "
                   f"{work.get('shared_evaluations') or 'none'}", err=True)


def _rescore_pack(pack, key, expect_digest, protocol_file, protocol_digest, dataset, conditions, harbor_jobs, runs_dir,
                  manifest, engines, workers, cache_dir, no_cache, output, stack, benchmark) -> None:
    """``rescore --pack``: a run over a refusal-slice pack, its records written and its figures printed."""
    if dataset is not None or runs_dir is not None:
        raise click.UsageError("--pack is the run's tasks: give it instead of --dataset and --runs")
    harbor = [text if "=" in text else f"{Path(text).name}={text}" for text in harbor_jobs]
    named = slice_conditions((*conditions, *harbor), manifest, protocol_file, protocol_digest)
    started = time.monotonic()
    with RescoreDisplay(None, cached=not no_cache, inventory=False) as display:
        scored = refused_on_mismatch(lambda: api.score_slice(
            pack, named, key, expect_digest, workers, engines, cache_dir, protocol_file, protocol_digest, manifest,
            output, stack, benchmark, cache=not no_cache, on_record=display.record,
            command={"command": "rescore --pack"}))
    for note in scored.notes:
        click.echo(f"warning: {note}", err=True)
    click.echo(f"wrote {len(scored.records)} cases to {output}", err=True)
    click.echo(render(["verdict", "cases"], verdict_counts(scored.records), "table"))
    click.echo("")
    click.echo(refusal_text([f.row() for f in scored.figures], "table"))
    say_slice(scored)
    click.echo(f"scored in {time.monotonic() - started:.0f} s", err=True)


@main.command("demo")
@click.option("--run", "run_dir", type=click.Path(path_type=Path, file_okay=False), default=demo_run.DEMO_RUN, show_default=in_repository(demo_run.DEMO_RUN), help="A demo run folder (dataset/ and outputs/<condition>/).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), help="Keep the results file here (default: a temporary file).")
@engines_option
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
    engines = chosen_engines(engine_names)
    with tempfile.TemporaryDirectory() as scratch, RescoreDisplay(None, cached=False, inventory=False) as display:
        target = output or Path(scratch) / "results.jsonl"
        results = api.rescore(run_dir / "dataset", conditions, engines=engines, workers=os.cpu_count() or 1,
                              output=target, cache=False, stack="demo-agent", on_loaded=display.loaded,
                              on_record=display.record, command={"command": "demo"})
    records = results.cases
    say_written(records, target, results.quorum, len(engines), kept=output is not None)
    click.echo(render(["verdict", "cases"], verdict_counts(records), "table"))
    click.echo("")
    table = pair(records, "none")
    click.echo(render(TABLE_COLUMNS, table.rows(), "table"))
    click.echo(table.caption)  # the demo has no refusal slice, and says so under its rates
    click.echo("")
    click.echo(summarise(records).headline + ".")
