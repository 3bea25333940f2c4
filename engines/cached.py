"""The value-only view: the values Excel (or the last writer) cached in the file.

This is what value-only graders read (openpyxl ``data_only=True``). It computes
nothing: a formula written by openpyxl has no cached value and reads as ``None``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Sequence

import openpyxl

from engines.base import EXCEL_ERROR_CODES, CellRef, ExcelError, WorkbookFailure, WorkbookValues
from engines.screening import refusal
from engines.sheets import formula_cells, resolve_sheet


class CachedEngine:
    name = "cached"
    full = False

    def __init__(self, read_formulas: bool = True):
        self.read_formulas = read_formulas  # formulas explain disagreements; grading alone needs none

    def version(self) -> str:
        return f"openpyxl {openpyxl.__version__}"

    def unavailable_reason(self) -> str | None:
        return None

    def _formulas_wanted(self, path: Path, cells: Sequence[CellRef]) -> bool:
        """Whether to read the formulas too: asked for, and some requested cell holds one (a
        quick scan of the sheet XML says so; when it cannot tell, openpyxl reads them)."""
        if not self.read_formulas:
            return False
        known = formula_cells(path)
        if known is None:
            return True
        return any((ref.row, ref.column) in known.get(resolve_sheet(ref.sheet, list(known)) or "", ()) for ref in cells)

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        if (refused := refusal(path)) is not None:
            return refused
        try:
            with warnings.catch_warnings():  # openpyxl warns about every extension it drops
                warnings.simplefilter("ignore")
                values_book = openpyxl.load_workbook(path, data_only=True)
                formula_book = openpyxl.load_workbook(path, data_only=False) if self._formulas_wanted(path, cells) else None
        except MemoryError:
            raise  # a limit, not a broken file: the isolating worker reports it
        except Exception as exc:  # openpyxl raises many kinds on a broken file; all mean unreadable
            return WorkbookValues(failure=WorkbookFailure("unreadable-output", f"openpyxl cannot read it: {exc}"))
        names = values_book.sheetnames
        result = WorkbookValues(sheet_names=list(names))
        for ref in cells:
            sheet = resolve_sheet(ref.sheet, names)
            if sheet is None:
                continue
            cell = values_book[sheet].cell(ref.row, ref.column)
            value = cell.value
            result.number_formats[ref] = cell.number_format
            if isinstance(value, str) and value in EXCEL_ERROR_CODES:
                value = ExcelError(value)
            result.cells[ref] = value
            if formula_book is None:
                continue
            formula = formula_book[sheet].cell(ref.row, ref.column).value
            if isinstance(formula, str) and formula.startswith("="):
                result.formulas[ref] = formula
            elif formula is not None and type(formula).__name__ in ("ArrayFormula", "DataTableFormula"):
                result.formulas[ref] = str(getattr(formula, "text", formula))
        return result
