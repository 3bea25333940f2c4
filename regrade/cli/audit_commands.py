"""``regrade audit benchmark``, ``audit grader`` and ``audit table``."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Literal

import click

from regrade import api
from regrade.audit.benchmark import RECALC_ENGINES, SEVERITIES
from regrade.audit.generated import CATEGORIES as CONTROL_CATEGORIES
from regrade.audit.generated import test_cases
from regrade.audit.grader import AUDIT_COLUMNS, audit_table
from regrade.audit.controls import PACK as CONTROL_PACK
from regrade.audit.controls import ControlPack, load_pack, select_controls
from regrade.grading.graders import GRADERS, GraderError, RegradeGrader, make_grader
from regrade.render.rows import render
from regrade.results.records import CaseRecord
from regrade.runs.cases import load_dataset
from regrade.messages import first_few
from regrade.cli.app import in_repository, library_errors, main, progress
from regrade.cli.options import check_executor, executor_options, format_option


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
@format_option
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
        report = api.audit_benchmark(folder, grader, recalc, workers, limit,
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
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Processes that write (with --controls-from) and grade controls (default: the CPU count).")
@executor_options
@format_option
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
        pack = select_controls(pack, only_tasks, calling)  # said before any grader runs; each audit keeps it
        if pack.selection is not None:
            click.echo(f"grading {len(pack.controls)} of the pack's {pack.selection['of']} controls "
                       f"(tasks: {', '.join(pack.selection['tasks']) or 'all'}; "
                       f"calling: {', '.join(pack.selection['calling']) or 'any'})", err=True)
        reports = []
        for grader in graders:
            with progress(len(pack.controls), f"controls graded by {grader.name}") as shown:
                reports.append(api.audit_grader(grader, pack, workers=workers, executor=executor, scheduler=scheduler,
                                                on_control=lambda control: shown.advance(f"{grader.name} {control.id}"))
                               .as_json())
    _show_grader_audits(reports, fmt)
    errored = [r for r in reports if r["errors"]]
    for report in errored:
        control, why = next(iter(report["errors"].items()))
        click.echo(f"{report['grader']}: {len(report['errors'])} controls could not be judged, counted neither pass "
                   f"nor fail (first, {control}: {why})", err=True)
    if errored:
        raise click.exceptions.Exit(1)


def generated_pack(dataset: Path, folder: Path, tasks: int | None, seed: int, workers: int,
                   executor: Literal["local", "dask"] = "local", scheduler: str | None = None) -> ControlPack:
    """Generate and seal a pack from ``dataset`` in ``folder``, saying on stderr what it holds and left out."""
    started = time.monotonic()
    with contextlib.ExitStack() as displays:
        written = displays.enter_context(progress(len(test_cases(dataset, tasks, seed)[0]), "test cases written"))

        def check(count: int) -> Callable[[int, CaseRecord, bool], None]:
            displays.close()  # the writing is done
            checking = displays.enter_context(progress(count, "controls checked"))
            return lambda index, record, cached: checking.advance(
                f"{record.condition} {record.task_id}-{record.case}: {record.verdict}", cached)

        made = api.generate_controls(dataset, folder, tasks, seed, workers, executor=executor, scheduler=scheduler,
                                     on_case=lambda case: written.advance(f"{case.task_id}-{case.case}"),
                                     on_check=check)
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
@format_option
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
