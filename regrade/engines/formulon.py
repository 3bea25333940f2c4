"""Formulon: an Excel 365 engine compiled to WebAssembly, through its Python package.

Formulon (Apache-2.0) loads the workbook, recalculates every formula (a stale cache is
replaced, a missing one computed) and reports each cell as a typed value. It is developed
against results captured from Excel 365 and written independently of IronCalc and
LibreOffice, so a departure those two share is not likely to be its own: it is the third
vote of the consensus (:mod:`regrade.grading.consensus`).

Where it cannot compute a cell, regrade abstains instead of reporting a wrong value (rules
of :mod:`regrade.engines.rules`):

- a function missing from Formulon's catalog, or listed there as unavailable (``PY``,
  ``WEBSERVICE``, ``CUBE*`` ...), comes back as ``#NAME?``: a target whose own formula calls
  one abstains whatever its value, and an erroring target abstains when its cone calls one
  (``formulon-lacks-function``);
- a formula saved plain (without array metadata, as openpyxl writes one, and as Excel writes
  a legacy formula) is evaluated the legacy way, as Excel does, but Formulon also meets by
  implicit intersection an array passed to a parameter that takes one there
  (``LOOKUP(2,1/(A1:A3="a"),B1:B3)``, ``INDEX(A1:C1<>0,)``, ``AGGREGATE(14,6,B1:B3/(A1:A3="a"),1)``,
  ``COUNTIFS(A1:A6,{"x","y*"})``, ``XMATCH({"c","a"},A1:A3)``): a cell whose cone holds one
  abstains (``formulon-legacy-array-argument``); and it gives ``#CALC!`` or ``#VALUE!`` for a
  dynamic-array function (FILTER, UNIQUE ...) in such a formula, where Excel shows the first
  value: an erroring cell whose cone holds one abstains (``formulon-plain-dynamic-array``);
- it gives ``#CALC!`` for SEQUENCE with an argument written as nothing (``SEQUENCE(,5)``, which
  Excel reads as ``SEQUENCE(1,5)``): an erroring cell whose cone calls one abstains
  (``formulon-sequence-argument-left-out``);
- it gives ``#VALUE!`` for OFFSET over offsets computed from ranges (``offset-computed-array``,
  shared with IronCalc); these rows of :data:`_DEPARTURES`, and the hazards it is not cleared of
  (TEXTJOIN with ignore_empty written as nothing, OFFSET over an array of offsets ...:
  :data:`regrade.engines.departures.HAZARDS`), are applied by :mod:`regrade.engines.departures`;
- a structured reference without its table's name (``[@Qty]``, ``#NAME?`` in Formulon) or to
  a table's totals row (``Stock[[#Totals],[Units]]``, 0 in Formulon) in the cone abstains
  (``formulon-structured-reference``), and so does ROW or COLUMN of any structured reference
  (``ROW(Sales[Qty])``, ``#VALUE!`` in Formulon; ``formulon-row-of-structured-reference``);
- SUBTOTAL where rows are hidden: Formulon skips rows hidden by hand in SUBTOTAL 1-11 and
  counts rows a table's filter hides, where Excel does the opposite; regrade computes a
  direct SUBTOTAL from Formulon's values of its ranges and abstains otherwise
  (:mod:`regrade.engines.totals`, ``totals-not-computed``);
- a value of a kind regrade cannot represent (``#UNKNOWN!``, a bare array or reference) is
  an ``engine-error``, not an Excel value.

Like every engine here, Formulon reads every row of a range written with rows to the sheet's
end (not of a whole column: :mod:`regrade.engines.range_rewrites`): the 134
``COUNTIF(H$7:H$1048576,-H7)`` of SpreadsheetBench task 68-47 take it 1.7 s, the same formulas
cut at the sheet's last used row 0.01 s. Before it computes, a formula saved plain
gets the cuts of :func:`regrade.engines.range_rewrites.plain_formula_cuts`, which keep Excel's
value (the criteria functions' ranges, an exact lookup's table, SUMPRODUCT's arrays; the blank
rows cut off counted back), written over Formulon's own text of the formula; the file's
formula is reported. An array formula is left whole, and where, computed, one spills past
the last row the cuts assumed (a dynamic array of Excel 365 grown since it was saved), the
workbook is computed again uncut.

The WebAssembly module is compiled once per process, outside any workbook's limit (4-5 s
on a 2-core machine): by :meth:`FormulonEngine.preload` in the process that forks the
workers (a rescore's own process, before its case workers), which every worker forked after
inherits, or else by each worker's :meth:`~FormulonEngine.start`. The module reserves 4 GiB
of address space for its linear memory up front (wasm32's whole range, plus a guard region)
without using it. A worker that compiles its own adds that reservation to its address-space
limit (:attr:`reserved_mb`); one that inherits it counts its limit on top of what it
inherited, the reservation included. The workbook's own memory is bounded by the 4 GiB a
wasm32 module can address.
"""

from __future__ import annotations

import functools
import re
from importlib.metadata import version
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Sequence

from openpyxl.worksheet.formula import ArrayFormula

from regrade.engines.departures import (
    CRITERIA, TEXT_FORMAT_REJECTED, Departure, abstain_on_departures, any_call, hazards_binding, offsets_of_a_computed_array,
)
from regrade.engines.pipeline import PythonPackageEngine
from regrade.engines.range_rewrites import last_row_readers, plain_formula_cuts
from regrade.engines.rules import abstention
from regrade.engines.totals import TotalsDefects, mend_totals
from regrade.engines.wasm_cache import cached_module_loading, cached_names
from regrade.values import CannotEvaluate, CellRef, CellResult, ExcelError, WorkbookFailure, WorkbookValues
from regrade.workbook.analysis import WorkbookAnalysis
from regrade.workbook.calls import QUOTED, Call, array_constant, array_expression, calls, structured_reference
from regrade.workbook.cones import Area, FormulaGraph
from regrade.workbook.openpyxl_reading import formula_cells_of
from regrade.workbook.sheets import formula_texts, mentions, resolve_sheet

# formulon.ErrorCode's ordinals, as Excel spells them
_ERRORS = ("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA", "#SPILL!",
           "#CALC!", "#FIELD!", "#BLOCKED!", "#CONNECT!", "#EXTERNAL!", "#BUSY!", "#PYTHON!")
_IMPLEMENTED = 0  # FunctionMetadata.availability of a function Formulon computes


class FormulonEngine(PythonPackageEngine):
    package = "formulon"
    name = "formulon"
    full = True
    reserved_mb: ClassVar[int] = 4096 + 160  # the wasm32 linear memory's reservation and guard region

    def start(self) -> None:
        self.preload()  # nothing to do in a worker forked after its parent preloaded

    def preload(self) -> None:
        import formulon
        from formulon import _c

        cached_module_loading(_c._locate_wasm())  # compiled once per machine (regrade.engines.wasm_cache)
        formulon.Workbook.create_default().close()  # instantiates the module, once a process
        _implemented()

    def compute(self, analysis: WorkbookAnalysis, cells: Sequence[CellRef]) -> WorkbookValues:
        import formulon

        data = analysis.path.read_bytes()
        try:
            book = formulon.Workbook.load(data)
        except MemoryError:
            raise
        except Exception as exc:  # FormulonError: a file it cannot parse
            return WorkbookValues(failure=WorkbookFailure("load-failed", f"Formulon cannot load it: {exc}"))
        try:
            cuts = cut_tall_ranges(analysis, book)
            failure = _recalculated(book)
            if failure is None and cuts is not None and cuts.spilled_past(book):
                book.close()
                book, cuts = formulon.Workbook.load(data), None  # loaded once already: it loads again
                failure = _recalculated(book)
            if failure is not None:
                return WorkbookValues(failure=failure)
            return self._read(analysis, book, cells, cuts.originals if cuts is not None else {})
        finally:
            book.close()

    def _read(self, analysis: WorkbookAnalysis, book: Any, cells: Sequence[CellRef],
              originals: dict[tuple[int, int, int], str]) -> WorkbookValues:
        names = [book.sheet_name(index) for index in range(book.sheet_count())]
        result = WorkbookValues(sheet_names=names)
        lacking = functools.cache(lambda: _workbook_lacking(book, len(names)))
        mentioned = mentions(analysis.path, (b"<tableParts", b"SUBTOTAL("))  # one quick look before any graph
        tables = b"<tableParts" in mentioned
        for ref in cells:
            sheet = resolve_sheet(ref.sheet, names)
            if sheet is None:
                continue
            index = names.index(sheet)
            formula = originals.get((index, ref.row - 1, ref.column - 1)) or book.get_formula(index, ref.row - 1,
                                                                                               ref.column - 1)
            value = _value(book.get_value(index, ref.row - 1, ref.column - 1))
            if formula:
                result.formulas[ref] = formula
                cell = CellRef(sheet, ref.row, ref.column)
                own = _lacked_calls(formula)
                if own:
                    value = abstention("formulon-lacks-function", f"Formulon lacks {', '.join(own)}")
                elif isinstance(value, ExcelError) and lacking() and (reached := _in_cone(analysis, lacking(), cell)):
                    value = abstention("formulon-lacks-function",
                                       f"{value.code} from a formula that calls {', '.join(reached)}, which Formulon lacks")
                elif tables and (found := _structured_departure(analysis.graph(), cell)):
                    value = abstention("formulon-structured-reference", found)
            result.cells[ref] = value
        if b"SUBTOTAL(" in mentioned and (graph := analysis.graph()) is not None and any(r.hidden or r.filtered
                                                                          for r in graph.hidden_rows.values()):
            mend_totals(graph, result, functools.partial(_read_area, book, names, graph), _DEFECTS)
        return abstain_on_departures(analysis, result, _DEPARTURES)


def _recalculated(book: Any) -> WorkbookFailure | None:
    try:
        book.recalc()
    except MemoryError:
        raise
    except Exception as exc:
        return WorkbookFailure("load-failed", f"Formulon cannot recalculate it: {exc}")
    return None


_CUT_NEEDLES = ("COUNTIF", "SUMIF", "AVERAGEIF", "MAXIFS", "MINIFS", "LOOKUP(", "MATCH(", "SUMPRODUCT(")
_TALL = re.compile(r"\d{5}")  # a row past 9,999: a whole column (B:Z) is quick in Formulon


@dataclass
class TallRangeCuts:
    """The formulas whose tall ranges were cut before Formulon computes: each one's own text (by 0-based sheet index,
    row and column), the last used row of each sheet the cuts assumed, and the array formulas'
    first cells, whose spills must stay above it."""

    originals: dict[tuple[int, int, int], str]
    last_rows: dict[int, int]
    anchors: list[tuple[int, int, int]]

    def spilled_past(self, book: Any) -> bool:
        """Whether, computed, an array formula holds a value below its sheet's assumed last row
        (there a cut range would miss it)."""
        for sheet, row, column in self.anchors:
            spill = book.spill_info(sheet, row, column)
            if spill.engaged and spill.anchor_row + spill.rows > self.last_rows.get(sheet, 0):
                return True
        return False


def cut_tall_ranges(analysis: WorkbookAnalysis, book: Any) -> TallRangeCuts | None:
    """Cut, in a loaded book, the ranges its plain formulas write with rows to the sheet's end
    (see the module's text); None when nothing is cut. The file's formula graph is read only
    when a formula of the file would be cut were its sheets one row long."""
    import formulon

    texts = formula_texts(analysis.path, _CUT_NEEDLES)
    if not any(_TALL.search(text) and plain_formula_cuts(f"={text}", lambda sheet: 1) != f"={text}" for text in texts):
        return None
    graph = analysis.graph()
    if graph is None:
        return None
    names = [book.sheet_name(index) for index in range(book.sheet_count())]
    last_rows = {sheet: graph.dimensions(sheet)[0] for sheet in graph.sheets}
    readers = last_row_readers({sheet.lower(): row for sheet, row in last_rows.items()})
    cuts = TallRangeCuts({}, {names.index(sheet): row for sheet, row in last_rows.items() if sheet in names}, [])
    for found in formula_cells_of(graph.book):
        if found.sheet not in names:
            continue
        place = (names.index(found.sheet), found.row - 1, found.column - 1)
        if isinstance(found.cell.value, ArrayFormula):
            cuts.anchors.append(place)
            continue
        last_row = readers(found.sheet)
        if last_row is None or not _TALL.search(found.text) or plain_formula_cuts(found.text, last_row) == found.text:
            continue
        own = book.get_formula(*place)  # Formulon's text of it, the one it parses back
        if not own or "@" in own:  # an implicit intersection it wrote: left alone
            continue
        if (cut := plain_formula_cuts(own, last_row)) != own:
            try:
                book.set_formula(*place, cut)
            except formulon.FormulonError:  # a cut it does not parse: the cell keeps its formula
                continue
            cuts.originals[place] = own
    return cuts if cuts.originals else None


# Formulon skips every hidden row in SUBTOTAL 1-11 (Excel: only those a filter hides) and
# counts the rows a table's filter hides; its probe (fixtures/rules/totals-not-computed.xlsx)
# and IronCalc's tables workbook (fixtures/oracles/ironcalc/calc_test_no_export/tables.xlsx) show both.
_DEFECTS = TotalsDefects(hidden=True, filtered=True, hidden_by_hand=True)


def _read_area(book: Any, names: list[str], graph: FormulaGraph, area: Area) -> list[list[object]]:
    """Formulon's values of an area, cut at the sheet's used range."""
    index = names.index(area.sheet)
    last_row, last_column = graph.dimensions(area.sheet)
    return [[_value(book.get_value(index, row - 1, column - 1)) for column in range(area.min_col, min(area.max_col, last_column) + 1)]
            for row in range(area.min_row, min(area.max_row, last_row) + 1)]


# Parameters that take an array in a formula saved plain (Excel's legacy evaluation does not
# intersect them): LOOKUP's vectors, INDEX's array and AGGREGATE 14-19's array, computed from
# ranges (Formulon computes an array constant there); XMATCH's and XLOOKUP's lookup value,
# computed or constant; and the criteria of the *IF(S) functions, which lift over an array
# constant. Formulon intersects them (fixtures/probes, fixtures/rules).
_COMPUTED_ARRAY_PARAMETERS = {"LOOKUP": (1, 2), "INDEX": (0,)}
_ANY_ARRAY_PARAMETERS = {"XMATCH": (0,), "XLOOKUP": (0,)}
_DYNAMIC_ARRAY_FUNCTIONS = ("FILTER", "SORT", "SORTBY", "UNIQUE", "SEQUENCE", "RANDARRAY", "TEXTSPLIT", "VSTACK",
                            "HSTACK", "TOCOL", "TOROW", "WRAPROWS", "WRAPCOLS", "TAKE", "DROP", "CHOOSEROWS",
                            "CHOOSECOLS", "EXPAND")


def _passes_an_array(indexes: tuple[int, ...], constants: bool) -> Callable[[Call], bool]:
    return lambda call: any(i < len(call.args) and (array_expression(call.args[i])
                                                    or (constants and array_constant(call.args[i]))) for i in indexes)


def _aggregate_array(call: Call) -> bool:
    return bool(call.args) and call.args[0].strip() in {str(n) for n in range(14, 20)} \
        and _passes_an_array((2,), constants=False)(call)


def _of_a_structured_reference(call: Call) -> bool:
    return bool(call.args) and structured_reference(call.args[0])


def _an_argument_left_out(call: Call) -> bool:
    return "" in call.args


def _criteria_array(indexes: tuple[int, ...]) -> Callable[[Call], bool]:
    return lambda call: any(i < len(call.args) and array_constant(call.args[i]) for i in indexes)


_DEPARTURES = (
    *(Departure(name, _passes_an_array(indexes, constants=False), "formulon-legacy-array-argument", plain_only=True)
      for name, indexes in _COMPUTED_ARRAY_PARAMETERS.items()),
    *(Departure(name, _passes_an_array(indexes, constants=True), "formulon-legacy-array-argument", plain_only=True)
      for name, indexes in _ANY_ARRAY_PARAMETERS.items()),
    Departure("AGGREGATE", _aggregate_array, "formulon-legacy-array-argument", plain_only=True),
    *(Departure(name, _criteria_array(indexes), "formulon-legacy-array-argument", plain_only=True)
      for name, indexes in CRITERIA.items()),
    *(Departure(name, any_call, "formulon-plain-dynamic-array", on_any_error=True, plain_only=True)
      for name in _DYNAMIC_ARRAY_FUNCTIONS),
    *(Departure(name, _of_a_structured_reference, "formulon-row-of-structured-reference") for name in ("ROW", "COLUMN")),
    Departure("OFFSET", offsets_of_a_computed_array, "offset-computed-array", only_on=ExcelError("#VALUE!")),
    Departure("SEQUENCE", _an_argument_left_out, "formulon-sequence-argument-left-out", on_any_error=True),
    TEXT_FORMAT_REJECTED,
    *hazards_binding("formulon"),
)


_EXTERNAL_BOOK = re.compile(r"\[\d+\]")  # [1]Data!A1: another workbook, not a table
_TOTALS = re.compile(r"\[#Totals\]", re.IGNORECASE)


def _unqualified(code: str) -> bool:
    """Whether a formula (text literals blanked) holds a structured reference without its
    table's name: a ``[`` outside brackets that follows no name (``[@Qty]``, not ``Sales[Qty]``)."""
    depth = 0
    for index, char in enumerate(code):
        if char == "[":
            if depth == 0 and (index == 0 or not (code[index - 1].isalnum() or code[index - 1] in "_.'")) \
                    and not _EXTERNAL_BOOK.match(code, index):
                return True
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
    return False


def _structured_departure(graph: FormulaGraph | None, cell: CellRef) -> str:
    """The structured reference of the cell's cone Formulon misreads ("" for none): one without
    its table's name (#NAME?), or a table's totals row (0)."""
    texts = graph.formulas_in_cone([cell]) if graph is not None else []
    for text in texts:
        code = QUOTED.sub('""', text)
        if _unqualified(code):
            return "a structured reference without its table's name ([@Column])"
        if _TOTALS.search(code):
            return "a structured reference to a table's totals row ([#Totals])"
    return ""


@functools.cache
def _implemented() -> frozenset[str]:
    """The functions Formulon computes (its catalog, less those it lists as unavailable): asked of
    the module once per machine and module (:func:`regrade.engines.wasm_cache.cached_names`)."""
    from formulon import _c

    asked = f"functions of availability {_IMPLEMENTED}, formulon {version('formulon')}"
    return frozenset(cached_names(_c._locate_wasm(), asked, _catalog_implemented))


def _catalog_implemented() -> list[str]:
    import formulon

    catalog = formulon.Workbook
    names = (catalog.function_name_at(index) for index in range(catalog.function_count()))
    return sorted(name.upper() for name in names
                  if (meta := catalog.function_metadata(name)) is not None and meta.availability == _IMPLEMENTED)


def _lacked_calls(formula: str) -> list[str]:
    """Formulon writes a call that Excel would meet by implicit intersection as ``@NAME(``."""
    return sorted({call.name.lstrip("@") for call in calls(formula)} - _implemented())


def _workbook_lacking(book: Any, sheets: int) -> list[str]:
    """The functions the workbook's formulas call that Formulon lacks."""
    lacking: set[str] = set()
    for sheet in range(sheets):
        for cell in book.iter_cells(sheet):
            if cell.formula:
                lacking.update(_lacked_calls(cell.formula))
    return sorted(lacking)


def _in_cone(analysis: WorkbookAnalysis, lacking: list[str], cell: CellRef) -> list[str]:
    graph = analysis.graph()
    return lacking if graph is None else sorted(graph.calls_in_cone([cell], lacking))


def _value(value: Any) -> CellResult:
    """regrade's value of a formulon.Value."""
    from formulon import ValueKind

    kind = value.kind
    if kind == ValueKind.BLANK:
        return None
    if kind == ValueKind.NUMBER:
        return value.number
    if kind == ValueKind.BOOL:
        return value.boolean
    if kind == ValueKind.TEXT:
        return value.text
    if kind == ValueKind.ERROR and 0 <= value.error_code < len(_ERRORS):
        return ExcelError(_ERRORS[value.error_code])
    return CannotEvaluate("engine-error", f"Formulon gave a {kind.name} value regrade cannot represent")
