"""IronCalc: a full recalculation in Rust, through its Python bindings.

IronCalc recomputes every formula on load. AGGREGATE, which it lacks, and the
functions it gets wrong (SUBTOTAL 110/111, SUBTOTAL where a filter hides rows, XLOOKUP, XMATCH ...) are computed by
:mod:`regrade.engines.ironcalc.bridge` from arguments IronCalc evaluates. Where it cannot
compute a cell, regrade abstains instead of reporting a wrong value:

- a function IronCalc does not know comes back lower-cased in the formula text
  (``=_xlfn.aggregate(9,6,B2:B4)``) with ``#NAME?``; a target whose own formula
  holds one abstains even when the value looks fine (``IFERROR`` can hide it), and
  an erroring target abstains when a formula in its dependency cone
  (:mod:`regrade.workbook.cones`) holds one: the error may come from there;
- ``#ERROR!`` is IronCalc's own parse-failure marker, not an Excel error
  (structured references from tables written by openpyxl end up here);
- IronCalc evaluates a defined name only when it is one reference: a cell whose cone
  reads a name defined by a formula or a constant (``{0,1,2}``, ``Sheet1!$A$1*2``)
  abstains (IronCalc gives ``#NAME?``, or 0);
- ``#VALUE!`` from a date read from text (``DATEVALUE("9 Aug 2021")``) abstains:
  IronCalc reads fewer date texts than Excel (:func:`regrade.workbook.calls.reads_a_date_from_text`);
- OFFSET over offsets computed from ranges (``SUMPRODUCT(N(OFFSET(A1,ROW(A1:A3)-1,0)))``):
  IronCalc takes the first element where Excel makes one reference per element
  (``offset-computed-array``, a row of :mod:`regrade.engines.departures`); as a SUBTOTAL's
  reference the bridge computes it, one reference at a time.

Each abstention is a rule of :mod:`regrade.engines.rules`. The bridge evaluates the model
several times; past ``EngineSettings.bridge_work`` referenced cells (a count, not a clock)
only the functions IronCalc lacks are bridged, and cells that depend on the others abstain
(``ironcalc-bridge-left``).

Numbers in date or time formats become ``datetime``/``time`` exactly as openpyxl
reads a cached value, so the comparison policy sees both alike.
"""

from __future__ import annotations

import datetime
import functools
from dataclasses import replace
from typing import Any, Callable, Collection, Sequence

from regrade.engines.departures import (
    AN_EMPTY_PIECE, TEXT_FORMAT_REJECTED, Departure, abstain_on_departures, formats_a_fraction, hazards_binding,
    ignores_empty, offsets_of_a_computed_array, sized,
)
from regrade.engines.ironcalc.arguments import ModelCell
from regrade.engines.ironcalc.bridge import bridge_functions
from regrade.engines.range_rewrites import last_row_readers, rewrite_range_arguments
from regrade.engines.pipeline import PythonPackageEngine
from regrade.engines.readings import number_value, unknown_functions
from regrade.engines.rules import abstention
from regrade.engines.totals import TotalsDefects, mend_totals
from regrade.values import CellRef, CellResult, ExcelError, WorkbookFailure, WorkbookValues
from regrade.workbook.analysis import WorkbookAnalysis
from regrade.workbook.calls import calls
from regrade.workbook.cones import Area, FormulaGraph, plain_area
from regrade.workbook.formula import referenced_cells
from regrade.workbook.sheets import array_formula_cells, mentions, resolve_sheet
from regrade.workbook.structured import structured_rewrites


_LOOKUPS = frozenset({"VLOOKUP", "HLOOKUP", "XLOOKUP"})
STEADY_IN_A_DAY = frozenset({"TODAY"})  # volatile, but one value all day (NOW and RAND are not)
_VALUE = ExcelError("#VALUE!")

class IronCalcEngine(PythonPackageEngine):
    package = "ironcalc"
    name = "ironcalc"
    full = True

    def compute(self, analysis: WorkbookAnalysis, cells: Sequence[CellRef]) -> WorkbookValues:
        day = _utc_day()
        values = self._computed(analysis, cells)
        if _utc_day() != day:  # midnight (UTC, the model's time zone) passed: TODAY() was not one value throughout
            values = self._computed(analysis, cells)
        return values

    def _computed(self, analysis: WorkbookAnalysis, cells: Sequence[CellRef]) -> WorkbookValues:
        import ironcalc

        path = analysis.path
        try:
            model = ironcalc.load_from_xlsx(str(path))
        except MemoryError:  # a limit, not a broken file: the isolating worker reports it
            raise
        except Exception as exc:  # WorkbookError and friends; a panic is handled by the worker
            return WorkbookValues(failure=WorkbookFailure("load-failed", f"IronCalc cannot load it: {exc}"))
        names = [p["name"] for p in model.get_worksheets_properties()]
        arrays = array_formula_cells(path)  # (sheet index in workbook order, row, column)
        originals = _work_around_defects(model, names, analysis, arrays)  # before the first evaluation: one is enough
        try:
            model.evaluate()
        except Exception as exc:
            return WorkbookValues(failure=WorkbookFailure("load-failed", f"IronCalc cannot evaluate it: {exc}"))
        heavy = _referenced_cells(model) > self.settings.bridge_work  # a count of work, never a clock
        order = functools.partial(_dependency_levels, analysis, names)
        graph = analysis.graph
        mentioned = mentions(path, (b"SUBTOTAL(", b"filterColumn", b"LOOKUP("))  # a quick look before the graph
        filtered = {b"SUBTOTAL(", b"filterColumn"} <= mentioned
        bridged = bridge_functions(model, arrays, only_missing=heavy, order=order,
                                   filtered_rows=_filtered_rows(graph(), names) if filtered else None,
                                   read_apart=functools.partial(_read_apart, analysis, names))
        originals = {**bridged.originals, **originals}
        skipped = {CellRef(names[sheet], row, column): function for (sheet, row, column), function in bridged.skipped.items()}
        workbook_unknown = functools.cache(lambda: _workbook_unknown_functions(model))
        empty_lookups = _lookups_of_empty_cells(model, names, originals) if b"LOOKUP(" in mentioned else {}
        computed_names = any(plain_area(n["formula"], names[0], names) is None for n in model.get_defined_name_list())
        result = WorkbookValues(sheet_names=names)
        for ref in cells:
            sheet = resolve_sheet(ref.sheet, names)
            if sheet is None:
                continue
            index = names.index(sheet)
            computed_formula = model.get_cell_formula(index, ref.row, ref.column)
            formula = originals.get((index, ref.row, ref.column)) or computed_formula  # report what the file says
            value = _read_value(model, index, ref.row, ref.column)
            cell = CellRef(sheet, ref.row, ref.column)
            if formula:
                result.formulas[ref] = formula
                own_unknown = unknown_functions(computed_formula or "")  # what IronCalc computed, after rewrites
                if own_unknown:
                    value = abstention("ironcalc-lacks-function", f"IronCalc lacks {', '.join(own_unknown)}")
                elif computed_names and (read := _computed_names_read(graph(), cell)):
                    value = abstention("ironcalc-computed-name", f"IronCalc cannot evaluate {read}: a defined name "
                                       "that is a formula or a constant, not one reference")
                elif skipped and (left := _in_cone(graph(), skipped, cell)):
                    value = abstention("ironcalc-bridge-left", f"IronCalc gets {', '.join(left)} wrong in places, and "
                                       "the bridge left it to IronCalc here (a workbook past the bridge's work budget, "
                                       "a chain that did not settle, or a LET or LAMBDA name)")
                elif isinstance(value, ExcelError) and (reached := _unknown_in_cone(graph, workbook_unknown(), cell)):
                    value = abstention("ironcalc-error-from-missing-function",
                                       f"{value.code} from a formula that calls {', '.join(reached)}, which IronCalc lacks")
                elif empty_lookups and (lookups := _in_cone(graph(), empty_lookups, cell)):
                    value = abstention("ironcalc-lookup-of-empty", f"IronCalc's {', '.join(lookups)} of an empty cell "
                                       "matches an empty cell of the range, which Excel's does not")
            result.cells[ref] = value
        # the bridge computes every SUBTOTAL where a filter hides rows (what depends on one it left to
        # IronCalc abstains above); where it left them all (past its work budget, or unsettled), the
        # direct calls are computed here and the rest abstain
        if filtered and (heavy or not bridged.settled) and (totals_graph := graph()) is not None:
            mend_totals(totals_graph, result, functools.partial(_read_area, model, names), _DEFECTS)
        return abstain_on_departures(analysis, result, _DEPARTURES)


# Ways of calling where IronCalc departs from Excel (regrade.engines.departures); OFFSET (over computed
# offsets, or over an array of offsets) as a SUBTOTAL's reference is the bridge's, which computes it one
# reference per element or leaves the cell to abstain
_DEPARTURES = (Departure("OFFSET", offsets_of_a_computed_array, "offset-computed-array", except_in=("SUBTOTAL",)),
               TEXT_FORMAT_REJECTED,
               Departure("TEXTJOIN", ignores_empty, "ironcalc-textjoin-empty-text", text_like=AN_EMPTY_PIECE),
               Departure("OFFSET", sized, "ironcalc-offset-negative-size", only_on=ExcelError("#VALUE!")),
               Departure("TEXT", formats_a_fraction, "ironcalc-text-fraction"),
               *(replace(d, except_in=("SUBTOTAL",)) if d.rule == "offset-array" else d for d in hazards_binding("ironcalc")))


# IronCalc computes SUBTOTAL 101-111 itself (110 and 111 through the bridge) and AGGREGATE
# through the bridge; it counts the rows a filter hides in SUBTOTAL 1-11, which the bridge
# computes where a filter hides rows.
_DEFECTS = TotalsDefects(filtered=True)


def _filtered_rows(graph: FormulaGraph | None, names: list[str]) -> dict[int, frozenset[int]] | None:
    """Per sheet index, the rows a filter hides (None when the file cannot be traced: the bridge
    then leaves SUBTOTAL 1-11 to IronCalc and the totals are mended as before)."""
    if graph is None:
        return None
    return {names.index(sheet): rows.filtered for sheet, rows in graph.hidden_rows.items() if sheet in names and rows.filtered}


def _read_area(model: Any, names: list[str], area: Area) -> list[list[object]]:
    """IronCalc's values of an area, cut at the sheet's used range."""
    index = names.index(area.sheet)
    _, last_row, _, last_column = model.get_sheet_dimensions(index)
    return [[_read_value(model, index, row, column) for column in range(area.min_col, min(area.max_col, last_column) + 1)]
            for row in range(area.min_row, min(area.max_row, last_row) + 1)]


def _referenced_cells(model: Any) -> int:
    """The work one evaluation of the model asks for: the cells its formulas' references span
    (:func:`regrade.workbook.formula.referenced_cells`). The bridge evaluates the model again
    several times; past ``EngineSettings.bridge_work`` it bridges only what IronCalc lacks."""
    return sum(referenced_cells(formula) for sheet, row, column in model.get_all_cells()
               if (formula := model.get_cell_formula(sheet, row, column)))


def _work_around_defects(model: Any, names: list[str], analysis: WorkbookAnalysis,
                         arrays: Collection[tuple[int, int, int]]) -> dict[tuple[int, int, int], str]:
    """Rewrite formulas IronCalc misreads (regrade.workbook.structured, regrade.engines.range_rewrites;
    ``arrays``: the array formulas' cells); returns each rewritten cell's original formula. The
    caller evaluates the model again. The structured references are read from the formula
    graph's workbook, loaded once for both."""
    originals: dict[tuple[int, int, int], str] = {}
    loaded = lambda: graph.book if (graph := analysis.graph()) is not None else None  # noqa: E731
    for (sheet_name, row, column), formula in structured_rewrites(analysis.path, array_formulas=True, loaded=loaded).items():
        if sheet_name in names:
            index = names.index(sheet_name)
            originals[(index, row, column)] = model.get_cell_formula(index, row, column) or formula
            model.update_cell_with_formula(index, row, column, formula)
    last_row = last_row_readers({name.lower(): model.get_sheet_dimensions(index)[1] for index, name in enumerate(names)})
    for sheet, row, column in model.get_all_cells():
        formula = model.get_cell_formula(sheet, row, column)
        if not formula:
            continue
        rewritten = rewrite_range_arguments(formula, last_row(names[sheet]), array=(sheet, row, column) in arrays)
        if rewritten != formula:
            originals.setdefault((sheet, row, column), formula)
            model.update_cell_with_formula(sheet, row, column, rewritten)
    return originals


def _dependency_levels(analysis: WorkbookAnalysis, names: list[str],
                       cells: list[ModelCell]) -> list[list[ModelCell]] | None:
    """The bridge's cells (sheet index, row, column) in dependency levels, from the file's formula graph."""
    graph = analysis.graph()
    if graph is None:
        return None
    levels = graph.dependency_levels(_cell_refs(names, cells))
    return None if levels is None else [[(names.index(s), r, c) for s, r, c in level] for level in levels]


def _read_apart(analysis: WorkbookAnalysis, names: list[str], cells: list[ModelCell]) -> bool:
    """Whether no bridged cell reads another, from the file's formula graph (False without one).
    TODAY() is one value within one computation (:meth:`IronCalcEngine.compute` computes again if
    the day changed during it), so a cone that reads it is read apart all the same."""
    graph = analysis.graph()
    return graph is not None and graph.read_apart(_cell_refs(names, cells), steady=STEADY_IN_A_DAY)


def _utc_day() -> datetime.date:
    """The day in UTC, the time zone of a model IronCalc loads (``load_from_xlsx``'s default), of its TODAY()."""
    return datetime.datetime.now(datetime.timezone.utc).date()


def _cell_refs(names: list[str], cells: list[ModelCell]) -> list[CellRef]:
    return [CellRef(names[sheet], row, column) for sheet, row, column in cells]


def _read_value(model: Any, sheet: int, row: int, column: int) -> CellResult:
    import ironcalc

    kind = model.get_cell_type(sheet, row, column)
    value = model.get_cell_value(sheet, row, column)
    if kind == ironcalc.CellType.ErrorValue:
        if value == "#ERROR!":
            return abstention("ironcalc-parse-error")
        if value == "#N/IMPL!":
            return abstention("ironcalc-not-implemented")
        return ExcelError(str(value))
    if kind == ironcalc.CellType.LogicalValue:
        return bool(value)
    if isinstance(value, float):
        return number_value(value, model.get_cell_style(sheet, row, column).get("num_fmt"))
    if value == "" and model.is_empty_cell(sheet, row, column):
        return None
    return value


def _unknown_in_cone(graph: Callable[[], FormulaGraph | None], unknown: list[str], cell: CellRef) -> list[str]:
    """The unknown functions the cell's value may depend on (all of them when the file cannot be traced)."""
    traced = graph() if unknown else None
    if traced is None:
        return unknown
    return sorted(traced.calls_in_cone([cell], unknown))


def _in_cone(graph: FormulaGraph | None, skipped: dict[CellRef, str], cell: CellRef) -> list[str]:
    """The functions of the skipped cells the cell's value may depend on (all when the file cannot be traced)."""
    if graph is None:
        return sorted(set(skipped.values()))
    return sorted({skipped[place] for place in graph.cells_in_cone([cell]) if place in skipped})


def _computed_names_read(graph: FormulaGraph | None, cell: CellRef) -> str:
    """The names defined by a formula or a constant the cell's value may depend on ("" for
    none); when the file cannot be traced or the cone is open, it may read any of them."""
    cone = graph.cone([cell]) if graph is not None else None
    if cone is not None and cone.computed_names:
        return ", ".join(sorted(cone.computed_names))
    return "what it reads" if cone is None or cone.open else ""


def _lookups_of_empty_cells(model: Any, names: list[str],
                            originals: dict[tuple[int, int, int], str]) -> dict[CellRef, str]:
    """Formula cells calling VLOOKUP, HLOOKUP or XLOOKUP of an empty cell over a lookup range
    that holds an empty cell too, by function. IronCalc then matches that empty cell; Excel
    does not (SpreadsheetBench task 7902), and what it matches instead (LibreOffice: a ""
    result) regrade cannot say. A range regrade cannot place counts as holding one. Read from
    the file's formulas (``originals`` of the rewritten cells): a whole column cut at the
    last used row still holds the blank rows below it."""
    found: dict[CellRef, str] = {}
    for sheet, row, column in model.get_all_cells():
        formula = originals.get((sheet, row, column)) or model.get_cell_formula(sheet, row, column)
        if not formula or "LOOKUP(" not in formula.upper():
            continue
        for call in calls(formula):
            if call.name not in _LOOKUPS or len(call.args) < 2:
                continue
            value = plain_area(call.args[0], names[sheet], names)
            if value is None or (value.min_row, value.min_col) != (value.max_row, value.max_col) \
                    or not model.is_empty_cell(names.index(value.sheet), value.min_row, value.min_col):
                continue
            lookup = plain_area(call.args[1], names[sheet], names)
            if lookup is not None and call.name != "XLOOKUP":  # VLOOKUP looks in the first column, HLOOKUP the first row
                lookup = (replace(lookup, max_col=lookup.min_col) if call.name == "VLOOKUP"
                          else replace(lookup, max_row=lookup.min_row))
            if lookup is None or _holds_an_empty_cell(model, names.index(lookup.sheet), lookup):
                found[CellRef(names[sheet], row, column)] = call.name
    return found


def _holds_an_empty_cell(model: Any, index: int, area: Area) -> bool:
    _, last_row, _, last_column = model.get_sheet_dimensions(index)
    height, width = area.max_row - area.min_row + 1, area.max_col - area.min_col + 1
    if area.max_row > last_row or area.max_col > last_column or height * width > 100_000:
        return True  # past the used range every cell is empty; a huge range is not read
    return any(model.is_empty_cell(index, row, column)
               for row in range(area.min_row, area.max_row + 1) for column in range(area.min_col, area.max_col + 1))


def _workbook_unknown_functions(model: Any) -> list[str]:
    found: set[str] = set()
    for sheet, row, column in model.get_all_cells():
        formula = model.get_cell_formula(sheet, row, column)
        if formula:
            found.update(unknown_functions(formula))
    return sorted(found)
