"""pycel (PyPI): compiles the requested cells' dependency cone into Python.

Left to itself pycel returns a formula's cached value; regrade evaluates the cone,
forces ``recalculate()`` and evaluates again, so every value comes from computation
(if recalculation fails, every formula cell abstains rather than echo a cache).
Functions pycel lacks raise ``UnknownFunction``: that cell, and every cell that
depends on it, abstains (``unsupported-function``); so does ``#NAME?`` (with openpyxl
3.1, pycel cannot read defined names). Errors come back as text
(``"#N/A"``) and are read as Excel errors. pycel's SUBTOTAL counts hidden rows and
nested subtotals: a cell whose cone calls SUBTOTAL 101-111 in a workbook with hidden
rows, or a SUBTOTAL that reads another SUBTOTAL or AGGREGATE, abstains
(:mod:`engines.subtotals`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Sequence

from engines.base import (
    EXCEL_ERROR_CODES, CannotEvaluate, CellRef, CellResult, ExcelError, WorkbookFailure, WorkbookValues,
)
from engines.cones import FormulaGraph, abstain_on_external_links
from engines.screening import refusal
from engines.sheets import resolve_sheet
from engines.subtotals import counts_nested_subtotals, skips_hidden_rows
from engines.tools import PythonPackageEngine


class PycelEngine(PythonPackageEngine):
    package = "pycel"
    name = "pycel"
    full = True
    # 59.5% of Excel's cells in SpreadsheetBench answers (DESIGN §3): opt-in with --engines
    in_default_consensus = False

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        from pycel import ExcelCompiler

        if (refused := refusal(path)) is not None:
            return refused
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
                addresses[ref] = f"'{sheet.replace(chr(39), chr(39) * 2)}'!{ref.coordinate}"
                _attempt(compiler, addresses[ref])  # builds the cone (a formula cell now holds its cache)
        try:
            compiler.recalculate()
            recalculated = True
        except Exception:
            recalculated = False
        for ref, address in addresses.items():
            content = book[resolve_sheet(ref.sheet, names)].cell(ref.row, ref.column).value
            formula = content if isinstance(content, str) and content.startswith("=") else None
            if formula is not None:
                result.formulas[ref] = formula
            if formula is not None and not recalculated:
                result.cells[ref] = CannotEvaluate("engine-error", "pycel could not recalculate the workbook")
                continue
            result.cells[ref] = _attempt(compiler, address)
        _abstain_on_subtotal_subtleties(book, result)
        return abstain_on_external_links(path, result)


def _abstain_on_subtotal_subtleties(book: Any, result: WorkbookValues) -> None:
    graph = FormulaGraph(book)
    if not any("SUBTOTAL(" in text.upper() for text in graph.formulas.values()):
        return
    hidden = any(dimension.hidden for ws in book.worksheets for dimension in ws.row_dimensions.values())
    for ref in result.formulas:
        cell = (resolve_sheet(ref.sheet, graph.sheets), ref.row, ref.column)
        if hidden and skips_hidden_rows(graph, cell):
            result.cells[ref] = CannotEvaluate("unsupported-function", "pycel's SUBTOTAL 101-111 counts hidden rows")
        elif counts_nested_subtotals(graph, cell):
            result.cells[ref] = CannotEvaluate("unsupported-function", "pycel's SUBTOTAL counts nested SUBTOTAL and AGGREGATE")


def _attempt(compiler: Any, address: str) -> CellResult:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = compiler.evaluate(address)
    except Exception as exc:
        last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:200]
        reason = "unsupported-function" if type(exc).__name__ == "UnknownFunction" else "engine-error"
        return CannotEvaluate(reason, f"pycel: {last}")
    if value == "#NAME?":  # an unknown name or function (defined names fail with openpyxl 3.1)
        return CannotEvaluate("unsupported-function", "pycel gives #NAME? (an unknown function or name)")
    if isinstance(value, str) and value in EXCEL_ERROR_CODES:
        return ExcelError(value)
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, tuple):  # a range: pycel gives rows of values; the cell is the first
        value = value[0][0] if value and value[0] else None
    return value if value != "" else None
