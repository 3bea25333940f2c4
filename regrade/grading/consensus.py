"""Combining several full engines into one recomputed view of an output.

For each graded cell every engine's value is taken through
:func:`regrade.grading.grade.recomputed_view` (formula cells and the cells array formulas
cover as computed, constants as stored). Engines that abstain on the cell, or could not evaluate the workbook, do
not vote. Then:

- the voters agree (under the policy's equality): the cell takes their value;
- they disagree: the cell abstains as ``engines-disagree`` and every engine's value
  is kept for the report (non-CSE ``=SUM(C2:C7*D2:D7)`` is 71.5 in dynamic-array
  engines and 15 under implicit intersection: a real semantic split, surfaced);
- nobody votes: the cell abstains with the engines' reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection

from regrade.values import CannotEvaluate, CellRef, CellResult, WorkbookValues
from regrade.grading.policies import Policy
from regrade.grading.grade import recomputed_view
from regrade.grading.verdicts import ENGINES_DISAGREE


@dataclass
class Consensus:
    view: WorkbookValues
    by_engine: dict[CellRef, dict[str, CellResult]] = field(default_factory=dict)


def consensus(
    policy: Policy, stored: WorkbookValues, computed: dict[str, WorkbookValues], spilled: Collection[CellRef] = ()
) -> Consensus:
    if not computed:
        raise ValueError("a consensus needs at least one engine")
    views = {name: recomputed_view(stored, values, spilled) for name, values in computed.items()}
    readable = [v for v in views.values() if v.failure is None]
    if not readable:
        failures = [f"{name}: {v.failure.reason} ({v.failure.detail})" for name, v in views.items() if v.failure]
        first = next(v.failure for v in views.values() if v.failure)
        return Consensus(WorkbookValues(failure=type(first)(first.reason, "; ".join(failures))))
    base = stored if stored.failure is None else readable[0]
    result = Consensus(WorkbookValues(sheet_names=base.sheet_names, formulas=dict(stored.formulas)))
    refs = dict.fromkeys(ref for view in readable for ref in view.cells)
    for ref in refs:
        values = {name: _value(view, ref) for name, view in views.items()}
        result.by_engine[ref] = values
        result.view.cells[ref] = agree(policy, values)
        for view in readable:
            if ref in view.formulas:
                result.view.formulas.setdefault(ref, view.formulas[ref])
    return result


def _value(view: WorkbookValues, ref: CellRef) -> CellResult:
    if view.failure is not None:
        return CannotEvaluate(view.failure.reason, view.failure.detail)
    if ref not in view.cells:
        return CannotEvaluate("missing-sheet", f"no sheet {ref.sheet!r}")
    return view.cells[ref]


def agree(policy: Policy, values: dict[str, CellResult]) -> CellResult:
    """One cell's consensus from each engine's value (see the module docstring)."""
    voters = {name: v for name, v in values.items() if not isinstance(v, CannotEvaluate)}
    if not voters:
        reasons = [v for v in values.values() if isinstance(v, CannotEvaluate)]
        details = "; ".join(f"{name}: {v.reason} ({v.detail})" if v.detail else f"{name}: {v.reason}"
                            for name, v in values.items() if isinstance(v, CannotEvaluate))
        return CannotEvaluate(reasons[0].reason, details)
    first = next(iter(voters.values()))
    if all(policy.equal(first, other) for other in voters.values()):
        return first
    return CannotEvaluate(ENGINES_DISAGREE, "; ".join(f"{name}={value}" for name, value in voters.items()))
