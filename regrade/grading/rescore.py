"""Rescoring: grade each case twice (value-only and recomputed) and classify it.

The recomputed grade uses every given full engine through :mod:`regrade.grading.consensus`. A case
whose graded cells all hold constants (no formula, no array formula covering them) starts
no engine: recomputation keeps a constant as stored, so the stored values are the full view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from regrade.engines.base import Engine
from regrade.values import CellRef, CellResult
from regrade.workbook.screening import screen
from regrade.grading.policies import Policy, TargetError
from regrade.grading.consensus import Consensus, consensus
from regrade.grading.grade import (
    LIMIT_FAULTS, OUTPUT_FAULTS, Golden, GoldenError, Grade, grade, load_golden, output_fault, spilled_cells,
)
from regrade.runs.cases import Case
from regrade.grading.verdicts import CONFIRMED_FAIL, INVALID_GOLDEN, UNEVALUABLE, cell_reason, classify


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


def rescore_case(case: Case, policy: Policy, shallow: Engine, fulls: Sequence[Engine], quorum: int = 1) -> CaseResult:
    """Grade ``case`` with the value-only view and the consensus of the full engines
    (``quorum``: how many of them must compute a cell, :mod:`regrade.grading.consensus`)."""
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
        shallow_grade = grade(policy, targets, golden, shallow.name, stored)
        return CaseResult(case, bool(shallow_grade.passed), None, INVALID_GOLDEN, ["invalid-golden"], problem)
    spilled = spilled_cells(case.output_path, stored)
    if stored.failure is None and not any(t in stored.formulas or t in spilled for t in targets):
        agreed = Consensus(stored)  # the graded cells hold constants: no engine could change them
    else:
        agreed = consensus(policy, stored, {e.name: e.evaluate(case.output_path, targets) for e in fulls}, spilled,
                           quorum)
    shallow_grade = grade(policy, targets, golden, shallow.name, stored)
    full_grade = grade(policy, targets, golden, "+".join(e.name for e in fulls), agreed.view, recomputed=True)
    shallow_pass = bool(shallow_grade.passed)  # a value-only grader counts any failure to read as a fail
    full_pass = full_grade.passed
    if shallow_grade.reason in OUTPUT_FAULTS and full_pass is None:
        full_pass = False  # no reader accepts the file: the output itself is broken
        full_grade.reason = shallow_grade.reason
    verdict = classify(shallow_pass, full_pass, full_grade.reason)
    cells = _disagreements(golden, shallow_grade, full_grade, agreed, spilled)
    reasons = [r for r in (shallow_grade.reason, full_grade.reason) if r and r != "wrong-value"]
    reasons += [c.reason for c in cells]
    message = full_grade.message or shallow_grade.message
    decided_by_one = sum(agreed.decided_by.get(t) == 1 for t in targets) if len(fulls) > 1 else 0
    return CaseResult(case, shallow_pass, full_pass, verdict, sorted(set(reasons)), message, cells, decided_by_one)


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
