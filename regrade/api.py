"""The Python API: one function per job, typed records or pandas DataFrames out.

    import regrade
    results = regrade.rescore(dataset="data", conditions={"none": "out/none", "skills": "out/skills"},
                              output="results.jsonl")
    regrade.diff(results)                        # shallow against full grading, per condition
    regrade.paired_table(results, baseline="none")
    regrade.table(["results.jsonl", "none=logs/none.eval"])   # several sources: what `regrade table` prints
    regrade.report(results, "report.html")       # one self-contained HTML page to share
    regrade.audit_benchmark("data")              # the benchmark's own data and grader
    regrade.audit_grader("gnumeric-recalc")      # a grader against the sealed control pack
    regrade.generate_controls("data", "pack/")   # controls from the benchmark's own tasks

Each does what the command of the same name does, without printing: what the command says on
stderr (missing outputs, what was not judged) is in the returned records (``Results.inventory``,
``Results.summary``). Errors are exceptions with the same one-line messages. ``docs/api.md``
walks through each.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Sequence

from regrade.audit.benchmark import BenchmarkAudit, TaskAudit
from regrade.audit.benchmark import audit_benchmark as _audit_benchmark
from regrade.audit.controls import PACK, Control, ControlPack, load_pack, select_controls
from regrade.audit.generated import GeneratedPack, TestCase
from regrade.audit.generated import generate_pack as _generate_pack
from regrade.audit.grader import GraderAudit
from regrade.audit.grader import audit_grader as _audit_grader
from regrade.engines.base import DEFAULT_TIMEOUT_S
from regrade.grading.graders import Grader, make_grader
from regrade.results.summary import RunSummary, summarise
from regrade.paired import diff as _diff
from regrade.paired import tables as paired
from regrade.paired.result import PairedTable, pair, pair_sources
from regrade.results.files import results_warnings
from regrade.results.records import CaseRecord, Results
from regrade.refusal.build import SlicePack
from regrade.refusal.build import build_slice as _build_slice
from regrade.paired.refusal import REFUSAL_FIELDS
from regrade.refusal.protocol import check_results_protocol
from regrade.refusal.score import SliceScore
from regrade.refusal.score import score_slice as _score_slice
from regrade.reporting.content import Report, build_report
from regrade.reporting.page import write_page
from regrade.results.outcomes import read_outcomes
from regrade.run import ResultCache, default_cache_dir, rescore_run, rescore_settings, rescore_to_file
from regrade.run.pool import WarmPool
from regrade.runs.inventory import ConditionInventory, check_inventory
from regrade.runs.load import LoadedRun, load_run

if TYPE_CHECKING:  # pandas is imported by the functions that make a DataFrame: a command that makes none starts sooner
    import pandas as pd

COLUMNS = ["stack", "benchmark", "condition", "baseline", "grading", "n", "pass_rate_baseline", "pass_rate_treatment",
           "gains", "regressions", "retained", "residual", "net", "delta", "ci_lower", "ci_upper", "ci_method", "p_value", "test",
           "p_adjusted", "correction", "family_size", "regression_tax", "normalized_gain", "unpaired", "without_output",
           "original_from", "trials_baseline",
           "trials_treatment", "noise_discordance", "noise_gains", "noise_regressions"]


class RescoreResults(Results):
    """:class:`regrade.results.records.Results`, with what the run held before grading and its summary."""

    inventory: list[dict[str, Any]] = []  # each condition: outputs found, missing, unmatched (ConditionInventory)
    left_out: dict[str, list[str]] = {}  # the dataset's tasks not graded, by why
    summary: dict[str, Any] = {}  # RunSummary as data: cases, artifacts, not judged by reason, headline ...
    quorum: int = 1  # how many engines had to compute a graded cell (and agree) for it to count


def rescore(dataset: str | Path | None = None, conditions: Mapping[str, str | Path] | Sequence[str] = (),
            runs: str | Path | None = None, manifest: str | Path | None = None, *, harbor: Sequence[str] = (),
            engines: Sequence[str] | None = None, quorum: int | None = None, policy: str = "spreadsheetbench",
            shallow: str = "cached", timeout_s: float = DEFAULT_TIMEOUT_S, workers: int = 1,
            output: str | Path | None = None, cache: bool = True, cache_dir: str | Path | None = None,
            allow_missing: bool = False, tasks_with_outputs: bool = False, stack: str = "default",
            benchmark: str = "spreadsheetbench", executor: Literal["local", "dask"] = "local",
            scheduler: str | None = None, on_loaded: Callable[[LoadedRun], None] | None = None,
            on_record: Callable[[int, CaseRecord, bool], None] | None = None,
            command: Mapping[str, object] | None = None, warm: WarmPool | None = None) -> RescoreResults:
    """Grade every case value-only and with the full engines, as ``regrade rescore`` does.

    ``conditions`` maps a condition to its output folder (or is a list of ``"NAME=DIR"``); ``runs``
    makes every subfolder a condition; ``harbor`` lists Harbor job folders, ``"[NAME=]JOB_DIR"``;
    or give a ``manifest``. With ``output`` the results file is
    written (provenance first). ``executor="dask"`` grades on a Dask cluster: a LocalCluster
    of ``workers`` processes, or the one at ``scheduler`` (docs/scale.md). A condition with no output at all raises
    :class:`regrade.runs.inventory.EmptyCondition` unless ``allow_missing``. ``tasks_with_outputs``
    grades only the tasks some condition has an output for (a run over part of the benchmark);
    the tasks left out, and why, are in ``left_out`` and the provenance.

    ``on_loaded(run)`` is called once the run is loaded, before its inventory is checked (the
    command says it there); ``on_record(index, record, cached)`` as each case is graded;
    ``command`` is what the provenance records as the command (default ``api.rescore``); ``warm``
    a :class:`regrade.run.pool.WarmPool` whose case workers, their engines open, later runs reuse.
    """
    run = load_run(_path(dataset), {k: Path(v) for k, v in conditions.items()} if isinstance(conditions, Mapping)
                   else list(conditions), _path(runs), _path(manifest), stack, benchmark, harbor, tasks_with_outputs)
    if on_loaded is not None:
        on_loaded(run)
    check_inventory(run.inventories, allow_missing, _path(manifest))
    left_out = run.left_out.to_json()
    settings = rescore_settings(engines, quorum, policy, shallow, timeout_s)
    made_by = {**(command or {"command": "api.rescore"}), "tasks_with_outputs": tasks_with_outputs}
    store = _cache(cache_dir) if cache else None
    if output is not None:
        provenance, records = rescore_to_file(run.cases, settings, Path(output), workers, store, on_record,
                                              command=made_by, described_by=run.described_by, executor=executor,
                                              scheduler=scheduler, left_out=left_out, warm=warm)
    else:
        provenance, records = None, rescore_run(run.cases, settings, workers, store, on_record, executor=executor,
                                                scheduler=scheduler, warm=warm)
    results = Results.from_records(provenance, records)
    return RescoreResults(provenance=results.provenance, cases=results.cases,
                          inventory=[i.to_json() for i in run.inventories], left_out=left_out, quorum=settings.quorum,
                          summary=_summary(summarise(records, left_out=left_out)))


def diff(results: Results | str | Path, by: Literal["summary", "cells", "rules"] = "summary") -> pd.DataFrame:
    """Shallow against full grading, as ``regrade diff``: per condition (``summary``), every
    differing cell with its reason (``cells``), or the engines' abstentions by rule (``rules``)."""
    import pandas as pd

    found = diff_listing(results, by)
    return pd.DataFrame(found.rows, columns=found.columns)


def diff_listing(results: Results | str | Path, by: Literal["summary", "cells", "rules"] = "summary"
                 ) -> _diff.DiffListing:
    """:func:`diff` as data: the listing's rows and columns, the results file's provenance and
    what a reader should know of it (another version, no provenance), as ``regrade diff`` says."""
    read = results if isinstance(results, Results) else Results.read_rescored(Path(results))
    provenance = read.provenance.model_dump() if read.provenance is not None else None
    warnings = [] if isinstance(results, Results) else results_warnings(Path(results), provenance)
    rows, columns = _diff.listing(read.cases, by)
    return _diff.DiffListing(by, rows, columns, provenance, warnings)


def table(sources: Sequence[str | Path], baseline: str = "none", ci: str = "newcombe", alpha: float = 0.05,
          correction: str = "bonferroni", unit: str = "task", aggregate: str = "hard", test: str = "exact",
          scorer: str | None = None, stack: str | None = None, benchmark: str | None = None,
          exploratory: bool = False, protocol: str | Path | None = None,
          protocol_digest: str | None = None) -> PairedTable:
    """The paired table of results files, outcomes files and ``NAME=LOG`` inspect_ai logs taken
    together, as ``regrade table`` prints it: its ``comparisons``, ``rows()``, ``warnings`` (what
    the command says on stderr), ``changed`` transitions and ``totals()``; on a refusal slice its
    ``refusal`` figures, and its ``caption``. ``stack`` and ``benchmark`` label every outcome, so
    runs of different agents, models or task names pair. Exploratory conditions are left out
    unless ``exploratory``; with a ``protocol`` (and its ``protocol_digest``), results not scored
    under it are refused (:class:`regrade.refusal.protocol.ProtocolMismatch`)."""
    if protocol is not None:
        check_results_protocol([Path(s) for s in sources], Path(protocol), protocol_digest)
    return pair_sources(sources, baseline, ci, alpha, correction, unit, aggregate, test, scorer, stack, benchmark,
                        exploratory)


def paired_table(outcomes: pd.DataFrame | Results | str | Path, baseline: str = "none", ci: str = "newcombe",
                 alpha: float = 0.05, correction: str = "bonferroni", unit: str = "task",
                 aggregate: str = "hard", test: str = "exact") -> pd.DataFrame:
    """One row per (stack, benchmark, condition != baseline, grading); see :mod:`regrade.paired.tables`.

    ``outcomes``: a DataFrame of outcomes (condition, task_id, passed [, stack, benchmark, case,
    trial]) or of regrade results; :class:`Results`; or the path of a results or outcomes file.
    ``passed`` takes booleans, 0/1 or true/false, pass/fail, yes/no; anything else is an error.
    What ``regrade table`` warns of (unpaired tasks, tasks without any output) is in
    ``.attrs["warnings"]``; ``original_from`` says what the original grading is. For several
    sources, inspect_ai logs and the notes of each, see :func:`table`."""
    import pandas as pd

    if isinstance(outcomes, pd.DataFrame):
        missing = [c for c in ("condition", "task_id") if c not in outcomes.columns]
        if missing or not ({"passed", "verdict", "original_pass"} & set(outcomes.columns)):
            raise paired.PairingError(f"outcomes need condition, task_id and passed (or regrade results); missing "
                                      f"{', '.join(missing) or 'passed'}")
        made = pair([{str(k): _plain(v) for k, v in row.items()} for row in outcomes.to_dict(orient="records")],
                    baseline, ci, alpha, correction, unit, aggregate, test)
    elif isinstance(outcomes, Results):
        made = pair(outcomes.cases, baseline, ci, alpha, correction, unit, aggregate, test)
    else:
        made = pair_sources([outcomes], baseline, ci, alpha, correction, unit, aggregate, test)
    frame = pd.DataFrame(made.rows(), columns=COLUMNS + (REFUSAL_FIELDS if made.refusal else []))
    frame.attrs["warnings"] = made.warnings  # what `regrade table` says on stderr
    frame.attrs["caption"] = made.caption  # the channel, and whether a refusal slice stands beside the rates
    return frame


def report(results: Results | str | Path | Sequence[str | Path], output: str | Path, baseline: str = "none",
           ci: str = "newcombe", alpha: float = 0.05, correction: str = "bonferroni", test: str = "exact",
           title: str = "regrade report", exploratory: bool = False, protocol: str | Path | None = None,
           protocol_digest: str | None = None) -> Report:
    """Write the HTML report of one or several results files to ``output``, as ``regrade report``;
    returns what it shows (:class:`regrade.reporting.content.Report`: its records, comparisons, not
    judged, a refusal slice's figures). ``exploratory``, ``protocol`` and ``protocol_digest`` as
    for :func:`table`."""
    if isinstance(results, Results):
        raise TypeError("report() reads results files: pass the path of each (the page cites them by path)")
    paths = [Path(results)] if isinstance(results, (str, Path)) else [Path(p) for p in results]
    if protocol is not None:
        check_results_protocol(paths, Path(protocol), protocol_digest)
    built = build_report(paths, baseline, ci, alpha, correction, test, exploratory)
    write_page(built, Path(output), title)
    return built


def audit_benchmark(folder: str | Path, grader: str = "spreadsheetbench-official", recalc: str | None = None,
                    workers: int | None = None, limit: int | None = None,
                    on_task: Callable[[TaskAudit], None] | None = None) -> BenchmarkAudit:
    """A benchmark's data and grader, as ``regrade audit benchmark``: its ``findings()``, ``summary()``;
    ``on_task`` is called as each task is audited."""
    return _audit_benchmark(Path(folder), grader, recalc, workers, limit, on_task=on_task)


def audit_grader(grader: str | Grader, pack: str | Path | ControlPack = PACK, expect_digest: str | None = None,
                 workers: int = 1, tasks: Sequence[str] = (), calling: Sequence[str] = (),
                 executor: Literal["local", "dask"] = "local", scheduler: str | None = None,
                 on_control: Callable[[Control], None] | None = None) -> GraderAudit:
    """A grader against a sealed control pack, as ``regrade audit grader``. ``grader``: a built-in
    name, or any object with ``name``, ``settings()`` and ``passes(output, answer, position)``
    (:class:`regrade.grading.graders.Grader`; ``make_grader(None, command=...)`` makes a command one).
    ``pack``: the hand-made pack (default) or one :func:`generate_controls` made (its folder, or
    the pack loaded); ``tasks`` and ``calling`` grade only part of it, as ``--task`` and
    ``--calling``; ``executor`` and ``scheduler`` are :func:`rescore`'s, for regrade's own grader;
    ``on_control`` is called as each control is graded."""
    chosen = make_grader(grader) if isinstance(grader, str) else grader
    loaded = pack if isinstance(pack, ControlPack) else load_pack(Path(pack), expect_digest)
    selected = select_controls(loaded, tuple(tasks), tuple(calling))
    return _audit_grader(chosen, selected, workers, on_control, executor, scheduler)


def generate_controls(dataset: str | Path, folder: str | Path, tasks: int | None = None, seed: int = 0,
                      workers: int = 1, engines: Sequence[str] | None = None,
                      cache_dir: str | Path | None = None, executor: Literal["local", "dask"] = "local",
                      scheduler: str | None = None, on_case: Callable[[TestCase], None] | None = None,
                      on_check: Callable[[int], Callable[[int, CaseRecord, bool], None]] | None = None
                      ) -> GeneratedPack:
    """Controls generated from a benchmark's own tasks, checked and sealed in ``folder`` (new or
    empty), as ``regrade audit grader --controls-from DATASET --pack-out FOLDER``; its ``digest``,
    ``kept`` controls and ``not_checked`` list. :func:`audit_grader` then runs graders on it.
    ``executor`` and ``scheduler`` say where the checking runs, as in :func:`rescore`; ``on_case``
    is called as each test case's controls are written, ``on_check(count)`` once they are, and
    what it returns as each of the ``count`` controls is checked."""
    settings = rescore_settings(engines)
    cache = _cache(cache_dir)
    return _generate_pack(Path(dataset), Path(folder), settings, tasks, seed, workers, cache, on_case, on_check,
                          executor=executor, scheduler=scheduler)


def build_slice(dataset: str | Path, pack: str | Path, key: str | Path | None = None, ordinary: int = 20,
                negative: int = 10, seed: int = 0, workers: int = 1, engines: Sequence[str] | None = None,
                cache_dir: str | Path | None = None,
                on_check: Callable[[int, CaseRecord, bool], None] | None = None) -> SlicePack:
    """A sealed refusal-slice pack of ``ordinary`` tasks and ``negative`` negative controls drawn
    from ``dataset`` with ``seed``, as ``regrade slice build``: the pack for the harness in
    ``pack``, its key apart in ``key`` (default: the pack's folder name + ``.key``); see
    :mod:`regrade.refusal.build`. ``on_check`` is called as each negative control's check is graded."""
    settings = rescore_settings(engines)
    cache = _cache(cache_dir)
    return _build_slice(Path(dataset), Path(pack), _key_folder(pack, key), ordinary, negative, settings, seed, workers,
                        cache, on_check)


def score_slice(pack: str | Path, conditions: Mapping[str, str | Path], key: str | Path | None = None,
                expect_digest: str | None = None, workers: int = 1, engines: Sequence[str] | None = None,
                cache_dir: str | Path | None = None, protocol: str | Path | None = None,
                protocol_digest: str | None = None, manifest: str | Path | None = None,
                output: str | Path | None = None, stack: str = "default", benchmark: str = "spreadsheetbench",
                cache: bool = True, on_record: Callable[[int, CaseRecord, bool], None] | None = None,
                command: Mapping[str, object] | None = None) -> SliceScore:
    """A run over a refusal-slice pack, scored with its key, as ``regrade rescore --pack`` and
    ``regrade slice score``: each condition (an outputs folder, a Harbor job or inspect_ai logs;
    and the conditions of a ``manifest``) as records with their verdicts (``abstain-ok``,
    ``invalid-completion``, ``false-abstain`` beside regrade's) and its figures: success rate,
    abstention accuracy, invalid completions and false abstentions with their intervals and
    the covariates beside them (:mod:`regrade.refusal.score`). With a locked ``protocol``
    (checked against ``protocol_digest`` and the pack) its channel labels them, and a run whose
    own records contradict it is exploratory. With ``output`` the results file is written."""
    settings = rescore_settings(engines)
    return _score_slice(Path(pack), _key_folder(pack, key), {name: Path(path) for name, path in conditions.items()},
                        settings, expect_digest, workers, _cache(cache_dir) if cache else None, on_record,
                        Path(protocol) if protocol else None, protocol_digest, Path(manifest) if manifest else None,
                        Path(output) if output else None, stack, benchmark,
                        dict(command or {"command": "api.score_slice"}))


def results_frame(path: str | Path) -> pd.DataFrame:
    """A regrade results file (or an outcomes file) as a DataFrame, one row per case (an
    outcomes file's ``passed`` is its ``original_pass``)."""
    import pandas as pd

    _, records = read_outcomes(Path(path))
    return pd.DataFrame([r.model_dump() for r in records])


def _cache(cache_dir: str | Path | None) -> ResultCache:
    """The results cache in ``cache_dir``, or in the default one."""
    return ResultCache(Path(cache_dir) if cache_dir else default_cache_dir())


def _key_folder(pack: str | Path, key: str | Path | None) -> Path:
    """A refusal-slice pack's key: ``key``, or beside the pack, its folder name + ``.key``."""
    return Path(key) if key else Path(pack).with_name(Path(pack).name + ".key")


def _summary(summary: RunSummary) -> dict:
    return {"cases": summary.cases, "value_only_failures": summary.value_only_failures,
            "artifacts": summary.artifacts, "not_judged": dict(summary.not_judged),
            "broken_outputs": dict(summary.broken), "left_out": dict(summary.left_out), "headline": summary.headline,
            "warnings": summary.warnings()}


def _path(value: str | Path | None) -> Path | None:
    return None if value is None else Path(value)


def _plain(value: object) -> object:
    """pandas' missing values as None, numpy scalars as Python ones."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


__all__ = ["rescore", "diff", "diff_listing", "table", "paired_table", "report", "audit_benchmark", "audit_grader",
           "generate_controls", "build_slice", "score_slice", "results_frame", "Results", "RescoreResults", "ConditionInventory", "PairedTable"]
