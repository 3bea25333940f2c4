"""Each engine checked against the golden before it judges a task's outputs.

The golden of a task is a workbook Excel computed: the values it caches on its graded
formula cells are Excel's own results for exactly the formulas of that task. Before an
engine's value of an output's graded cell counts, the engine recomputes the golden's graded
formula cells; where it does not reproduce Excel's cached value on a cell (under the
policy's equality, as the outputs are graded), it does not vote on that cell for the task's
outputs: its value there becomes an abstention, reason ``golden-not-reproduced``, naming
what it computed and what Excel cached. An engine that cannot compute a golden cell, or
cannot read the golden, is not held back by this check (it abstains on the output if it
cannot compute it there either); only a value that differs from Excel's is.

Where every engine that computed such a cell of the golden departs from Excel's value,
it is the golden, not the output, that is in doubt (a stale cache: inputs changed after
Excel computed): the case's verdict is ``invalid-golden``.

A golden is recomputed once per engine and content in a process (:func:`golden_departures`
keeps the last few), however many outputs of its task are graded there; the cases of one
golden go to the same worker (:func:`regrade.run.rescore.same_golden`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Sequence

from regrade.engines.base import Engine
from regrade.engines.readings import number_value
from regrade.grading.grade import Golden, grade
from regrade.grading.policies import Policy
from regrade.values import CannotEvaluate, CellRef, WorkbookValues

GOLDEN_NOT_REPRODUCED = "golden-not-reproduced"

Departures = dict[str, dict[CellRef, str]]  # engine -> graded cell -> what it computed against what Excel cached


def checked_cells(golden: Golden, targets: Sequence[CellRef]) -> list[CellRef]:
    """The graded cells the golden holds a formula with a cached value in: Excel's results to check an engine on."""
    return [t for t in golden.formulas_among(targets) if golden.value(t) is not None]


def golden_departures(policy: Policy, golden: Golden, targets: Sequence[CellRef], fulls: Sequence[Engine],
                      known: dict[str, WorkbookValues] | None = None) -> Departures:
    """Per engine, the graded cells of the golden whose cached value (Excel's) it does not
    reproduce. ``known``: each engine's values of a file with the golden's very bytes (an output
    that is a copy of it), which are then its values of the golden."""
    cells = tuple(checked_cells(golden, targets))
    if not cells:
        return {}
    stat = golden.path.stat()
    departures = {}
    for engine in fulls:
        key = (golden.path, stat.st_mtime_ns, stat.st_size, policy.name, cells, engine.name)
        if key not in _REMEMBERED:
            given = (known or {}).get(engine.name)
            computed = given if given is not None and all(c in given.cells for c in cells) \
                else engine.evaluate(golden.path, cells)
            _REMEMBERED[key] = _departures(policy, golden, cells, engine.name, computed)
            while len(_REMEMBERED) > REMEMBERED:
                _REMEMBERED.popitem(last=False)
        departures[engine.name] = dict(_REMEMBERED[key])
    return departures


REMEMBERED = 64  # golden checks kept in a process: a worker grades a golden's cases one after another
_REMEMBERED: OrderedDict[tuple, tuple[tuple[CellRef, str], ...]] = OrderedDict()


def _departures(policy: Policy, golden: Golden, cells: tuple[CellRef, ...], engine: str,
                computed: WorkbookValues) -> tuple[tuple[CellRef, str], ...]:
    """The cells whose value ``computed`` (an engine's of the golden) differs from Excel's
    cache, as the outputs are graded: a plain number read in the golden's own format."""
    if computed.failure is not None:
        return ()  # nothing learnt about the engine: it is not held back
    cells_read = {ref: number_value(value, golden.number_format(ref)) if type(value) is float else value
                  for ref, value in computed.cells.items()}
    view = WorkbookValues(sheet_names=computed.sheet_names, cells=cells_read, formulas=computed.formulas)
    checked = grade(policy, list(cells), golden, engine, view, recomputed=True)
    return tuple((c.ref, f"{engine} computes {c.value!r} on the golden's {c.ref}, where Excel cached {c.golden!r}")
                 for c in checked.cells if not c.abstained)


def withheld(computed: dict[str, WorkbookValues], departures: Departures) -> dict[str, WorkbookValues]:
    """Each engine's values of the output, the cells it departed from Excel on in the golden
    replaced by an abstention (:data:`GOLDEN_NOT_REPRODUCED`)."""
    result = {}
    for name, values in computed.items():
        held = departures.get(name) or {}
        if values.failure is not None or not held:
            result[name] = values
            continue
        cells = dict(values.cells)
        for ref, detail in held.items():
            if ref in cells:
                cells[ref] = CannotEvaluate(GOLDEN_NOT_REPRODUCED, detail)
        result[name] = WorkbookValues(sheet_names=values.sheet_names, cells=cells, formulas=values.formulas,
                                      number_formats=values.number_formats)
    return result


def golden_in_doubt(departures: Departures, engines: Sequence[str]) -> list[CellRef]:
    """The graded cells on which every engine departs from Excel's cached value in the golden
    (each computed it, none reproduced it): the golden is what is in doubt there."""
    if not engines or any(name not in departures for name in engines):
        return []
    common = set.intersection(*(set(departures[name]) for name in engines))
    return sorted(common)
