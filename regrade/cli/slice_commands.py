"""``regrade slice build``: the refusal slice's sealed pack (issue 48, in part)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import click

from regrade import api
from regrade.results.records import CaseRecord
from regrade.cli.app import library_errors, main, quiet
from regrade.cli.options import chosen_engines, engines_option, format_option
from regrade.refusal.protocol import TEMPLATE, ProtocolMismatch, load_protocol
from regrade.paired.result import pair
from regrade.refusal.score import PackDigestError, paired_records
from regrade.refusal.traces import COVARIATES
from regrade.render.rows import render


@main.group("slice")
def slice_group() -> None:
    """The refusal slice: negative controls made from a benchmark's own tasks.

    Built so far: `slice build`, the sealed pack, and `slice score`, the four figures of
    a run's outputs folders over it. Not built yet: abstentions read from manifests,
    inspect_ai logs and Harbor jobs, the figures in `regrade table` and `report`,
    covariates and the locked protocol.

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


PAIRED_COLUMNS = ["benchmark", "condition", "baseline", "n", "pass_rate_baseline", "pass_rate_treatment", "gains",
                  "regressions", "net", "delta", "ci_lower", "ci_upper", "p_value", "p_adjusted"]
SCORE_COLUMNS = ["condition", "channel", "ordinary", "negative", "success_rate", "success_rate_interval", "abstention_accuracy",
                 "abstention_accuracy_interval", "invalid_completion_rate", "invalid_completion_rate_interval",
                 "false_abstain_rate", "false_abstain_rate_interval", "no_trace",
                 *(f"{name}_{what}" for name in COVARIATES for what in ("median", "total"))]


@slice_group.command("score")
@click.argument("pack", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--condition", "conditions", multiple=True, metavar="NAME=DIR",
              help="A condition's outputs folder over the pack (repeat for several).")
@click.option("--manifest", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Conditions as manifest rows (CSV or JSON Lines): condition, task_id, case, output_path, "
                   "abstained, and the covariates retries, tool_calls, wall_s, tokens.")
@click.option("--key", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="The pack's key (default: the pack's folder name + .key).")
@click.option("--expect-digest", metavar="DIGEST", help="Refuse (exit 2) unless the pack's digest is this one.")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="The locked protocol the run followed (regrade protocol init, lock): its channel labels every row.")
@click.option("--protocol-digest", metavar="DIGEST",
              help="With --protocol: refuse (exit 2) unless its digest is this one, as regrade protocol lock printed it.")
@click.option("--baseline", default=None, help="Pair every other condition against this one, task by task, on "
              "success (ordinary tasks) and on abstention (negative controls): gains, regressions, McNemar.")
@engines_option
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes that grade the ordinary tasks' outputs.")
@format_option
@library_errors
def slice_score_command(pack, conditions, manifest, key, expect_digest, protocol_file, protocol_digest, baseline,
                        engine_names, workers, fmt):
    """Score outputs folders over a refusal-slice PACK: the four figures together.

    In an outputs folder, test case n of task ID is an output `<n>_<ID>_output.xlsx`
    or an abstention: no output and `<n>_<ID>_abstain.json` (or `.txt`) giving the
    reason; in a --manifest, a row per case with output_path, abstained (true/false) and
    any of the covariates retries, tool_calls, wall_s, tokens. Per condition: the success rate (ordinary tasks whose every test case passes
    regrade's full grade), the abstention accuracy (negative controls where every case
    abstained with no output), the invalid-completion rate (negative controls with any
    output, however plausible) and the false-abstain rate (ordinary tasks with an
    abstention), each with its Wilson 95% interval. A case with both an output and an
    abstention is an invalid completion; a task with neither is counted as no_trace and
    said. A pack that does not match its manifest, or --expect-digest, is refused (exit
    2), as is a --protocol whose digest is not --protocol-digest or whose pack is not
    PACK. Every row carries the channel: the protocol's (scored or exploratory), or
    unlocked without one, and the covariates' medians and totals (empty where no case
    logged one, never 0). Not read yet: inspect_ai logs and Harbor jobs; a run's own
    records are not yet checked against the protocol. With
    --baseline, each condition is paired against it task by task, on success over the
    ordinary tasks and on abstention over the negative controls (the paired table's
    statistics: gains, regressions, delta and its interval, exact McNemar).

    \b
    Example:
      regrade slice score pack/ --condition honest=runs/honest --expect-digest DIGEST
    """
    named = {}
    for text in conditions:
        name, sep, folder = text.partition("=")
        if not sep or not name or not folder:
            raise click.BadParameter(f"{text!r} is not NAME=DIR", param_hint="--condition")
        named[name] = Path(folder)
    if not conditions and manifest is None:
        raise click.UsageError("name the run: --condition NAME=DIR (repeat) or --manifest FILE")
    if protocol_digest is not None and protocol_file is None:
        raise click.UsageError("--protocol-digest checks a --protocol file: pass it too")
    try:
        figures = api.score_slice(pack, named, key, expect_digest, workers, chosen_engines(engine_names),
                                  protocol=protocol_file, protocol_digest=protocol_digest, manifest=manifest)
    except (PackDigestError, ProtocolMismatch) as exc:
        click.echo(f"Error: {exc}", err=True)
        raise click.exceptions.Exit(2) from None
    rows = [f.row() for f in figures]
    paired = pair(paired_records(figures), baseline) if baseline is not None else None
    channel = figures[0].channel if figures else "unlocked"
    if channel != "scored":
        click.echo(f"channel {channel}: " + ("no locked protocol (--protocol): " if channel == "unlocked" else "")
                   + "these figures are exploratory and belong in no scored table", err=True)
    if paired is not None and fmt == "json":
        click.echo(render(SCORE_COLUMNS, rows, fmt, {"paired": paired.rows(), "paired_warnings": paired.warnings}))
    else:
        click.echo(render(SCORE_COLUMNS, rows, fmt))
    if paired is not None and fmt != "json":
        click.echo("")
        click.echo(render(PAIRED_COLUMNS, paired.rows(), fmt))
        for warning in paired.warnings:
            click.echo(warning, err=True)
    for f in figures:
        if f.no_trace:
            click.echo(f"{f.condition}: {len(f.no_trace)} tasks left neither an output nor an abstention "
                       f"({', '.join(f.no_trace[:5])}): counted as no success and no abstention", err=True)


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
