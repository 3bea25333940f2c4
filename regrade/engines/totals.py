"""SUBTOTAL's subtleties, and AGGREGATE over references, for the engines that miss them.

Every SUBTOTAL skips the rows a filter hides; ``SUBTOTAL(101..111, ...)`` also skips rows
hidden by hand; and no SUBTOTAL counts a cell that is itself a SUBTOTAL or AGGREGATE.
gnumeric answers ``#NUM!`` for 101-111; pycel compiles SUBTOTAL to the plain function,
counting hidden rows and nested subtotals alike; IronCalc and gnumeric count filtered rows
in 1-11; formulas lacks SUBTOTAL, and gnumeric, formulas and pycel lack AGGREGATE. Such an
engine asks here whether a graded cell's value depends on what it misses. If the cell is
itself one call over references (``=SUBTOTAL(n, ref, ...)``, ``=AGGREGATE(f, option,
ref, ...)``), regrade computes it from the engine's values of those cells
(:func:`computed_total`, with :mod:`regrade.engines.functions.aggregate`); otherwise the engine
abstains: never a wrong value. The array form, ``AGGREGATE(14, 6, range/(condition), k)``,
needs the engine to compute the array: only IronCalc's bridge does that.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Callable

from openpyxl.formula.tokenizer import Token
from openpyxl.utils.datetime import to_excel

from regrade.engines.readings import number_value
from regrade.engines.rules import abstention
from regrade.values import CannotEvaluate, CellRef, ExcelError, WorkbookValues
from regrade.workbook.cones import Area, Cell, FormulaGraph
from regrade.engines.functions.aggregate import Item, aggregate
from regrade.workbook.sheets import HiddenRows, resolve_sheet
from regrade.workbook.formula import bare_name, call_pattern, tokens as formula_tokens

SKIPPING_HIDDEN = re.compile(r"(?<![A-Za-z0-9_.])SUBTOTAL\(\s*1(?:0[1-9]|1[01])\s*[,)]", re.IGNORECASE)
_CALLS_SUBTOTAL = call_pattern("SUBTOTAL")
_CALLS_NESTABLE = call_pattern("SUBTOTAL", "AGGREGATE")
_NESTABLE = frozenset({"SUBTOTAL", "AGGREGATE"})
_NUMBERS = frozenset((*range(1, 12), *range(101, 112)))  # SUBTOTAL's

# An engine's values of an area: rows from area.min_row, cells from area.min_col (an area
# reaching the grid's edge may stop at the sheet's last used row or column).
ReadArea = Callable[[Area], list[list[object]]]


@dataclass(frozen=True)
class TotalsDefects:
    """What an engine gets wrong about SUBTOTAL and AGGREGATE, as data for :func:`mend_totals`."""

    hidden: bool = False  # SUBTOTAL 101-111 (gnumeric: #NUM!; pycel counts rows hidden by hand)
    hidden_only_where_rows_are_hidden: bool = False  # ... and it matters only where a row is hidden (pycel)
    filtered: bool = False  # SUBTOTAL 1-11 count the rows a filter hides (IronCalc, gnumeric, pycel)
    hidden_by_hand: bool = False  # SUBTOTAL 1-11 skip rows hidden by hand, which Excel counts (Formulon)
    nested: bool = False  # SUBTOTAL counts cells that are themselves subtotals (pycel)
    computes_lacking: bool = False  # a graded direct call the engine could not compute (AGGREGATE) is computed

    def misses(self, graph: FormulaGraph, cell: Cell) -> bool:
        """Whether the value of ``cell`` depends on one of these defects."""
        hidden = self.hidden and (not self.hidden_only_where_rows_are_hidden
                                  or any(rows.hidden for rows in graph.hidden_rows.values()))
        return (hidden and skips_hidden_rows(graph, cell)) or (self.filtered and meets_a_filter(graph, cell)) \
            or (self.hidden_by_hand and meets_rows_hidden_by_hand(graph, cell)) \
            or (self.nested and counts_nested_subtotals(graph, cell))


def mend_totals(graph: FormulaGraph, values: WorkbookValues, read: ReadArea, defects: TotalsDefects) -> None:
    """The one mending of totals, for every engine that needs it: a graded formula cell whose
    value depends on one of the engine's ``defects`` (or, with ``computes_lacking``, on which
    the engine abstained) is computed by regrade when it is itself one call over references
    (:func:`computed_total`, from the engine's values through ``read``), and abstains
    otherwise (rule ``totals-not-computed``). A computed number takes the cell's date format."""
    for ref in values.formulas:
        sheet = resolve_sheet(ref.sheet, graph.sheets)
        if sheet is None:
            continue
        cell = CellRef(sheet, ref.row, ref.column)
        misses = defects.misses(graph, cell)
        lacking = defects.computes_lacking and isinstance(values.cells.get(ref), CannotEvaluate)
        if not (misses or lacking):
            continue
        computed = computed_total(graph, cell, read)
        if computed is not None:
            values.cells[ref] = number_value(computed, values.number_formats.get(ref)) if isinstance(computed, float) \
                else computed
        elif misses:
            values.cells[ref] = abstention("totals-not-computed")


def skips_hidden_rows(graph: FormulaGraph, cell: Cell) -> bool:
    """Whether the cone of ``cell`` calls SUBTOTAL 101-111."""
    return any(SKIPPING_HIDDEN.search(text) for text in graph.formulas_in_cone([cell]))


def meets_a_filter(graph: FormulaGraph, cell: Cell) -> bool:
    """Whether the cone of ``cell`` calls SUBTOTAL in a workbook where a filter hides rows."""
    if not any(rows.filtered for rows in graph.hidden_rows.values()):
        return False
    return any(_CALLS_SUBTOTAL.search(text) for text in graph.formulas_in_cone([cell]))


def meets_rows_hidden_by_hand(graph: FormulaGraph, cell: Cell) -> bool:
    """Whether the cone of ``cell`` calls SUBTOTAL in a workbook where rows are hidden by hand."""
    if not any(rows.hidden - rows.filtered for rows in graph.hidden_rows.values()):
        return False
    return any(_CALLS_SUBTOTAL.search(text) for text in graph.formulas_in_cone([cell]))


def counts_nested_subtotals(graph: FormulaGraph, cell: Cell) -> bool:
    """Whether some SUBTOTAL in the cone of ``cell`` reads, directly or through other
    formulas, a cell that calls SUBTOTAL or AGGREGATE (an over-estimate: Excel skips only
    the ones inside its ranges)."""
    calling = [c for c in graph.cells_in_cone([cell]) if _CALLS_SUBTOTAL.search(graph.formulas[c])]
    return any(graph.reads_a_call(c, _NESTABLE) for c in calling)


def computed_total(graph: FormulaGraph, cell: Cell, read: ReadArea) -> float | ExcelError | None:
    """Excel's value of ``cell`` when its formula is a direct call over references:
    ``=SUBTOTAL(n, ref, ...)``, ``=AGGREGATE(f, option, ref, ...)`` (f 1-13) or
    ``=AGGREGATE(f, option, ref, k)`` (f 14-19), every number written out and no counted
    cell depending on a SUBTOTAL, computed from the engine's values of the references.
    None otherwise, or when the engine could not read one of them (the caller abstains).
    A number, not a date: the caller formats it."""
    call = _direct_call(graph.formulas.get(cell, ""))
    if call is None:
        return None
    function, numbers = call
    found = graph.precedents(cell)
    if found.open or found.external or found.functions != {function}:
        return None
    subtotal = function == "SUBTOTAL"
    items: list[Item] = []
    computed: list[Cell] = []  # counted formula cells: the engine's values of them must not involve SUBTOTAL
    for area in found.areas:
        rows = graph.hidden_rows.get(area.sheet, HiddenRows())
        # SUBTOTAL 1-11 skip only filtered rows; AGGREGATE's options say whether hidden rows count
        skipped = rows.filtered if subtotal and numbers[0] < 100 else rows.hidden | rows.filtered
        for offset, values in enumerate(read(area)):
            row = area.min_row + offset
            for shift, value in enumerate(values):
                counted = CellRef(area.sheet, row, area.min_col + shift)
                formula = graph.formulas.get(counted)
                nested = formula is not None and bool(_CALLS_NESTABLE.search(formula))
                if formula is not None and not nested:
                    computed.append(counted)
                if isinstance(value, CannotEvaluate):
                    return None
                if isinstance(value, (datetime.datetime, datetime.date, datetime.time, datetime.timedelta)):
                    value = to_excel(value)  # an engine's reading of a date-formatted number
                items.append(Item(value, hidden=row in skipped, nested=nested))
    if computed and any(_CALLS_SUBTOTAL.search(text) for text in graph.formulas_in_cone(computed)):
        return None
    if subtotal:  # option 1: skip nested subtotals and the rows marked hidden (those this SUBTOTAL skips)
        return aggregate(int(numbers[0]) % 100, 1, items)
    return aggregate(int(numbers[0]), int(numbers[1]), items, numbers[2] if len(numbers) > 2 else None)


def is_direct_total(formula: str) -> bool:
    """Whether :func:`computed_total` may compute a cell holding ``formula``."""
    return _direct_call(formula) is not None


def _direct_call(formula: str) -> tuple[str, list[float]] | None:
    """("SUBTOTAL" or "AGGREGATE", its numbers) of a formula that is one such call whose
    arguments are each a number or a reference, in the order the function takes them."""
    if not _CALLS_NESTABLE.search(formula):
        return None
    split = formula_tokens(formula)
    if split is None:
        return None
    tokens = [t for t in split if t.type != Token.WSPACE]
    if len(tokens) < 5 or tokens[0].subtype != Token.OPEN or tokens[-1].value != ")":
        return None
    function = bare_name(tokens[0].value[:-1])
    args, separators = tokens[1:-1:2], tokens[2:-1:2]
    if any(t.subtype != Token.ARG for t in separators) or any(t.subtype not in (Token.NUMBER, Token.RANGE) for t in args):
        return None
    kinds = "".join("n" if t.subtype == Token.NUMBER else "r" for t in args)
    numbers = [float(t.value) for t in args if t.subtype == Token.NUMBER]
    if function == "SUBTOTAL" and re.fullmatch("nr+", kinds) and numbers[0] in _NUMBERS:
        return function, numbers
    if function == "AGGREGATE" and 0 <= numbers[1] <= 7 and numbers[1].is_integer() and (
            (re.fullmatch("nnr+", kinds) and numbers[0] in range(1, 14))
            or (kinds == "nnrn" and numbers[0] in range(14, 20))):
        return function, numbers
    return None
