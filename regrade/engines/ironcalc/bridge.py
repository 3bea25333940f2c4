"""Functions IronCalc lacks or gets wrong, computed in Python from arguments IronCalc evaluates.

======================  ===========================================================
AGGREGATE               IronCalc lacks it (:mod:`regrade.engines.functions.aggregate`)
SUBTOTAL 110 and 111    IronCalc counts hidden rows in them
SUBTOTAL 1-11 where a   IronCalc counts the rows a filter hides, which every SUBTOTAL
filter hides rows       skips (it counts rows hidden by hand, as Excel does in 1-11)
SUBTOTAL over OFFSET    OFFSET with an array of offsets or sizes (``OFFSET(A1, ROW(A1:A9)
of an array             - 1, 0)``) is one reference per element in Excel, and SUBTOTAL
                        one value per reference; IronCalc takes the first element
XLOOKUP, XMATCH         IronCalc gives ``#VALUE!`` for a two-dimensional return
                        array and misses wildcard matches over computed arrays and
                        XMATCH of an array of values
                        (:mod:`regrade.engines.functions.lookup`)
LOOKUP                  IronCalc misses ``LOOKUP(2, 1/(condition), result)`` and
                        answers 0 over a range ending in empty cells (``LOOKUP(9^9, D1:E1)``)
SUM, AVERAGE, MIN, MAX, IronCalc mishandles an array computed inside an array
COUNT, SMALL, LARGE     formula (``AVERAGE(IF(A2:A9=x, B2:E9))``); bridged only there,
                        over such an argument; SMALL and LARGE also over an array of k
ISNUMBER, ISERR, ISNA,  IronCalc does not apply them element by element over an
the other IS functions, array; bridged where an array may reach them: in an array
N, NOT, MOD, MATCH      formula or inside SUMPRODUCT, AGGREGATE, LOOKUP, MMULT or INDEX's
                        first argument (MOD in every array formula, to Excel's 15
                        significant digits)
COUNTIF(S), SUMIF(S),   IronCalc counts only text cells as unequal to a text criterion
AVERAGEIF(S), MAXIFS,   (``"<>x"`` skips numbers and blanks) and uses only the first of an
MINIFS                  array of criteria: bridged for such criteria
                        (:mod:`regrade.engines.functions.criteria`)
INDEX at one end of a   IronCalc's INDEX gives no reference: ``SUM(A1:INDEX(A:A, n))`` is
range                   ``#VALUE!``; regrade writes the cell INDEX points at (an error
                        at either end is the whole range's value)
YEAR, MONTH, DAY,       IronCalc dates serials below 61 one day off and gives
EOMONTH, EDATE          ``#NUM!`` for 0, an empty cell (:mod:`regrade.engines.functions.dates`);
                        YEAR, MONTH and DAY of TODAY() or NOW(), never there, are IronCalc's
TEXT of text            IronCalc returns text unchanged: numeric text is not read as its
                        number, the format's text section is not applied; regrade does
                        both and leaves the numbers for IronCalc to format
                        (:mod:`regrade.engines.functions.text`)
======================  ===========================================================

Every formula holding such a call is resolved innermost call first, all formulas at
once, in *rounds*: the innermost bridged call of each formula is taken and its
arguments are evaluated by IronCalc on a throw-away copy of the model. A plain
reference is read cell by cell (with its hidden rows and nested SUBTOTAL/AGGREGATE
cells, which AGGREGATE's options may skip). Any other expression is entered in a
scratch cell right of the sheet's used range, in the caller's row (so ``ROW()``
still means the caller's row): one evaluation sizes every expression with
``ROWS``/``COLUMNS``, a second computes them as array formulas of that size.
Identical expressions that do not depend on where they stand are computed once.
Python then computes each call and writes its result into the formula: the
reference XLOOKUP returns when its return array is a reference (as Excel does), a
literal otherwise.

A call whose arguments regrade cannot take (a binary search, an array lookup value,
an array too large) is left to IronCalc; a SUBTOTAL so left, whose IronCalc value is wrong
there, is reported with the skipped cells. *Passes* repeat the whole resolution
until no formula changes, so a call that reads another bridged cell converges; where the
formula graph shows that no bridged call reads a bridged cell, through any formula
(:meth:`regrade.workbook.cones.FormulaGraph.read_apart`; TODAY() counts as one value, the
engine computing again if the day changed), the first resolution is the settled
one, and no pass repeats it to find that out. A
chain too long for that (task 42110: each of 45 rows lists the names the rows above
have not) is resolved one dependency level at a time, in the order of the formula
graph, and one more pass checks that nothing changes. A workbook that does not
settle keeps its original formulas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping

from openpyxl.formula.tokenizer import Token

from regrade.engines.functions.lookup import NotImplementedMode
from regrade.engines.ironcalc.adapters import FUNCTIONS
from regrade.engines.ironcalc.adapters.lookup import index_reference
from regrade.engines.ironcalc.adapters.results import Formula, Slice, literal
from regrade.engines.ironcalc.arguments import Argument, ModelCell, Scratch
from regrade.engines.ironcalc.calls import (CANDIDATE, INDEX_AS_REFERENCE, BridgeContext, BridgedCall, innermost_call,
                                            reads_local_names)
from regrade.engines.readings import unknown_functions
from regrade.workbook.formula import calls_function


MAX_PASSES = 6


MAX_LEVELS = 100


MAX_ROUNDS = 20


_WHOLE_SHEET = re.compile(r"(!|[(,=+\-*/&^<>])\s*:(?=\s*[,)])")  # a bare ":" where a reference stands


@dataclass
class Bridged:
    """What the bridge did to a model."""

    originals: dict[ModelCell, str]  # each cell it rewrote: the cell's original formula
    skipped: dict[ModelCell, str]  # cells it should have computed but left to IronCalc: the function
    settled: bool = True  # False: it gave up, every cell it found is left to IronCalc


def bridge_functions(model: Any, array_cells: Collection[ModelCell] = frozenset(), only_missing: bool = False,
                     order: Callable[[list[ModelCell]], list[list[ModelCell]] | None] | None = None,
                     filtered_rows: Mapping[int, frozenset[int]] | None = None,
                     read_apart: Callable[[list[ModelCell]], bool] | None = None) -> Bridged:
    """Compute every bridged call into the model's formulas.

    ``array_cells`` are the cells holding array formulas (:func:`regrade.workbook.sheets.array_formula_cells`).
    With ``only_missing``, only the functions IronCalc lacks are bridged, not those it gets
    wrong in places (for workbooks so slow to evaluate that the bridge's extra evaluations
    would not fit in the time limit). ``order`` puts bridged cells in dependency levels
    (:meth:`regrade.workbook.cones.FormulaGraph.dependency_levels`), for chains too long to settle
    in :data:`MAX_PASSES` passes; ``read_apart`` tells that no bridged cell reads another
    (:meth:`regrade.workbook.cones.FormulaGraph.read_apart`), so one resolution settles them all.
    The model must be evaluated (its copies keep its values).
    ``filtered_rows`` are, per sheet index, the rows a filter hides
    (:class:`regrade.workbook.sheets.HiddenRows`): where there are any, every SUBTOTAL is bridged.
    The cells left to IronCalc (for time, because they did not settle, because the call reads a
    LET or LAMBDA name, which means nothing outside the formula, or a SUBTOTAL the bridge could
    not compute) are reported as skipped: the caller abstains on what depends on them.
    """
    context = BridgeContext(array_cells, filtered_rows or {})
    originals: dict[ModelCell, str] = {}
    functions: dict[ModelCell, str] = {}  # the bridged function of each cell found
    for sheet, row, column in model.get_all_cells():
        formula = _repair_rendering(model.get_cell_formula(sheet, row, column))
        cell = (sheet, row, column)
        if not formula or not (CANDIDATE.search(formula) or INDEX_AS_REFERENCE.search(formula)):
            continue
        if set(unknown_functions(formula)) - FUNCTIONS.keys():  # those IronCalc lacks stay, to abstain on
            if context.filtering and calls_function(formula, "SUBTOTAL"):
                functions[cell] = "SUBTOTAL"  # ... and a SUBTOTAL there counts the rows a filter hides
        else:
            call = innermost_call(cell, formula, context)
            if call is not None:
                functions[cell] = call.function
                if (not only_missing or calls_function(formula, "AGGREGATE")) and not reads_local_names(call, formula):
                    originals[cell] = formula
    skipped = {cell: function for cell, function in functions.items() if cell not in originals}
    if not originals:
        return Bridged({}, skipped)
    context.subtotal_cells = {cell for cell, text in originals.items() if calls_function(text, "SUBTOTAL", "AGGREGATE")}
    settled: dict[ModelCell, str] | None
    if read_apart is not None and read_apart(sorted(originals)):  # what each call reads stays as it is
        settled = _resolve_on_copy(model, originals, context)
        _write(model, settled)
    else:
        settled = _settle_in_passes(model, originals, context)
    if settled is None and order is not None and (levels := order(sorted(originals))) is not None:
        _write(model, originals)
        settled = _settle_by_level(model, originals, context, levels)
    if settled is None:  # did not settle: give up honestly
        _write(model, originals)
        return Bridged({}, functions, settled=False)
    skipped.update({cell: "SUBTOTAL" for cell in context.refused})
    return Bridged({cell: originals[cell] for cell in originals if settled[cell] != originals[cell]}, skipped)


def _settle_in_passes(model: Any, originals: dict[ModelCell, str], context: BridgeContext) -> dict[ModelCell, str] | None:
    """Resolve every formula, pass after pass, until a pass changes nothing; None if none does so in time."""
    previous: dict[ModelCell, str] = {}
    for _ in range(MAX_PASSES):
        current = _resolve_on_copy(model, originals, context)
        if current == previous:
            return current
        _write(model, current)
        previous = current
    return None


def _settle_by_level(model: Any, originals: dict[ModelCell, str], context: BridgeContext,
                     levels: list[list[ModelCell]]) -> dict[ModelCell, str] | None:
    """Resolve the formulas one dependency level at a time, each from the settled levels before it;
    one pass over all of them then checks that nothing changes (None if something does)."""
    if len(levels) > MAX_LEVELS:
        return None
    settled: dict[ModelCell, str] = {}
    for level in levels:
        resolved = _resolve_on_copy(model, {cell: originals[cell] for cell in level}, context)
        _write(model, resolved)
        settled.update(resolved)
    return settled if _resolve_on_copy(model, originals, context) == settled else None


def _resolve_on_copy(model: Any, originals: dict[ModelCell, str], context: BridgeContext) -> dict[ModelCell, str]:
    """The formulas with their bridged calls resolved against a copy of the model as it stands.
    The cells of ``originals`` holding a SUBTOTAL it could not compute are put in ``context.refused``
    (and taken out of it when it could): the last resolution of a cell has the say."""
    import ironcalc

    copy = ironcalc.load_from_bytes(model.to_bytes())  # the model is evaluated, and its copy keeps the values
    context.refused -= originals.keys()
    try:
        return _resolve_all(copy, originals, context)
    except Exception:  # a formula IronCalc will not take, no scratch room left...: leave them to IronCalc
        context.refused |= {cell for cell, text in originals.items() if calls_function(text, "SUBTOTAL")}
        return dict(originals)


def _write(model: Any, formulas: dict[ModelCell, str]) -> None:
    for (sheet, row, column), text in formulas.items():
        model.update_cell_with_formula(sheet, row, column, text)
    model.evaluate()


def _resolve_all(copy: Any, originals: dict[ModelCell, str], context: BridgeContext) -> dict[ModelCell, str]:
    """Every formula with its bridged calls replaced, innermost first, all formulas in step."""
    formulas = dict(originals)
    open_cells = set(formulas)
    tokens: dict[str, list[Token]] = {}
    known: dict[tuple, Argument | None] = {}  # expressions evaluated on the copy, for later rounds
    # a call computed once per distinct function and arguments: the same MONTH(Data!B5:B3000) in a
    # thousand formulas is one array to compute and to write out, and the copy does not change between
    # rounds (the scratch cells aside), so a round computes only calls no earlier round did
    computed: dict[tuple, str | None] = {}
    for _ in range(MAX_ROUNDS):
        calls = [c for c in (innermost_call(cell, formulas[cell], context, tokens) for cell in sorted(open_cells))
                 if c is not None]
        if not calls:
            break
        scratch = Scratch(copy, context.subtotal_cells, context.filtered_rows, known)
        planned = [(call, [scratch.plan(call.cell, text, call.function) for text in call.args]) for call in calls]
        scratch.evaluate()
        open_cells = set()
        for call, args in planned:
            key = (call.function, call.lead, call.cell[0], *args)
            if key not in computed:
                computed[key] = _compute(call, [scratch.argument(a) for a in args], copy)
            result = computed[key]
            if result is not None:
                formulas[call.cell] = call.replaced(result, tokens)
                open_cells.add(call.cell)
            elif call.function == "SUBTOTAL":  # IronCalc's own is wrong here: what depends on it abstains
                context.refused.add(call.cell)
    return formulas


def _repair_rendering(formula: str | None) -> str | None:
    """IronCalc prints a whole-sheet reference (``$1:$1048576``) as a bare ``:``, which it cannot
    read back; every formula the bridge rewrites is re-entered, so it is spelled out."""
    if not formula or ":" not in formula:
        return formula
    parts = re.split(r'("(?:[^"]|"")*")', formula)
    for index in range(0, len(parts), 2):  # outside string literals
        parts[index] = _WHOLE_SHEET.sub(r"\1$A$1:$XFD$1048576", parts[index])
    return "".join(parts)



def _compute(call: BridgedCall, args: list[Argument | None], copy: Any) -> str | None:
    """The text that replaces the call, or None to leave it to IronCalc."""
    if any(a is None for a in args):
        return None
    try:
        if call.function == "INDEX":
            result = index_reference(args)  # type: ignore[arg-type]
        else:
            result = FUNCTIONS[call.function].compute(args)  # type: ignore[arg-type]
    except NotImplementedMode:
        return None
    if result is None:
        return None
    if isinstance(result, Formula):
        return result.text
    if isinstance(result, Slice):
        if call.lead:  # the far end of a range is written without its sheet, which must be the caller's
            return result.render(copy, with_sheet=False) if result.area[0] == call.cell[0] else None
        return result.render(copy)
    return literal(result)
