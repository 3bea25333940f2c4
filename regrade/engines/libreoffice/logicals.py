"""Where LibreOffice's numbers-for-logicals part from Excel's logical type: the cells that abstain.

Excel keeps TRUE and FALSE a type of their own: a range's SUM, AVERAGE, MIN, MAX and COUNT skip
them, COUNTIF's criterion TRUE matches logicals and never the number 1, a comparison ranks any
logical above any text and any text above any number, and TRUE&"x" is "TRUEx". LibreOffice has
no logical type: TRUE is the number 1 with a boolean format (its documentation says so), so in
each of those places it counts, matches, compares and joins 1 and 0 instead. The Excel 365 oracle
shows it on 29 of its cells (``regrade conformance --excel-oracle``).

A graded formula cell abstains, on LibreOffice, by rule ``libreoffice-logical-as-number`` when a
formula of its cone reads a cell holding a TRUE or FALSE constant, or writes a TRUE or FALSE
literal where Excel tells it from a number: beside ``&`` or a comparison, as a criterion of the
*IF(S) functions, or as the value TEXT formats. A logical a formula computes is not seen here.
"""

from __future__ import annotations

import re

from regrade.engines.departures import CRITERIA
from regrade.engines.rules import abstention
from regrade.values import CannotEvaluate, CellRef, WorkbookValues
from regrade.workbook.analysis import WorkbookAnalysis
from regrade.workbook.calls import QUOTED, calls
from regrade.workbook.cones import Area, FormulaGraph
from regrade.workbook.sheets import formula_texts, logical_constants, resolve_sheet

RULE = "libreoffice-logical-as-number"
_LITERAL = r"(?:TRUE|FALSE)\b(?!\s*\()"
_BESIDE_AN_OPERATOR = re.compile(rf"[&<>=]\s*{_LITERAL}|(?<![\w.]){_LITERAL}\s*[&<>=]", re.IGNORECASE)
_LOGICAL_CRITERION = re.compile(r'^(?:"(?:<>|<=|>=|<|>|=)?\s*(?:TRUE|FALSE)\s*"|TRUE|FALSE)$', re.IGNORECASE)


def writes_a_logical_literal(formula: str) -> bool:
    """Whether ``formula`` writes TRUE or FALSE where Excel tells a logical from a number: next to
    ``&`` or a comparison (``TRUE>"zzz"``, ``A1=TRUE``), as a criterion (``COUNTIF(A:A,"<>TRUE")``)
    or as the value of TEXT."""
    if "TRUE" not in formula.upper() and "FALSE" not in formula.upper():
        return False
    if _BESIDE_AN_OPERATOR.search(QUOTED.sub('""', formula.lstrip("=")).replace(" ", "")):
        return True
    for call in calls(formula):
        arguments = [call.args[i] for i in CRITERIA.get(call.name, ()) if i < len(call.args)]
        if call.name == "TEXT" and call.args:
            arguments.append(call.args[0])
        if any(_LOGICAL_CRITERION.match(argument) for argument in arguments):
            return True
    return False


def abstain_where_logicals_are_numbers(analysis: WorkbookAnalysis, values: WorkbookValues) -> WorkbookValues:
    """LibreOffice's value of each graded formula cell whose cone reads or writes a logical as above
    becomes an abstention naming where."""
    if values.failure is not None or not values.formulas:
        return values
    constants = {sheet: sorted(cells) for sheet, cells in logical_constants(analysis.path).items()}
    if not constants and not any(writes_a_logical_literal(text)  # the common case, told from the sheet
                                 for text in formula_texts(analysis.path, ("TRUE", "FALSE"))):  # XML, no graph
        return values
    graph = analysis.graph()
    if graph is None:
        return values
    writers = {cell for cell, text in graph.formulas.items() if writes_a_logical_literal(text)}
    for ref in values.formulas:
        sheet = resolve_sheet(ref.sheet, graph.sheets)
        if sheet is None or isinstance(values.cells.get(ref), CannotEvaluate):
            continue
        place = _logical_in_cone(graph, CellRef(sheet, ref.row, ref.column), constants, writers)
        if place is not None:
            values.cells[ref] = abstention(RULE, f"{place}: LibreOffice has no logical type, TRUE is its number 1")
    return values


def _logical_in_cone(graph: FormulaGraph, cell: CellRef, constants: dict[str, list[tuple[int, int]]],
                     writers: set[CellRef]) -> str | None:
    """Where the cone of ``cell`` meets a logical: a formula writing a literal, or a constant it reads."""
    cone = graph.cone([cell])
    if cone.open and (constants or writers):
        return "a reference the cone cannot place, in a workbook holding logicals"
    written = sorted(cone.cells & writers)
    if written:
        return f"the formula at {written[0]}"
    for area in sorted(cone.areas, key=lambda a: (a.sheet, a.min_row, a.min_col, a.max_row, a.max_col)):
        found = _constant_in(area, constants.get(area.sheet, []))
        if found is not None:
            return f"the TRUE or FALSE at {CellRef(area.sheet, *found)}"
    return None


def _constant_in(area: Area, cells: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The first of ``cells`` (sorted) inside ``area``."""
    return next((rc for rc in cells if area.min_row <= rc[0] <= area.max_row and area.min_col <= rc[1] <= area.max_col),
                None)
