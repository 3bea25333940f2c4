"""The value-only view: the values Excel (or the last writer) cached in the file.

This is what value-only graders read (openpyxl ``data_only=True``). It computes
nothing: a formula written by openpyxl has no cached value and reads as ``None``.
"""

from __future__ import annotations

import warnings
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Sequence

import openpyxl

from regrade.engines.base import EngineBase, EngineSettings
from regrade.values import EXCEL_ERROR_CODES, CellRef, ExcelError, WorkbookFailure, WorkbookValues, cells_by_sheet
from regrade.workbook.cones import Area
from regrade.workbook.screening import refusal
from regrade.workbook.sheets import formula_cells, resolve_sheet
from regrade.workbook.openpyxl_reading import read_box, read_book


class CachedEngine(EngineBase):
    name = "cached"
    full = False
    in_default_consensus = False

    def __init__(self, settings: EngineSettings = EngineSettings(), read_formulas: bool = True):
        super().__init__(settings)
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
        for name, refs in cells_by_sheet(cells).items():
            if (found := known.get(resolve_sheet(name, list(known)) or "")) and any(
                    (ref.row, ref.column) in found for ref in refs):
                return True
        return False

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        if (refused := refusal(path)) is not None:
            return refused
        try:
            with warnings.catch_warnings():  # openpyxl warns about every extension it drops
                warnings.simplefilter("ignore")
                names, values, formulas = read_cells(path, cells, formulas=self._formulas_wanted(path, cells))
        except MemoryError:
            raise  # a limit, not a broken file: the isolating worker reports it
        except Exception as exc:  # openpyxl raises many kinds on a broken file; all mean unreadable
            return WorkbookValues(failure=WorkbookFailure("unreadable-output", f"openpyxl cannot read it: {exc}"))
        result = WorkbookValues(sheet_names=names)
        found, number_formats = result.cells, result.number_formats
        for ref in cells:
            if (read := values.get(ref)) is None:
                continue
            value, number_formats[ref] = read
            if isinstance(value, str) and value in EXCEL_ERROR_CODES:
                value = ExcelError(value)
            found[ref] = value
        for ref in (cells if formulas else ()):
            formula = formulas.get(ref)
            if isinstance(formula, str) and formula.startswith("="):
                result.formulas[ref] = formula
            elif formula is not None and type(formula).__name__ in ("ArrayFormula", "DataTableFormula"):
                result.formulas[ref] = str(getattr(formula, "text", formula))
        return result


def read_cells(path: Path, cells: Sequence[CellRef], formulas: bool = False, book: openpyxl.Workbook | None = None
               ) -> tuple[list[str], dict[CellRef, tuple], dict[CellRef, object]]:
    """The sheet names; (cached value, number format) of each requested cell on a sheet the
    file has; and, with ``formulas``, the formula of each requested cell that holds one.

    The values are openpyxl's ``data_only=True`` streaming (read-only) reading, and the
    formulas its ``data_only=False`` one (``=`` text, or an ArrayFormula or DataTableFormula),
    both from one pass over each sheet: :func:`regrade.workbook.openpyxl_reading.read_box` runs openpyxl's own sheet
    parser, which also keeps what its formula reading would give. The pass goes through a
    sheet's rows only as far as the last requested row and makes cells only inside the
    requested box, as ``iter_rows`` does: on a large sheet several times faster than loading
    the whole workbook. A formula openpyxl cannot read fails the reading, as its own formula
    reading would, only after the values were read (whose failure comes first) and only
    with ``formulas``. ``book``: the file already opened so (``read_book(path, data_only=True,
    read_only=True)``), read again and left open."""
    opened = book is None
    if book is None:
        book = read_book(path, data_only=True, read_only=True)
    try:
        names = list(book.sheetnames)
        wanted: dict[str, dict[tuple[int, int], CellRef]] = {}  # by sheet: each position's cell (the last asked)
        for name, refs in cells_by_sheet(cells).items():
            if (sheet := resolve_sheet(name, names)) is not None:
                wanted.setdefault(sheet, {}).update(zip(map(_POSITION, refs), refs))
        values: dict[CellRef, tuple] = {}
        found_formulas: dict[CellRef, object] = {}
        for sheet, positions in wanted.items():
            seen, formula_of = read_box(book[sheet], positions, formulas)
            values.update(zip(positions.values(), map(seen.get, positions, repeat(EMPTY_CELL))))
            found_formulas.update((positions[key], formula) for key, formula in formula_of.items())
        return names, values, found_formulas
    finally:
        if opened:
            book.close()


EMPTY_CELL = (None, "General")  # (value, number format) of a cell the file does not hold
_POSITION = itemgetter(1, 2)  # a CellRef's (row, column)


class CachedAreas:
    """The cached values of a workbook's areas, for reading many: the file is loaded once and
    each sheet measured once (a load per area would read the whole sheet each time)."""

    def __init__(self, path: Path):
        self.path = path
        self._book: openpyxl.Workbook | None = None
        self._dimensions: dict[str, tuple[int, int]] = {}

    def read(self, area: Area) -> list[list[object]]:
        """Rows from ``area.min_row``, cut at the sheet's used range; error codes as :class:`ExcelError`."""
        if self._book is None:
            self._book = read_book(self.path, data_only=True)
        ws = self._book[area.sheet]
        if area.sheet not in self._dimensions:
            self._dimensions[area.sheet] = (ws.max_row, ws.max_column)
        last_row, last_column = self._dimensions[area.sheet]
        rows = ws.iter_rows(min_row=area.min_row, max_row=min(area.max_row, last_row), min_col=area.min_col,
                            max_col=min(area.max_col, last_column), values_only=True)
        return [[ExcelError(v) if isinstance(v, str) and v in EXCEL_ERROR_CODES else v for v in row] for row in rows]
