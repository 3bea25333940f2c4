"""Conformance against Excel: engines recompute the answer files Excel saved.

Answer files written by Excel carry Excel's own results as cached values: a free
oracle. For every answer file of a SpreadsheetBench-layout corpus, the formula
cells inside ``answer_position`` are recomputed by each engine and compared with
Excel's cached value under the policy's value rules. A file none of whose graded
formulas has a cached value was not saved by Excel (openpyxl wrote it): it is
skipped and counted. A cell whose dependency cone calls a volatile function
(``TODAY``, ``NOW``, ``RAND`` ...) holds the value of the moment Excel computed it;
it is left out and counted, as is a cell that reads another workbook through an
external link (Excel's value came from that workbook). So is a cell where Excel's caches
contradict each other: another answer file of the task holds the same formula over the same
inputs (its cone's formulas and every cell they read) and caches a different value there, so
one cache is stale and neither is an oracle. In a file Excel saved, a formula read as empty is Excel's
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
from regrade.engines.readings import number_value
from regrade.grading.policies import Policy, TargetError
from regrade.grading.consensus import agree
from regrade.grading.grade import Golden, GoldenError, load_golden
from regrade.results import json_value
from regrade.runs.cases import golden_files, load_dataset
from regrade.grading.verdicts import ENGINES_DISAGREE
from regrade.engines.base import DEFAULT_TIMEOUT_S
from regrade.limits import DeadlineExceeded, deadline


@dataclass
class EngineTally:
    name: str
    compared: int = 0
    agree: int = 0
    abstain: int = 0
    seconds: list[float] = field(default_factory=list)
    abstentions: Counter[str] = field(default_factory=Counter)  # rule id (or reason, where no rule) -> cells


@dataclass
class ConsensusTally:
    compared: int = 0
    agree: int = 0
    abstain: int = 0
    disagree: int = 0


@dataclass
class FileCounts:
    examined: int = 0
    compared: int = 0
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
            "mismatches": self.mismatches,
        }


@dataclass
class _Answer:
    """One answer file Excel saved, with the graded formula cells conformance compares."""

    task: str
    case: int
    path: Path
    golden: Golden
    formulas: list[CellRef]
    excel: dict[CellRef, CellResult]


def conformance(
    corpus: Path,
    engines: list[Engine],
    policy: Policy,
    limit: int | None = None,
    on_file: Callable[[int, Path], None] | None = None,
    limit_s: float = DEFAULT_TIMEOUT_S,
) -> ConformanceReport:
    """``limit_s``: the limit of regrade's own work on one answer file (reading the golden,
    its volatile and external cells) and on one answer file's part of the contradiction
    check; the engines keep their own limits. A file past it is counted in ``timed_out``."""
    report = ConformanceReport([EngineTally(e.name) for e in engines])
    records = load_dataset(corpus)
    answers = [(str(r["id"]), n, p, r) for r in records for n, p in golden_files(corpus, str(r["id"])).items()]
    number = 0
    for _, task_answers in itertools.groupby(answers[:limit], key=lambda a: a[0]):
        compared: list[_Answer] = []
        for task, case, path, record in task_answers:
            number += 1
            if on_file is not None:
                on_file(number, path)
            try:
                with deadline(limit_s):
                    if (answer := _answer(report, policy, task, case, path, record)) is not None:
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
                _compare(report, engines, policy, answer, contradicted.get(answer.case, set()), limit_s)
            except DeadlineExceeded:
                report.files.timed_out += 1
                report.files.compared -= 1
    return report


def _answer(report: ConformanceReport, policy: Policy, task: str, case: int, path: Path, record: dict) -> _Answer | None:
    """The answer file with its graded formula cells and Excel's values, or None (counted) when
    there is nothing to compare: unreadable, no formulas in answer_position, no cached values."""
    report.files.examined += 1
    try:
        golden = load_golden(path)
        targets = golden.targets(policy, record.get("answer_position", ""), record.get("answer_sheet"))
    except (GoldenError, TargetError):
        report.files.unreadable += 1
        return None
    formulas = [t for t in targets if golden.is_formula(t)]
    if not formulas:
        report.files.without_formulas += 1
        return None
    excel = {t: golden.value(t) for t in formulas}
    if all(v is None for v in excel.values()):
        report.files.without_cache += 1
        return None
    report.files.compared += 1
    return _Answer(task, case, path, golden, formulas, excel)


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
    """Excel's value of a formula cell: openpyxl reads Excel's cached "" as None."""
    return "" if cached is None else cached


def _compare(report: ConformanceReport, engines: list[Engine], policy: Policy, answer: _Answer,
             contradicted: set[CellRef], limit_s: float) -> None:
    tallies = {t.name: t for t in report.engines}
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
    for engine in engines:
        started = time.monotonic()
        computed[engine.name] = engine.evaluate(answer.path, formulas)
        tallies[engine.name].seconds.append(time.monotonic() - started)
    for ref in formulas:
        expected = _expected(answer.excel[ref])
        values = {name: _cell(values, ref, answer.golden.number_format(ref)) for name, values in computed.items()}
        for name, value in values.items():
            tally = tallies[name]
            tally.compared += 1
            if isinstance(value, CannotEvaluate):
                tally.abstain += 1
                tally.abstentions[value.key] += 1  # by rule id: rewording a message changes no count
            elif policy.equal(expected, value):
                tally.agree += 1
            else:
                report.mismatches.append(_mismatch(answer, ref, expected, name, value))
        combined = agree(policy, values)
        report.consensus.compared += 1
        if isinstance(combined, CannotEvaluate):
            if combined.reason == ENGINES_DISAGREE:
                report.consensus.disagree += 1
            else:
                report.consensus.abstain += 1
        elif policy.equal(expected, combined):
            report.consensus.agree += 1
        else:
            report.mismatches.append(_mismatch(answer, ref, expected, "consensus", combined))


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
