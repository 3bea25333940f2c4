"""SUBTOTAL's subtleties, for the engines that miss them.

Every SUBTOTAL skips the rows a filter hides; ``SUBTOTAL(101..111, ...)`` also skips rows
hidden by hand; and no SUBTOTAL counts a cell that is itself a SUBTOTAL or AGGREGATE.
gnumeric answers ``#NUM!`` for 101-111; pycel compiles SUBTOTAL to the plain function,
counting hidden rows and nested subtotals alike; IronCalc and gnumeric count filtered rows
in 1-11. Such an engine asks here whether a graded cell's value depends on what it
misses. If so, and the cell is itself ``=SUBTOTAL(n, ref, ...)`` over cells the engine
computed without SUBTOTAL, regrade computes it from the engine's values of those cells
(:func:`computed_subtotal`, with :mod:`engines.functions.aggregate`); otherwise the engine
abstains: never a wrong value.
"""

from __future__ import annotations

import datetime
import re
from typing import Callable

from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.utils.datetime import to_excel

from engines.base import CannotEvaluate
from engines.cones import Area, Cell, FormulaGraph
from engines.functions.aggregate import Item, aggregate
from engines.sheets import HiddenRows

SKIPPING_HIDDEN = re.compile(r"(?<![A-Za-z0-9_.])SUBTOTAL\(\s*1(?:0[1-9]|1[01])\s*[,)]", re.IGNORECASE)
_CALLS_SUBTOTAL = re.compile(r"(?<![A-Za-z0-9_.])SUBTOTAL\(", re.IGNORECASE)
_CALLS_NESTABLE = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:SUBTOTAL|AGGREGATE)\(", re.IGNORECASE)
_NESTABLE = frozenset({"SUBTOTAL", "AGGREGATE"})
_NUMBERS = frozenset((*range(1, 12), *range(101, 112)))

# An engine's values of an area: rows from area.min_row, cells from area.min_col (an area
# reaching the grid's edge may stop at the sheet's last used row or column).
ReadArea = Callable[[Area], list[list[object]]]


def skips_hidden_rows(graph: FormulaGraph, cell: Cell) -> bool:
    """Whether the cone of ``cell`` calls SUBTOTAL 101-111."""
    return any(SKIPPING_HIDDEN.search(text) for text in graph.formulas_in_cone([cell]))


def meets_a_filter(graph: FormulaGraph, cell: Cell) -> bool:
    """Whether the cone of ``cell`` calls SUBTOTAL in a workbook where a filter hides rows."""
    if not any(rows.filtered for rows in graph.hidden_rows.values()):
        return False
    return any(_CALLS_SUBTOTAL.search(text) for text in graph.formulas_in_cone([cell]))


def counts_nested_subtotals(graph: FormulaGraph, cell: Cell) -> bool:
    """Whether some SUBTOTAL in the cone of ``cell`` reads, directly or through other
    formulas, a cell that calls SUBTOTAL or AGGREGATE (an over-estimate: Excel skips only
    the ones inside its ranges)."""
    calling = [c for c in graph.cells_in_cone([cell]) if _CALLS_SUBTOTAL.search(graph.formulas[c])]
    return any(graph.reads_a_call(c, _NESTABLE) for c in calling)


def computed_subtotal(graph: FormulaGraph, cell: Cell, read: ReadArea) -> object | None:
    """Excel's value of ``cell`` when its formula is ``=SUBTOTAL(n, ref, ...)`` (n a number,
    each ref a plain reference) and no cell it counts depends on a SUBTOTAL, computed from
    the engine's values of the references; None otherwise, or when the engine could not
    read one of them (the caller abstains). A number, not a date: the caller formats it."""
    number = _direct_subtotal(graph.formulas.get(cell, ""))
    if number is None:
        return None
    found = graph.precedents(cell)
    if found.open or found.external or found.functions != {"SUBTOTAL"}:
        return None
    items: list[Item] = []
    computed: list[Cell] = []  # counted formula cells: the engine's values of them must not involve SUBTOTAL
    for area in found.areas:
        rows = graph.hidden_rows.get(area.sheet, HiddenRows())
        skipped = rows.hidden | rows.filtered if number > 100 else rows.filtered
        for offset, values in enumerate(read(area)):
            row = area.min_row + offset
            for shift, value in enumerate(values):
                counted = (area.sheet, row, area.min_col + shift)
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
    # option 1 skips nested subtotals and the rows marked hidden: here, those this SUBTOTAL skips
    return aggregate(number % 100, 1, items)


def _direct_subtotal(formula: str) -> int | None:
    """n of a formula that is exactly ``=SUBTOTAL(n, ref, ...)``, or None."""
    if not _CALLS_SUBTOTAL.search(formula):
        return None
    try:
        tokens = [t for t in Tokenizer(formula).items if t.type != Token.WSPACE]
    except Exception:
        return None
    if len(tokens) < 5 or tokens[0].value.upper().removeprefix("_XLFN.") != "SUBTOTAL(" or tokens[-1].value != ")":
        return None
    number, rest = tokens[1], tokens[2:-1]
    if number.subtype != Token.NUMBER or not number.value.isdigit() or int(number.value) not in _NUMBERS:
        return None
    separators, references = rest[0::2], rest[1::2]
    if len(separators) != len(references) or any(t.subtype != Token.ARG for t in separators) \
            or any(t.subtype != Token.RANGE for t in references):
        return None
    return int(number.value)
