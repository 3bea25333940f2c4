"""Rescoring: grade each case twice (value-only and recomputed) and classify it.

The recomputed grade uses every given full engine through :mod:`regrade.grading.consensus`. A case
whose graded cells all hold constants (no formula, no array formula covering them) starts
no engine: recomputation keeps a constant as stored, so the stored values are the full view;
in a case with both, the engines compute only the cells that hold formulas.
"""

from __future__ import annotations

import filecmp
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from regrade.engines.base import Engine
from regrade.values import CellRef, CellResult, WorkbookValues
from regrade.workbook.screening import screen
from regrade.grading.policies import Policy, TargetError
from regrade.grading.consensus import Consensus, consensus, engine_cells, of_constants
from regrade.grading.grade import (
    LIMIT_FAULTS, OUTPUT_FAULTS, Golden, GoldenError, Grade, grade, load_golden, output_fault, spilled_cells,
)
from regrade.grading.golden_check import GOLDEN_NOT_REPRODUCED, golden_departures, golden_in_doubt, withheld
from regrade.grading.dated import DATED_GOLDEN, SAVE_DAY_UNKNOWN, dated_cells, reproducing_days, too_large_to_date
from regrade.runs.cases import Case
from regrade.workbook.today import dated_workbook
from regrade.grading.verdicts import (
    ARTIFACT, CONFIRMED_FAIL, FALSE_PASS, INVALID_GOLDEN, UNEVALUABLE, cell_reason, classify,
)


@dataclass
class CellDisagreement:
    ref: CellRef
    formula: str | None
    golden: object
    shallow: object
    full: object
    reason: str
    engines: dict[str, CellResult] = field(default_factory=dict)
    decided_by: int | None = None  # engines that computed the cell and agreed (0: undecided; None: no engine ran)


@dataclass
class CaseResult:
    case: Case
    shallow_pass: bool | None
    full_pass: bool | None
    verdict: str
    reasons: list[str]
    message: str = ""
    cells: list[CellDisagreement] = field(default_factory=list)
    decided_by_one: int = 0  # graded cells whose recomputed value one engine alone gave (the others abstained)


class EnginesStarting(Exception):
    """The case needs the full engines and they are still starting: grade it later
    (:func:`rescore_case` with ``defer``), and the cases that need none meanwhile."""


def rescore_case(case: Case, policy: Policy, shallow: Engine, fulls: Sequence[Engine], quorum: int = 1,
                 defer: bool = False) -> CaseResult:
    """Grade ``case`` with the value-only view and the consensus of the full engines
    (``quorum``: how many of them must compute a cell, :mod:`regrade.grading.consensus`).
    ``defer``: raise :class:`EnginesStarting` instead of waiting for engines that are still
    starting (what is graded does not depend on it, only when)."""
    try:
        golden = load_golden(case.answer_path)
        targets = golden.targets(policy, case.answer_position, case.answer_sheet)
    except GoldenError as exc:
        return CaseResult(case, None, None, INVALID_GOLDEN, ["invalid-golden"], str(exc))
    except TargetError as exc:
        if exc.reason == "official-grader-error":  # the official grader fails it whatever the values
            return CaseResult(case, False, False, CONFIRMED_FAIL, [exc.reason], str(exc))
        return CaseResult(case, None, None, UNEVALUABLE, [exc.reason], f"task {case.task_id}: {exc}")
    refused = screen(case.output_path).failure  # each engine screens the file again before it opens it
    if refused is not None and refused.reason in OUTPUT_FAULTS:  # missing, or no grader can read it: a genuine failure
        return CaseResult(case, False, False, CONFIRMED_FAIL, [output_fault(refused.reason)], refused.detail)
    stored = shallow.evaluate(case.output_path, targets)
    if stored.failure is not None and stored.failure.reason in LIMIT_FAULTS:  # what the grader read is unknown
        return CaseResult(case, None, None, UNEVALUABLE, [stored.failure.reason],
                          f"the value-only reading ({shallow.name}) failed: {stored.failure.detail}")
    if (problem := golden.problem(targets)) is not None:
        if defer and dated_cells(golden, targets) and _starting(fulls):
            raise EnginesStarting(case.task_id)
        return _dated(case, policy, shallow, fulls, quorum, golden, targets, stored, problem)
    return _graded(case, policy, shallow, fulls, quorum, golden, targets, stored, case.output_path, defer)


def _starting(engines: Sequence[Engine]) -> bool:
    """Whether any engine started in the background is still getting ready
    (:meth:`regrade.engines.isolation.IsolatedEngine.starting`)."""
    return any(getattr(engine, "starting", lambda: False)() for engine in engines)


def _graded(case: Case, policy: Policy, shallow: Engine, fulls: Sequence[Engine], quorum: int, golden: Golden,
            targets: list[CellRef], stored: WorkbookValues, computed: Path, defer: bool = False,
            check_golden: bool = True) -> CaseResult:
    """The case's grades: the value-only view ``stored`` of the output, and the consensus of
    the full engines computing ``computed`` (the output, or its dated copy). ``check_golden``:
    an engine votes on a cell only where it reproduces Excel's value of it in the golden
    (:mod:`regrade.grading.golden_check`; a dated golden is checked day by day instead)."""
    spilled = spilled_cells(case.output_path, stored)
    doubted: list[CellRef] = []
    if not (computable := engine_cells(targets, stored, spilled)):
        agreed = of_constants(stored)  # the graded cells hold constants: no engine could change them
    else:
        if defer and _starting(fulls):
            raise EnginesStarting(case.task_id)
        values = {e.name: e.evaluate(computed, computable) for e in fulls}
        departures = {}
        if check_golden:  # an output that is a copy of the golden: its values are the golden's
            same = filecmp.cmp(computed, golden.path, shallow=False)
            departures = golden_departures(policy, golden, targets, fulls, values if same else None)
        doubted = golden_in_doubt(departures, [e.name for e in fulls])
        agreed = consensus(policy, stored, withheld(values, departures), spilled, quorum)
    shallow_grade = grade(policy, targets, golden, shallow.name, stored)
    full_grade = grade(policy, targets, golden, "+".join(e.name for e in fulls), agreed.view, recomputed=True)
    shallow_pass = bool(shallow_grade.passed)  # a value-only grader counts any failure to read as a fail
    full_pass = full_grade.passed
    if shallow_grade.reason in OUTPUT_FAULTS and full_pass is None:
        full_pass = False  # no reader accepts the file: the output itself is broken
        full_grade.reason = shallow_grade.reason
    verdict = classify(shallow_pass, full_pass, full_grade.reason)
    if full_pass is None and any(c.abstained and c.ref in doubted for c in full_grade.cells):
        verdict = INVALID_GOLDEN  # no engine reproduces Excel's cached value there: the golden's cache is in doubt
        full_grade.reason = GOLDEN_NOT_REPRODUCED
        full_grade.message = (f"no engine reproduces the golden's cached value of {', '.join(map(str, doubted))} "
                              "(a stale cache: its inputs changed after Excel computed it?)")
    cells = _disagreements(golden, shallow_grade, full_grade, agreed, spilled)
    reasons = [r for r in (shallow_grade.reason, full_grade.reason) if r and r != "wrong-value"]
    reasons += [c.reason for c in cells]
    message = _message(verdict, shallow_grade, full_grade)
    decided_by_one = list(map(agreed.decided_by.get, targets)).count(1) if len(fulls) > 1 else 0  # counts: ints
    return CaseResult(case, shallow_pass, full_pass, verdict, sorted(set(reasons)), message, cells, decided_by_one)


def _message(verdict: str, shallow: Grade, full: Grade) -> str:
    """The case's message, saying which grade it is about where the two part ways."""
    if verdict == ARTIFACT:
        return f"value-only: {shallow.message or 'fails'}; recomputed, every graded cell equals the golden"
    if verdict == FALSE_PASS:
        return f"recomputed: {full.message or 'fails'}; the cached values equal the golden"
    return full.message or shallow.message


def _dated(case: Case, policy: Policy, shallow: Engine, fulls: Sequence[Engine], quorum: int, golden: Golden,
           targets: list[CellRef], stored: WorkbookValues, problem: str) -> CaseResult:
    """A golden that cannot judge as it stands: invalid, unless its only obstacle is TODAY()
    and some day it may have been saved on reproduces it (:mod:`regrade.grading.dated`)."""
    dated = dated_cells(golden, targets) if fulls else []
    large = bool(dated) and too_large_to_date(golden, fulls)
    days = reproducing_days(case, policy, golden, targets, dated, shallow, fulls, quorum) if dated and not large else []
    if not days:
        shallow_pass = bool(grade(policy, targets, golden, shallow.name, stored).passed)
        if large:
            problem += "; it is too large to recompute as of each day it may have been saved on"
        elif dated:
            problem += "; no day it may have been saved on (docProps/core.xml) reproduces its cached values"
        return CaseResult(case, shallow_pass, None, INVALID_GOLDEN, ["invalid-golden"], problem)
    results = []
    for day in days:
        with dated_workbook(case.output_path, day) as computed:
            results.append(_graded(case, policy, shallow, fulls, quorum, golden, targets, stored, computed,
                                   check_golden=False))  # reproducing_days checked the golden as of that day
    shown = ", ".join(day.isoformat() for day in days)
    if len({(r.verdict, r.full_pass) for r in results}) > 1:
        return CaseResult(case, results[0].shallow_pass, None, UNEVALUABLE, [SAVE_DAY_UNKNOWN],
                          f"the golden depends on TODAY(); it may have been computed on {shown}, and the output's "
                          "verdict differs between those days")
    result = results[0]
    result.reasons = sorted({*result.reasons, DATED_GOLDEN})
    as_of = f"TODAY() as of {shown}, the day{'s' if len(days) > 1 else ''} the golden's cached values were computed"
    result.message = f"{result.message}; {as_of}" if result.message else as_of
    return result


def _disagreements(golden: Golden, shallow: Grade, full: Grade, agreed: Consensus, spill: set[CellRef]) -> list[CellDisagreement]:
    shallow_bad = {c.ref for c in shallow.cells}
    full_outcomes = {c.ref: c.value for c in full.cells}  # holds abstentions decided while grading
    cells = []
    for ref in sorted(shallow_bad | set(full_outcomes)):
        stored = shallow.values.get(ref)
        computed = full_outcomes.get(ref, full.values.get(ref))
        formula = shallow.formulas.get(ref) or full.formulas.get(ref)
        reason = cell_reason(ref not in shallow_bad, computed, ref not in full_outcomes, stored, formula,
                             golden.value(ref), ref in spill)
        cells.append(CellDisagreement(ref, formula, golden.value(ref), stored, computed, reason,
                                      agreed.by_engine.get(ref, {}), agreed.decided_by.get(ref)))
    return cells
