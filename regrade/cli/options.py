"""Options shared by commands, and what they decide: which run to load, the engines and quorum, scale and executor."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, TypeVar

import click

from regrade.engines.base import DEFAULT_TIMEOUT_S
from regrade.engines.registry import FULL_ENGINES, default_full_engines, get_engine
from regrade.grading.policies import POLICIES
from regrade.run import RescoreSettings, SettingsError, default_cache_dir, rescore_settings
from regrade.run.settings import SHALLOW_ENGINES
from regrade.refusal.protocol import ProtocolMismatch
from regrade.refusal.score import PackDigestError
from regrade.runs.load import LoadedRun, load_run
from regrade.runs.inventory import check_inventory
from regrade.results.records import CaseRecord
from regrade.results.summary import RunSummary
from regrade.render.progress import Progress
from regrade.render.rows import FORMATS
from regrade.cli.app import POSITIVE_SECONDS, progress, quiet


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
    say_inventory(run, dataset)
    check_inventory(run.inventories, allow_missing, manifest)
    return run


def say_inventory(run: LoadedRun, dataset: Path | None) -> None:
    """Each condition's outputs found and missing, what the run's loading noticed and left out."""
    for inventory in run.inventories:
        if not quiet() or not inventory.complete:
            click.echo(inventory.message(), err=True)
    for line in [*run.notes, *run.left_out.messages(dataset)]:
        click.echo(line, err=True)
    if (warning := run.most_outputs_missing()) is not None:
        click.echo(warning, err=True)


class RescoreDisplay:
    """What ``regrade rescore`` and ``regrade demo`` say while :func:`regrade.api.rescore` loads and
    grades a run: the inventory once it is loaded, then a line (or a bar) per case; after a
    Ctrl-C, how much was graded and whether the cache keeps it. A context manager."""

    def __init__(self, dataset: Path | None, cached: bool, inventory: bool = True):
        self.dataset, self.cached, self.inventory = dataset, cached, inventory
        self.total = 0
        self._shown: Progress | None = None

    def loaded(self, run: LoadedRun) -> None:
        if self.inventory:
            say_inventory(run, self.dataset)
        self.total = len(run.cases)

    def record(self, index: int, record: CaseRecord, cached: bool) -> None:
        if self._shown is None:
            self._shown = progress(self.total or None, "cases").__enter__()  # 0: a run not loaded through load_run
        self._shown.advance(f"{record.condition} task {record.task_id} case {record.case}: {record.verdict}", cached)

    def __enter__(self) -> RescoreDisplay:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, trace: object) -> None:
        if self._shown is not None:
            self._shown.__exit__(None, None, None)
        if kind is KeyboardInterrupt:
            done = f"{self._shown.done if self._shown else 0} of {self.total} cases were graded"
            click.echo(f"\n{done} and saved in the results cache; the same command resumes from there" if self.cached
                       else f"\n{done}; with --no-cache none is kept, so the same command starts over", err=True)


def say_written(records: list[CaseRecord], output: Path, quorum: int, engines: int, kept: bool = True) -> None:
    """Where the results went (``kept``: the file outlives the command), and the graded cells one
    engine decided alone."""
    if quiet():
        return
    click.echo(f"wrote {len(records)} cases to {output}" if kept else
               f"graded {len(records)} cases (pass -o FILE to keep the results)", err=True)
    if engines > 1:
        alone = sum(r.decided_by_one for r in records)
        click.echo(f"quorum {quorum}: {alone} graded cells were decided by one engine alone", err=True)


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


format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
engines_option = click.option("--engines", "engine_names", metavar="NAMES",
                              help=f"Comma-separated full engines. Default: {DEFAULT_ENGINES_HELP}.")


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


def _protocol_option(meaning: str) -> Callable:
    return click.option("--protocol", "protocol_file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
                        help=f"The locked protocol (regrade protocol init, lock): {meaning}")


protocol_digest_option = click.option("--protocol-digest", metavar="DIGEST", help="With --protocol: refuse (exit 2) "
                                      "unless its digest is this one, as regrade protocol lock printed it.")


def protocol_options(command: Callable) -> Callable:
    """--protocol, --protocol-digest and --exploratory: a table or report bound to a locked protocol."""
    for option in reversed([
        click.option("--exploratory", is_flag=True, help="Table exploratory conditions too (a run whose own records "
                     "contradict its locked protocol, or a protocol of the exploratory channel): the whole table "
                     "is then exploratory, and its caption says so. Without it they are left out and said."),
        _protocol_option("refuse (exit 2) any results file not scored under it."),
        protocol_digest_option,
    ]):
        command = option(command)
    return command


T = TypeVar("T")


def refused_on_mismatch(make: Callable[[], T]) -> T:
    """``make()``, or exit status 2 with its one-line message when a pack or protocol is not the expected one."""
    try:
        return make()
    except (PackDigestError, ProtocolMismatch) as exc:
        click.echo(f"Error: {exc}", err=True)
        raise click.exceptions.Exit(2) from None


def pack_options(command: Callable) -> Callable:
    """A refusal-slice pack's key and digest, and the locked protocol a run over it followed."""
    for option in reversed([
        click.option("--key", type=click.Path(path_type=Path, file_okay=False), default=None,
                     help="The pack's key (default: the pack's folder name + .key)."),
        click.option("--expect-digest", metavar="DIGEST", help="Refuse (exit 2) unless the pack's digest is this one."),
        _protocol_option("the run followed it; its channel labels every record, and a run whose own "
                         "records contradict it is exploratory."),
        protocol_digest_option,
    ]):
        command = option(command)
    return command


def slice_run_options(command: Callable) -> Callable:
    """A run over a refusal-slice pack: its conditions, and :func:`pack_options`."""
    for option in reversed([
        click.option("--condition", "conditions", multiple=True, metavar="NAME=PATH",
                     help="A condition's run over the pack: an outputs folder, a Harbor job folder, or inspect_ai "
                          "logs (a log or a folder of them). Repeat for several."),
        click.option("--manifest", type=click.Path(path_type=Path, dir_okay=False), default=None,
                     help="Conditions as manifest rows (CSV or JSON Lines): condition, task_id, case, output_path, "
                          "abstained, and the covariates retries, tool_calls, wall_s, tokens, cost_usd."),
    ]):
        command = option(command)
    return pack_options(command)


def check_protocol_options(protocol_file: Path | None, protocol_digest: str | None) -> None:
    """--protocol-digest checks a --protocol file: one without the other is a usage error."""
    if protocol_digest is not None and protocol_file is None:
        raise click.UsageError("--protocol-digest checks a --protocol file: pass it too")
