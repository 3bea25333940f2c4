"""pycel (PyPI): compiles the requested cells' dependency cone into Python.

Left to itself pycel returns a formula's cached value; regrade evaluates the cone, then
forgets every formula's value and evaluates each cell again (:func:`_recalculate`), so
every value comes from computation (if new cells keep appearing, every formula cell
abstains rather than echo a cache). Functions pycel lacks raise ``UnknownFunction``:
that cell, and every cell that depends on it, abstains (``unsupported-function``), and
the others are still computed; so does ``#NAME?`` (with openpyxl 3.1, pycel cannot read
defined names). Errors come back as text (``"#N/A"``) and are read as Excel errors.
pycel lacks AGGREGATE, and its SUBTOTAL counts hidden and filtered rows and nested
subtotals: a graded ``=SUBTOTAL(n, ref, ...)`` or ``=AGGREGATE(f, option, ref, ...)`` is
computed by regrade from pycel's values of its references, and another cell that depends
on what pycel misses abstains (:mod:`regrade.engines.totals`).
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

from openpyxl.utils import get_column_letter

from regrade.engines.pipeline import PythonPackageEngine
from regrade.engines.rules import abstention
from regrade.engines.totals import TotalsDefects, is_direct_total, mend_totals
from regrade.values import EXCEL_ERROR_CODES, CannotEvaluate, CellRef, CellResult, ExcelError, WorkbookFailure, WorkbookValues
from regrade.workbook.analysis import WorkbookAnalysis
from regrade.workbook.cones import Area, FormulaGraph
from regrade.workbook.sheets import mentions, resolve_sheet


class PycelEngine(PythonPackageEngine):
    package = "pycel"
    name = "pycel"
    full = True
    # 59.5% of Excel's cells in SpreadsheetBench answers (measured at design time, docs/engines.md): opt-in with --engines
    in_default_consensus = False

    def compute(self, analysis: WorkbookAnalysis, cells: Sequence[CellRef]) -> WorkbookValues:
        from pycel import ExcelCompiler

        path = analysis.path
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compiler = ExcelCompiler(filename=str(path))
        except MemoryError:  # a limit, not a broken file: the isolating worker reports it
            raise
        except Exception as exc:
            return WorkbookValues(failure=WorkbookFailure("load-failed", f"pycel cannot load it: {exc}"))
        book = compiler.excel.workbook
        names = book.sheetnames
        result = WorkbookValues(sheet_names=list(names))
        addresses = {}
        for ref in cells:
            sheet = resolve_sheet(ref.sheet, names)
            if sheet is not None:
                addresses[ref] = _address(sheet, ref.coordinate)
                _attempt(compiler, addresses[ref])  # builds the cone (a formula cell now holds its cache)
        graph = FormulaGraph(book) if mentions(path, (b"SUBTOTAL(", b"AGGREGATE(")) else None
        if graph is not None:  # what a SUBTOTAL or AGGREGATE regrade may compute reads joins the cones
            for ref in addresses:
                cell = CellRef(resolve_sheet(ref.sheet, names) or ref.sheet, ref.row, ref.column)  # addresses: known sheets
                if is_direct_total(graph.formulas.get(cell, "")):
                    for area in graph.precedents(cell).areas:
                        _read_area(compiler, graph, area)
        recalculated = _recalculate(compiler)
        for ref, address in addresses.items():
            content = book[resolve_sheet(ref.sheet, names)].cell(ref.row, ref.column).value
            formula = content if isinstance(content, str) and content.startswith("=") else None
            if formula is not None:
                result.formulas[ref] = formula
            if formula is not None and not recalculated:
                result.cells[ref] = CannotEvaluate("engine-error", "pycel could not recalculate the workbook")
                continue
            result.cells[ref] = _attempt(compiler, address)
        if graph is not None and recalculated:
            mend_totals(graph, result, lambda area: _read_area(compiler, graph, area), _DEFECTS)
        return result


def _recalculate(compiler: Any, passes: int = 4) -> bool:
    """pycel's ``recalculate()``, except that a cell whose evaluation fails (a function pycel
    lacks) leaves the others be: it abstains when read. Each pass forgets every formula's
    value, so none is the file's cache, then evaluates each; cells the pass loaded (and
    holding their caches) need one more. False when new cells keep appearing."""
    from pycel.excelcompiler import _CellRange

    for _ in range(passes):
        known = len(compiler.cell_map)
        for cell in list(compiler.cell_map.values()):
            if isinstance(cell, _CellRange) or cell.formula:
                cell.value = None
        for cell in list(compiler.cell_map.values()):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    compiler.evaluate(cell.address.address)
            except MemoryError:  # a limit: the isolating worker reports it
                raise
            except Exception:  # read again later, this cell abstains
                pass
        if len(compiler.cell_map) == known:
            return True
    return False


def _address(sheet: str, block: str) -> str:
    return f"'{sheet.replace(chr(39), chr(39) * 2)}'!{block}"


def _read_area(compiler: Any, graph: FormulaGraph, area: Area) -> list[list[object]]:
    """pycel's values of an area, cut at the sheet's used range (``graph``: of pycel's own book), as rows."""
    last_row, last_column = graph.dimensions(area.sheet)
    max_row, max_col = min(area.max_row, last_row), min(area.max_col, last_column)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = compiler.evaluate(_address(area.sheet, f"{get_column_letter(area.min_col)}{area.min_row}:"
                                                            f"{get_column_letter(max_col)}{max_row}"))
    except MemoryError:  # a limit: the isolating worker reports it
        raise
    except Exception as exc:
        last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:200]
        return [[CannotEvaluate("engine-error", f"pycel: {last}")]]
    if not isinstance(values, tuple):
        values = ((values,),)
    elif values and not isinstance(values[0], tuple):  # pycel flattens one row or one column
        values = (values,) if area.min_row == max_row else tuple((v,) for v in values)
    return [[_as_result(v) for v in row] for row in values]


# pycel lacks AGGREGATE, and its SUBTOTAL counts hidden and filtered rows and nested subtotals
_DEFECTS = TotalsDefects(hidden=True, hidden_only_where_rows_are_hidden=True, filtered=True, nested=True,
                         computes_lacking=True)


def _attempt(compiler: Any, address: str) -> CellResult:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = compiler.evaluate(address)
    except MemoryError:  # a limit: the isolating worker reports it
        raise
    except Exception as exc:
        last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:200]
        if _lacks_a_function(exc):
            return abstention("pycel-lacks-function", f"pycel: {last}")
        return CannotEvaluate("engine-error", f"pycel: {last}")
    if value == "#NAME?":  # an unknown name or function (defined names fail with openpyxl 3.1)
        return abstention("pycel-name-error")
    if isinstance(value, tuple):  # a range: pycel gives rows of values; the cell is the first
        value = value[0][0] if value and value[0] else None
    return _as_result(value)


def _lacks_a_function(exc: BaseException) -> bool:
    """Whether pycel failed for a function it lacks, in this cell or in one it reads."""
    seen: BaseException | None = exc
    for _ in range(20):  # each cell between them adds a FormulaEvalError
        if seen is None:
            return False
        if type(seen).__name__ == "UnknownFunction":
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _as_result(value: Any) -> CellResult:
    """One value as pycel gives it: errors as text, numpy scalars, "" for empty."""
    if isinstance(value, str) and value in EXCEL_ERROR_CODES:
        return ExcelError(value)
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    return value if value != "" else None
