"""``regrade slice build``: the refusal slice's sealed pack (issue 48, in part)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import click

from regrade import api
from regrade.results.records import CaseRecord
from regrade.cli.app import library_errors, main, quiet
from regrade.cli.options import (
    check_protocol_options, chosen_engines, engines_option, format_option, refused_on_mismatch, slice_run_options,
)
from regrade.refusal.protocol import TEMPLATE, load_protocol
from regrade.paired.result import pair
from regrade.refusal.score import SliceScore
from regrade.render.refusal import REFUSAL_COLUMNS, refusal_text
from regrade.render.rows import render
from regrade.runs.cases import parse_conditions


@main.group("slice")
def slice_group() -> None:
    """The refusal slice: negative controls made from a benchmark's own tasks.

    `slice build` makes the sealed pack; `slice score` (or `regrade rescore --pack`) scores
    a run over it: outputs folders, manifests, Harbor jobs and inspect_ai logs, the four
    figures together with the covariates beside them; `regrade table` and `report` show
    them beside every success rate. `regrade protocol` locks a run's settings.

    \b
    Example:
      regrade slice build ../shared/spreadsheetbench --ordinary 20 --negative 10 -o pack/
    """


@slice_group.command("build")
@click.argument("dataset", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--ordinary", type=click.IntRange(min=0), default=20, show_default=True,
              help="Ordinary tasks: a source task as it is.")
@click.option("--negative", type=click.IntRange(min=0), default=10, show_default=True,
              help="Negative controls: a source task whose inputs lost the cells its answer depends on.")
@click.option("--seed", type=int, default=0, show_default=True, help="The seed of the draw and of the task ids.")
@click.option("-o", "--output", "pack", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="The pack for the harness (a new or empty folder): dataset.json and spreadsheet/<id>/ inputs.")
@click.option("--key", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the key goes, apart from the pack (default: the pack's folder name + .key).")
@engines_option
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes that check the negative controls.")
@library_errors
def slice_build_command(dataset, ordinary, negative, seed, pack, key, engine_names, workers):
    """Build a sealed refusal-slice pack from a SpreadsheetBench-layout DATASET.

    A negative control is a real task with a specification gap: from each of its input
    workbooks the constant cells its answer's formulas read (directly or through other
    formulas) are cleared, the instruction unchanged; the only right outcome is to stop
    without an artifact. Each is verified by construction: the golden with the same cells
    cleared is recomputed by the engines and must no longer give the golden's values; a
    task where that fails, or whose answer holds no formula, is left out and counted.

    The pack is in the benchmark's own layout, so a harness runs it unchanged; nothing in
    it tells the two kinds apart (random task ids, no kind field, a source task gives one
    or the other, never both). The key (kinds, sources, cells removed, the ordinary tasks'
    answers) is written apart. Both folders are sealed (manifest.json: every file's sha256
    and one digest); the same DATASET, options and seed give byte-identical folders. The
    pack's digest goes to stdout.

    \b
    Example:
      regrade slice build ../shared/spreadsheetbench --ordinary 20 --negative 10 -o pack/
    """
    started = time.monotonic()
    engines = chosen_engines(engine_names)
    checked = Counter[str]()

    def check(index: int, record: CaseRecord, cached: bool) -> None:  # the total is not known ahead: a count
        checked["cases"] += 1
        if not quiet():
            click.echo(f"[{checked['cases']}] checked task {record.task_id} case {record.case} without its inputs: "
                       f"{record.verdict}", err=True)

    made = api.build_slice(dataset, pack, key, ordinary, negative, seed, workers, engines, on_check=check)
    kinds = Counter(t.kind for t in made.tasks)
    click.echo(f"built {kinds['ordinary']} ordinary tasks and {kinds['negative']} negative controls from {dataset} in "
               f"{time.monotonic() - started:.0f} s: the pack in {made.folder}, its key in {made.key_folder} "
               f"(key digest {made.key_digest})", err=True)
    if made.left_out:
        reasons = Counter(e.reason.split(": ", 1)[-1].split(" (")[0] for e in made.left_out)
        shown_reasons = "; ".join(f"{count} {reason}" for reason, count in reasons.most_common())
        click.echo(f"left out as negative controls ({len(made.left_out)} tasks): {shown_reasons}", err=True)
    click.echo(made.digest)


PAIRED_COLUMNS = ["benchmark", "condition", "grading", "n", "pass_rate_baseline", "pass_rate_treatment", "gains",
                  "regressions", "net", "delta", "ci_lower", "ci_upper", "p_value", "p_adjusted"]


@slice_group.command("score")
@click.argument("pack", type=click.Path(path_type=Path, file_okay=False, exists=True))
@slice_run_options
@click.option("--baseline", default=None, help="Pair every other condition against this one, task by task, on "
              "success (ordinary tasks) and on abstention (negative controls): gains, regressions, McNemar.")
@engines_option
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes that grade the ordinary tasks' outputs.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the results file (JSON Lines, as regrade rescore --pack writes it).")
@format_option
@library_errors
def slice_score_command(pack, conditions, manifest, key, expect_digest, protocol_file, protocol_digest, baseline,
                        engine_names, workers, output, fmt):
    """Score a run over a refusal-slice PACK: the four figures together, per condition.

    Each --condition NAME=PATH is an outputs folder, a Harbor job folder or inspect_ai
    logs (a log or a folder of logs); --manifest gives conditions as rows. How each
    records an abstention is one convention (docs/runs.md): test case n of task ID is
    an output `<n>_<ID>_output.xlsx` or an abstention `<n>_<ID>_abstain.json` (or
    `.txt`) giving the reason: files in an outputs folder or among a Harbor trial's
    artifacts; in an inspect_ai sample's store, `abstained` (true) and `outputs` (the
    workbooks written); in a manifest, the columns output_path and abstained.

    Per condition: the success rate (ordinary tasks whose every test case passes
    regrade's full grade; and by the original, value-only grade), the abstention
    accuracy (negative controls where every case abstained with no output), the
    invalid-completion rate (negative controls with any output, however plausible, or
    any case with an output beside an abstention) and the false-abstain rate (ordinary
    tasks with an abstention), each with its Wilson 95% interval; a negative control
    with neither is counted as no_trace and said. Beside them the covariates' medians
    and totals: retries, tool_calls, wall_s, tokens, cost_usd (from a manifest's
    columns, a Harbor trial's result and trajectory, an inspect_ai sample's usage,
    events, working time and error retries; absent, never 0, where none logged one).

    A pack that does not match its manifest, or --expect-digest, is refused (exit 2),
    as is a --protocol whose digest is not --protocol-digest or whose pack is not
    PACK. Every row carries its channel: the protocol's (scored or exploratory),
    exploratory where the run's own records (a Harbor job's config, an inspect_ai
    eval's model and settings) contradict it, with the reason, or unlocked without a
    protocol. With --baseline, each condition is paired against it task by task, on
    success over the ordinary tasks and on abstention over the negative controls
    (gains, regressions, delta and its interval, exact McNemar).

    \b
    Example:
      regrade slice score pack/ --condition honest=runs/honest --expect-digest DIGEST
    """
    named = slice_conditions(conditions, manifest, protocol_file, protocol_digest)
    scored = refused_on_mismatch(lambda: api.score_slice(
        pack, named, key, expect_digest, workers, chosen_engines(engine_names), protocol=protocol_file,
        protocol_digest=protocol_digest, manifest=manifest, output=output, command={"command": "slice score"}))
    for note in scored.notes:
        click.echo(f"warning: {note}", err=True)
    rows = [f.row() for f in scored.figures]
    paired = pair(scored.records, baseline) if baseline is not None else None
    if paired is not None and fmt == "json":
        click.echo(render(REFUSAL_COLUMNS, rows, fmt, {"paired": paired.rows(), "paired_warnings": paired.warnings}))
    else:
        click.echo(refusal_text(rows, fmt))
    if paired is not None and fmt != "json":
        click.echo("")
        click.echo(render(PAIRED_COLUMNS, paired.rows(), fmt))
        for warning in paired.warnings:
            click.echo(warning, err=True)
    say_slice(scored)
    if output is not None:
        click.echo(f"wrote {len(scored.records)} cases to {output}", err=True)


def slice_conditions(conditions: tuple[str, ...], manifest: Path | None, protocol_file: Path | None,
                     protocol_digest: str | None) -> dict[str, Path]:
    """The --condition NAME=PATH options as a mapping, the options checked together."""
    named = parse_conditions(list(conditions))
    if not conditions and manifest is None:
        raise click.UsageError("name the run: --condition NAME=PATH (repeat) or --manifest FILE")
    check_protocol_options(protocol_file, protocol_digest)
    return named


def say_slice(scored: SliceScore) -> None:
    """On stderr: the channel of the figures, the conditions left exploratory and why, and
    the negative controls that left no trace."""
    for f in scored.figures:
        if f.channel != "scored":
            click.echo(f"{f.condition}: channel {f.channel}: " + ("no locked protocol (--protocol): "
                       if f.channel == "unlocked" else "") + "these figures are exploratory and belong in no "
                       "scored table" + (f" ({'; '.join(f.drift)})" if f.drift else ""), err=True)
        if f.no_trace:
            click.echo(f"{f.condition}: {len(f.no_trace)} negative controls left neither an output nor an abstention "
                       f"({', '.join(f.no_trace[:5])}): counted as no abstention", err=True)


@main.group("protocol")
def protocol_group() -> None:
    """A locked protocol: a scored run's settings, frozen and hashed before its first call.

    \b
    Example:
      regrade protocol init -o protocol.toml
      regrade protocol lock protocol.toml
    """


@protocol_group.command("init")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="The protocol file to write (refused if it exists).")
def protocol_init_command(output):
    """Write a protocol file with every field to fill: channel (scored or exploratory), the
    pack's digest, the retry cap, the tools allowed, the route (model, provider) and the
    decoding settings.

    \b
    Example:
      regrade protocol init -o protocol.toml
    """
    if output.exists():
        raise click.UsageError(f"{output} exists: a protocol is written once, then locked")
    output.write_text(TEMPLATE, encoding="utf-8")
    click.echo(f"wrote {output}: fill it in, then regrade protocol lock {output}", err=True)


@protocol_group.command("lock")
@click.argument("protocol_file", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@library_errors
def protocol_lock_command(protocol_file):
    """Check a protocol file and print its digest: the sha256 of its fields (comments and
    layout do not change it; any value does). Pass it to `slice score --protocol-digest`.

    \b
    Example:
      regrade protocol lock protocol.toml
    """
    click.echo(load_protocol(protocol_file).digest())
