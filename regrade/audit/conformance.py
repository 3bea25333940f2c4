"""Conformance against Excel: engines recompute the workbooks Excel saved.

Workbooks written by Excel carry Excel's own results as cached values: a free
oracle. Two sources (:class:`OracleFile`): every answer file of a SpreadsheetBench-layout
corpus, whose formula cells inside ``answer_position`` are compared
(:func:`benchmark_files`), or every workbook of any folder, all of whose formula cells are
compared (:func:`folder_files`; a file whose ``docProps/app.xml`` does not name Excel is
skipped and counted, :func:`regrade.workbook.origin.saved_by_excel`). Each engine recomputes
the cells and is compared with Excel's cached value under the policy's value rules. A
file none of whose compared formulas has a cached value was not computed by Excel (openpyxl
wrote it): it is skipped and counted. A cell whose dependency cone calls a volatile function
(``TODAY``, ``NOW``, ``RAND`` ...) holds the value of the moment Excel computed it;
it is left out and counted, as is a cell that reads another workbook through an
external link the file holds no usable cache of (:mod:`regrade.workbook.external`; Excel's
value came from that workbook). So is a cell where Excel's caches
contradict each other: another answer file of the task holds the same formula over the same
inputs (its cone's formulas and every cell they read) and caches a different value there, so
one cache is stale and neither is an oracle (a folder's workbooks are each their own group). In a file Excel saved, a formula read as empty is Excel's
``""`` (openpyxl reads it as None) and compares as empty.

Per engine: cells compared, cells equal to Excel, abstentions (and their reasons). For the consensus
(:mod:`regrade.grading.consensus`): cells compared, equal, abstained (no engine computed
them) and disagreed (the engines computed different values).
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from regrade.engines.base import Engine
from regrade.values import CannotEvaluate, CellRef, CellResult, WorkbookValues
from regrade.engines.readings import decoded_text, number_value
from regrade.grading.policies import Policy, TargetError, rounding_boundary
from regrade.grading.consensus import agree
from regrade.grading.grade import Golden, GoldenError, load_golden
from regrade.results.files import json_value
from regrade.runs.cases import golden_files, load_dataset
from regrade.grading.verdicts import ENGINES_DISAGREE
from regrade.engines.base import DEFAULT_TIMEOUT_S
from regrade.processes.limits import DeadlineExceeded, deadline
from regrade.workbook.origin import saved_by_excel


@dataclass
class EngineTally:
    name: str
    compared: int = 0
    agree: int = 0
    abstain: int = 0
    seconds: list[float] = field(default_factory=list)
    abstentions: Counter[str] = field(default_factory=Counter)  # rule id (or reason, where no rule) -> cells

    def add(self, other: EngineTally) -> None:
        self.compared += other.compared
        self.agree += other.agree
        self.abstain += other.abstain
        self.seconds += other.seconds
        self.abstentions.update(other.abstentions)

    def counts(self) -> dict:
        return {"compared": self.compared, "agree": self.agree, "abstain": self.abstain,
                "abstentions": dict(self.abstentions)}


@dataclass
class ConsensusTally:
    compared: int = 0
    agree: int = 0
    abstain: int = 0  # below the quorum included
    disagree: int = 0
    decided_by_one: int = 0  # decided cells that one engine alone computed (the others abstained)

    def add(self, other: ConsensusTally) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class FileCounts:
    examined: int = 0
    compared: int = 0
    not_excel: int = 0  # a folder's workbook whose docProps/app.xml does not name Excel
    without_cache: int = 0
    timed_out: int = 0  # regrade's own reading of the file (golden, contradiction check) passed its limit
    without_formulas: int = 0
    unreadable: int = 0


@dataclass
class ConformanceReport:
    engines: list[EngineTally]
    consensus: ConsensusTally = field(default_factory=ConsensusTally)
    files: FileCounts = field(default_factory=FileCounts)
    mismatches: list[dict] = field(default_factory=list)
    volatile: int = 0  # cells left out: TODAY(), RAND() ... in their cone, Excel's value is of its day
    external: int = 0  # cells left out: they read another workbook, which the corpus does not hold
    inconsistent: int = 0  # cells left out: Excel's caches of the same formula over the same inputs differ
    quorum: int = 1  # engines that had to compute a cell for the consensus to decide it
    by_file: list[dict] = field(default_factory=list)  # each compared file's counts, to report any split of them

    def add(self, answer: _Answer, engines: list[EngineTally], combined: ConsensusTally) -> None:
        """Count one compared file in the totals and in :attr:`by_file`."""
        totals = {t.name: t for t in self.engines}
        for tally in engines:
            totals[tally.name].add(tally)
        self.consensus.add(combined)
        self.by_file.append({"group": answer.task, "case": answer.case, "file": str(answer.path),
                             "engines": {t.name: t.counts() for t in engines}, "consensus": asdict(combined)})

    def to_json(self) -> dict:
        return {
            "engines": [{"name": t.name, "compared": t.compared, "agree": t.agree, "abstain": t.abstain,
                         "median_s": percentile(t.seconds, 0.5), "p90_s": percentile(t.seconds, 0.9),
                         "abstentions": dict(t.abstentions.most_common())}
                        for t in self.engines],
            "consensus": asdict(self.consensus),
            "files": asdict(self.files),
            "volatile": self.volatile,
            "external": self.external,
            "inconsistent": self.inconsistent,
            "quorum": self.quorum,
            "mismatches": self.mismatches,
            "by_file": self.by_file,
        }


@dataclass(frozen=True)
class OracleFile:
    """A workbook whose cached values may be Excel's, and which of its formula cells to compare.

    ``group``: the files whose caches the contradiction check compares with each other (a
    task's answer files), and the name a mismatch reports. ``record``: the task's dataset
    record, whose ``answer_position`` chooses the cells; None compares every formula cell of a
    workbook that Excel saved. ``cells``: the cells to compare in a workbook regrade wrote with
    values Excel captured as their caches (:mod:`regrade.audit.excel_oracle`)."""

    group: str
    case: int
    path: Path
    record: dict | None
    cells: tuple[CellRef, ...] | None = None  # exactly these cells, their cached values Excel's by construction


def benchmark_files(corpus: Path) -> list[OracleFile]:
    """The answer files of a SpreadsheetBench-layout corpus, in dataset.json order."""
    return [OracleFile(str(r["id"]), n, p, r) for r in load_dataset(corpus)
            for n, p in golden_files(corpus, str(r["id"])).items()]


def folder_files(folder: Path) -> list[OracleFile]:
    """Every .xlsx and .xlsm under ``folder``, by path; each is its own group."""
    paths = sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".xlsx", ".xlsm") and p.is_file()
                   and not p.name.startswith("~$"))  # ~$name.xlsx: Excel's lock file, not a workbook
    return [OracleFile(str(p.relative_to(folder)), 1, p, None) for p in paths]


@dataclass
class _Answer:
    """One workbook Excel saved, with the formula cells conformance compares."""

    task: str
    case: int
    path: Path
    golden: Golden
    formulas: list[CellRef]
    excel: dict[CellRef, CellResult]


def conformance(
    files: list[OracleFile],
    engines: list[Engine],
    policy: Policy,
    limit: int | None = None,
    on_file: Callable[[int, Path], None] | None = None,
    limit_s: float = DEFAULT_TIMEOUT_S,
    quorum: int = 1,
) -> ConformanceReport:
    """``limit_s``: the limit of regrade's own work on one answer file (reading the golden,
    its volatile and external cells) and on one answer file's part of the contradiction
    check; the engines keep their own limits. A file past it is counted in ``timed_out``."""
    report = ConformanceReport([EngineTally(e.name) for e in engines], quorum=quorum)
    number = 0
    for _, group in itertools.groupby(files[:limit], key=lambda f: f.group):
        compared: list[_Answer] = []
        for file in group:
            number += 1
            if on_file is not None:
                on_file(number, file.path)
            try:
                with deadline(limit_s):
                    if (answer := _answer(report, policy, file)) is not None:
                        compared.append(answer)
            except DeadlineExceeded:
                report.files.timed_out += 1
        try:
            with deadline(limit_s * max(1, len(compared))):
                contradicted = _contradicted(policy, compared)
        except DeadlineExceeded:  # the task's caches cannot be checked against each other: none is used
            report.files.timed_out += len(compared)
            report.files.compared -= len(compared)
            continue
        for answer in compared:
            try:
                _compare(report, engines, policy, answer, contradicted.get(answer.case, set()), limit_s, quorum)
            except DeadlineExceeded:
                report.files.timed_out += 1
                report.files.compared -= 1
    return report


def _answer(report: ConformanceReport, policy: Policy, file: OracleFile) -> _Answer | None:
    """The workbook with its compared formula cells and Excel's values, or None (counted) when
    there is nothing to compare: not saved by Excel, unreadable, no formulas (in answer_position),
    no cached values."""
    report.files.examined += 1
    record = file.record
    if record is None and file.cells is None and not saved_by_excel(file.path):
        report.files.not_excel += 1
        return None
    try:
        golden = load_golden(file.path)
        if record is not None:
            targets = golden.targets(policy, record.get("answer_position", ""), record.get("answer_sheet"))
        elif file.cells is not None:
            targets = list(file.cells)
            golden.read(targets)
        else:
            targets = golden.all_formulas()
            golden.read(targets)
    except (GoldenError, TargetError):
        report.files.unreadable += 1
        return None
    formulas = [t for t in targets if record is None or golden.is_formula(t)]
    if not formulas:
        report.files.without_formulas += 1
        return None
    excel = {t: golden.value(t) for t in formulas}
    if all(v is None for v in excel.values()):
        report.files.without_cache += 1
        return None
    report.files.compared += 1
    return _Answer(file.group, file.case, file.path, golden, formulas, excel)


def _contradicted(policy: Policy, answers: list[_Answer]) -> dict[int, set[CellRef]]:
    """{case: cells} where Excel's caches contradict each other: the task's answer files hold
    the same formula over the same inputs there (FormulaGraph.inputs) and cache different
    values. One of them is stale, and which one is not known; none of them is an oracle."""
    by_formula: dict[tuple[CellRef, str | None], list[_Answer]] = defaultdict(list)
    for answer in answers:
        for ref in answer.formulas:
            by_formula[(ref, answer.golden.formula(ref))].append(answer)
    contradicted: dict[int, set[CellRef]] = defaultdict(set)
    for (ref, _), holders in by_formula.items():
        values = [_expected(a.excel[ref]) for a in holders]
        if len(holders) < 2 or all(policy.equal(values[0], v) for v in values[1:]):
            continue
        by_inputs: dict[object, list[_Answer]] = defaultdict(list)
        for answer in holders:
            if (inputs := answer.golden.inputs(ref)) is not None:
                by_inputs[inputs].append(answer)
        for same in by_inputs.values():
            cached = [_expected(a.excel[ref]) for a in same]
            if not all(policy.equal(cached[0], v) for v in cached[1:]):
                for answer in same:
                    contradicted[answer.case].add(ref)
    return contradicted


def _expected(cached: CellResult) -> CellResult:
    """Excel's value of a formula cell: openpyxl reads Excel's cached "" as None, and leaves
    the control characters of cached text escaped (:func:`regrade.engines.readings.decoded_text`)."""
    return "" if cached is None else decoded_text(cached)


def _compare(report: ConformanceReport, engines: list[Engine], policy: Policy, answer: _Answer,
             contradicted: set[CellRef], limit_s: float, quorum: int) -> None:
    with deadline(limit_s):
        volatile, external = answer.golden.unrepeatable(answer.formulas)
    report.volatile += len(volatile)
    report.external += len(external)
    left_out = set(volatile) | set(external)
    report.inconsistent += len(contradicted - left_out)
    formulas = [t for t in answer.formulas if t not in left_out and t not in contradicted]
    if not formulas:  # every graded formula left out: nothing for an engine to compute
        return
    computed: dict[str, WorkbookValues] = {}
    seconds: dict[str, float] = {}
    for engine in engines:
        started = time.monotonic()
        computed[engine.name] = engine.evaluate(answer.path, formulas)
        seconds[engine.name] = time.monotonic() - started
    tallies = {name: EngineTally(name, seconds=[seconds[name]]) for name in computed}
    combined_tally = ConsensusTally()
    for ref in formulas:
        expected = _expected(answer.excel[ref])
        values = {name: _cell(values, ref, answer.golden.number_format(ref)) for name, values in computed.items()}
        for name, value in values.items():
            value = rounding_boundary(policy, expected, value) or value  # as grading judges it
            tally = tallies[name]
            tally.compared += 1
            if isinstance(value, CannotEvaluate):
                tally.abstain += 1
                tally.abstentions[value.key] += 1  # by rule id: rewording a message changes no count
            elif policy.equal(expected, value):
                tally.agree += 1
            else:
                report.mismatches.append(_mismatch(answer, ref, expected, name, value))
        combined = agree(policy, values, quorum)
        combined = rounding_boundary(policy, expected, combined) or combined
        combined_tally.compared += 1
        if isinstance(combined, CannotEvaluate):
            if combined.reason == ENGINES_DISAGREE:
                combined_tally.disagree += 1
            else:
                combined_tally.abstain += 1
        else:
            combined_tally.decided_by_one += sum(not isinstance(v, CannotEvaluate) for v in values.values()) == 1
            if policy.equal(expected, combined):
                combined_tally.agree += 1
            else:
                report.mismatches.append(_mismatch(answer, ref, expected, "consensus", combined))
    report.add(answer, list(tallies.values()), combined_tally)


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile of per-workbook seconds, rounded to milliseconds."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))], 3)


def _cell(values: WorkbookValues, ref: CellRef, number_format: str) -> CellResult:
    """An engine's value of ``ref``, a plain number read in the file's own format."""
    if values.failure is not None:
        return CannotEvaluate(values.failure.reason, values.failure.detail)
    value = values.cells.get(ref, CannotEvaluate("missing-sheet", f"no sheet {ref.sheet!r}"))
    return number_value(value, number_format) if type(value) is float else value


def _mismatch(answer: _Answer, ref: CellRef, expected: CellResult, engine: str, value: CellResult) -> dict:
    return {"task_id": answer.task, "case": answer.case, "cell": str(ref), "formula": answer.golden.formula(ref),
            "excel": json_value(expected), "engine": engine, "value": json_value(value)}
