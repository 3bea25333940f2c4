"""``regrade slice build``: the refusal slice's sealed pack (issue 48, in part)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import click

from regrade import api
from regrade.results.records import CaseRecord
from regrade.cli.app import library_errors, main, quiet
from regrade.cli.options import chosen_engines, engines_option


@main.group("slice")
def slice_group() -> None:
    """The refusal slice: negative controls made from a benchmark's own tasks.

    Built so far: `slice build`, the sealed pack. Not built yet: scoring abstentions
    (abstain-ok, invalid-completion, false-abstain), covariates and the locked protocol.

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
