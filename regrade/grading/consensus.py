"""Combining several full engines into one recomputed view of an output.

For each graded cell every engine's value is taken through
:func:`regrade.grading.grade.recomputed_view` (formula cells and the cells array formulas
cover as computed, constants as stored). Engines that abstain on the cell, or could not evaluate the workbook, do
not vote. A graded constant no engine was asked for (:func:`engine_cells`) is taken as
stored, as every engine's view would have it. Then:

- the voters agree (under the policy's equality): the cell takes their value;
- they disagree: the cell abstains as ``engines-disagree`` and every engine's value
  is kept for the report (non-CSE ``=SUM(C2:C7*D2:D7)`` is 71.5 in dynamic-array
  engines and 15 under implicit intersection: a real semantic split, surfaced);
- nobody votes: the cell abstains with the engines' reasons;
- fewer voters than the quorum agree (``quorum`` 2: one engine computed the cell and every
  other abstained): the cell abstains as ``below-quorum``, so that one engine never decides
  alone where the others cannot check it.

:attr:`Consensus.decided_by` records, per cell, how many engines computed it and agreed (0
where the cell abstains); a results file's cell records carry it as ``decided_by``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Sequence

from regrade.engines.readings import decoded_texts
from regrade.values import CannotEvaluate, CellRef, CellResult, WorkbookValues
from regrade.grading.policies import Policy
from regrade.grading.grade import recomputed_view
from regrade.grading.verdicts import BELOW_QUORUM, ENGINES_DISAGREE


@dataclass
class Consensus:
    view: WorkbookValues
    by_engine: dict[CellRef, dict[str, CellResult]] = field(default_factory=dict)
    decided_by: dict[CellRef, int] = field(default_factory=dict)  # engines that computed the cell and agreed


def default_quorum(engines: int) -> int:
    """2 where three or more engines run (one engine alone never decides), else 1."""
    return 2 if engines >= 3 else 1


def engine_cells(targets: Sequence[CellRef], stored: WorkbookValues, spilled: Collection[CellRef]) -> list[CellRef]:
    """The graded cells the full engines compute: those the output holds a formula in or an
    array formula covers. Every other one holds a constant, which each engine's view keeps as
    stored (:func:`recomputed_view`), so no engine is asked for it, nor computes what only
    its neighbourhood would need. All of them when the output could not be read as stored."""
    if stored.failure is not None:
        return list(targets)
    if not stored.formulas and not spilled:
        return []
    computed = stored.formulas.keys() | spilled
    return list(filter(computed.__contains__, targets))


def of_constants(stored: WorkbookValues) -> Consensus:
    """The consensus of an output whose graded cells all hold constants, so no engine runs:
    each cell as stored, its text decoded, as :func:`consensus` keeps a graded constant no
    engine was asked for (the golden's text is decoded for the comparison too)."""
    return Consensus(WorkbookValues(sheet_names=stored.sheet_names, formulas=dict(stored.formulas),
                                    cells=decoded_texts(stored.cells)))


def consensus(
    policy: Policy, stored: WorkbookValues, computed: dict[str, WorkbookValues], spilled: Collection[CellRef] = (),
    quorum: int = 1,
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
    if stored.failure is None:  # a graded constant no engine was asked for: kept as stored, as recomputed_view keeps it
        kept = dict(stored.cells)
        for ref in (*refs, *stored.formulas, *spilled):  # what an engine computed, or was asked to (engine_cells)
            kept.pop(ref, None)
        result.view.cells.update(decoded_texts(kept))
    for ref in refs:
        values = {name: _value(view, ref) for name, view in views.items()}
        result.by_engine[ref] = values
        result.view.cells[ref] = agreed = agree(policy, values, quorum)
        result.decided_by[ref] = 0 if isinstance(agreed, CannotEvaluate) else _voters(values)
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


def _voters(values: dict[str, CellResult]) -> int:
    return sum(not isinstance(v, CannotEvaluate) for v in values.values())


def agree(policy: Policy, values: dict[str, CellResult], quorum: int = 1) -> CellResult:
    """One cell's consensus from each engine's value (see the module docstring)."""
    voters = {name: v for name, v in values.items() if not isinstance(v, CannotEvaluate)}
    if not voters:
        reasons = [v for v in values.values() if isinstance(v, CannotEvaluate)]
        details = "; ".join(f"{name}: {v.reason} ({v.detail})" if v.detail else f"{name}: {v.reason}"
                            for name, v in values.items() if isinstance(v, CannotEvaluate))
        return CannotEvaluate(reasons[0].reason, details)
    first = next(iter(voters.values()))
    if not all(policy.equal(first, other) for other in voters.values()):
        return CannotEvaluate(ENGINES_DISAGREE, "; ".join(f"{name}={value}" for name, value in voters.items()))
    if len(voters) < quorum:
        abstained = "; ".join(f"{name}: {v.key}" for name, v in values.items() if isinstance(v, CannotEvaluate))
        return CannotEvaluate(BELOW_QUORUM, f"only {', '.join(voters)} computed it (quorum {quorum}); {abstained}")
    return first
