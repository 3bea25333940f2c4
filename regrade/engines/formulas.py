"""formulas (PyPI): a pure-Python compiler of Excel workbooks.

Its own registry says which functions it implements, so a graded cell whose formula
calls another one abstains (``unsupported-function``), and so does an erroring cell
in a workbook that calls one anywhere; a graded ``=SUBTOTAL(n, ref, ...)`` or
``=AGGREGATE(f, option, ref, ...)``, which it lacks, is computed by regrade from formulas'
values of the references (:mod:`regrade.engines.totals`). Any structured reference makes its loader
reject the whole workbook, so they are first resolved to ranges
(:mod:`regrade.workbook.structured`) in a scratch copy; the original file is never written. In the
same copy, criteria ranges to the sheet's end, where formulas counts nothing, are cut at
the last used row (:mod:`regrade.engines.range_rewrites`). Only the requested cells'
dependency cone is compiled and computed (formulas' ``from_ranges``), not the whole
workbook (``bench/formulas_cone.py`` measures the difference). It stays out of the
default consensus (``--engines ...,formulas`` adds it), and the worker's time limit
turns a very slow workbook into an abstention.
"""

from __future__ import annotations

import datetime as dt
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any, Sequence

import openpyxl
from openpyxl.worksheet.formula import ArrayFormula
from openpyxl.utils.cell import coordinate_to_tuple, get_column_letter

from regrade.engines.base import EngineSettings
from regrade.engines.range_rewrites import last_row_readers, rewrite_range_arguments
from regrade.engines.pipeline import PythonPackageEngine
from regrade.engines.rules import abstention
from regrade.engines.totals import TotalsDefects, mend_totals
from regrade.values import CannotEvaluate, CellRef, CellResult, ExcelError, WorkbookFailure, WorkbookValues
from regrade.workbook.analysis import WorkbookAnalysis
from regrade.workbook.cones import Area, FormulaGraph
from regrade.workbook.formula import call_pattern
from regrade.workbook.openpyxl_reading import formula_cells_of, load_formula_book
from regrade.workbook.sheets import formula_text, resolve_sheet
from regrade.workbook.structured import structured_rewrites

_CALL = re.compile(r"(?<![A-Za-z0-9_.])((?:_xl[a-z]+\.)*[A-Za-z][A-Za-z0-9_.]*)\(", re.IGNORECASE)
_STRING = re.compile(r'"(?:[^"]|"")*"')
_SCRATCH_NAME = "book.xlsx"  # the workbook's name inside the scratch folder, free of characters formulas reads
_TOTALS = call_pattern("SUBTOTAL", "AGGREGATE")
_KEY = re.compile(r"^'?\[[^\]]+\](?P<sheet>.+?)'?!(?P<cell>[A-Z]+[0-9]+)(?::(?P<end>[A-Z]+[0-9]+))?$")


def unknown_to_formulas(formula: str, known: set[str]) -> list[str]:
    code = _STRING.sub('""', formula)
    names = {m.group(1).upper() for m in _CALL.finditer(code)}
    missing = {n for n in names if n not in known and n.split(".")[-1] not in known}
    return sorted(n.split(".")[-1] for n in missing)


class FormulasEngine(PythonPackageEngine):
    package = "formulas"
    name = "formulas"
    full = True
    # less faithful than IronCalc and LibreOffice (the probe pack, docs/conformance.md): opt-in with --engines
    in_default_consensus = False

    def __init__(self, settings: EngineSettings = EngineSettings(), whole_workbook: bool = False) -> None:
        super().__init__(settings)
        self.whole_workbook = whole_workbook  # formulas' own way, every cell: the baseline of bench/formulas_cone.py

    def compute(self, analysis: WorkbookAnalysis, cells: Sequence[CellRef]) -> WorkbookValues:
        import formulas

        path = analysis.path
        try:
            book = load_formula_book(path, pivot_tables=True)  # saved again when rewritten
        except MemoryError:  # a limit, not a broken file: the isolating worker reports it
            raise
        except Exception as exc:
            return WorkbookValues(failure=WorkbookFailure("load-failed", f"formulas cannot read it: {exc}"))
        names = book.sheetnames
        wanted = {ref: sheet for ref in cells if (sheet := resolve_sheet(ref.sheet, names)) is not None}
        contents = {ref: book[sheet].cell(ref.row, ref.column).value for ref, sheet in wanted.items()}
        formulas_in_file = {ref: formula_text(content) for ref, content in contents.items()}  # before any rewrite
        with tempfile.TemporaryDirectory(prefix="regrade-formulas-") as scratch:
            _prepare(path, book, Path(scratch))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    solution = _solve(formulas.ExcelModel(), scratch, wanted, self.whole_workbook)
            except MemoryError:  # a limit, not a broken file: the isolating worker reports it
                raise
            except Exception as exc:
                return WorkbookValues(failure=WorkbookFailure("load-failed", f"formulas cannot compute it: {type(exc).__name__}: {exc}"))
        computed = _by_cell(solution)
        known = set(formulas.get_functions())
        result = WorkbookValues(sheet_names=list(names))
        workbook_unknown: list[str] | None = None
        for ref, sheet in wanted.items():
            formula = formulas_in_file[ref]
            if formula is None:
                result.cells[ref] = computed.get((sheet.upper(), ref.coordinate), _stored(contents[ref]))
                continue
            result.formulas[ref] = formula
            value = computed.get((sheet.upper(), ref.coordinate), CannotEvaluate("not-computed", "formulas gave no value"))
            own_unknown = unknown_to_formulas(formula, known)
            if own_unknown:
                value = abstention("formulas-lacks-function", f"formulas lacks {', '.join(own_unknown)}")
            elif isinstance(value, ExcelError):
                if workbook_unknown is None:
                    workbook_unknown = sorted({n for found in formula_cells_of(book)
                                               for n in unknown_to_formulas(found.text, known)})
                if workbook_unknown:
                    value = abstention("formulas-error-from-missing-function",
                                       f"{value.code} while the workbook uses {', '.join(workbook_unknown)}, which formulas lacks")
            result.cells[ref] = value
        _compute_totals(book, computed, result)
        return result


# formulas lacks SUBTOTAL and AGGREGATE: a graded cell that is one such call over references
# is computed from formulas' values of them.
_DEFECTS = TotalsDefects(computes_lacking=True)


def _compute_totals(book: openpyxl.Workbook, computed: dict[tuple[str, str], CellResult], result: WorkbookValues) -> None:
    """The totals formulas lacks (:func:`regrade.engines.totals.mend_totals`)."""
    if not any(isinstance(value, CannotEvaluate) and _TOTALS.search(result.formulas.get(ref, ""))
               for ref, value in result.cells.items()):
        return

    graph = FormulaGraph(book)

    def read(area: Area) -> list[list[object]]:
        sheet, (last_row, last_column) = book[area.sheet], graph.dimensions(area.sheet)
        return [[_value_of(sheet, computed, row, column) for column in range(area.min_col, min(area.max_col, last_column) + 1)]
                for row in range(area.min_row, min(area.max_row, last_row) + 1)]

    mend_totals(graph, result, read, _DEFECTS)


def _stored(content: object) -> CellResult:
    """A constant as openpyxl read it, as a cell value (rich text as its text)."""
    if content is None or isinstance(content, (str, int, float, bool, dt.datetime, dt.date, dt.time, dt.timedelta)):
        return content
    return str(content)


def _value_of(sheet: Any, computed: dict[tuple[str, str], CellResult], row: int, column: int) -> CellResult:
    """formulas' value of a cell: what it computed, or the constant the file holds."""
    coordinate = f"{get_column_letter(column)}{row}"
    if (sheet.title.upper(), coordinate) in computed:
        return computed[(sheet.title.upper(), coordinate)]
    content = sheet.cell(row, column).value
    if formula_text(content) is not None:
        return CannotEvaluate("not-computed", "formulas gave no value")
    return content


def _prepare(path: Path, book: openpyxl.Workbook, scratch: Path) -> None:
    """``scratch/book.xlsx``: a link to the file, or a copy with what formulas misreads rewritten:
    structured references as ranges, criteria ranges to the sheet's end cut at its last used row."""
    rewrites = structured_rewrites(path)
    for (sheet, row, column), formula in rewrites.items():
        book[sheet].cell(row, column).value = formula
    if _cut_criteria_ranges(book) or rewrites:
        book.save(scratch / _SCRATCH_NAME)
    else:
        (scratch / _SCRATCH_NAME).symlink_to(path.resolve())


def _cut_criteria_ranges(book: openpyxl.Workbook) -> bool:
    """``COUNTIF(A$1:A$1048576, 5)`` is 0 in formulas: such ranges are cut (engines/range_rewrites.py)."""
    readers = last_row_readers({ws.title.lower(): ws.max_row for ws in book.worksheets})
    last_rows = {ws.title: readers(ws.title) for ws in book.worksheets}
    if None in last_rows.values():  # no range can be cut in this workbook
        return False
    changed = False
    for found in formula_cells_of(book):
        rewritten = rewrite_range_arguments(found.text, last_rows[found.sheet])
        if rewritten == found.text:
            continue
        if isinstance(found.cell.value, ArrayFormula):
            found.cell.value.text = rewritten
        else:
            found.cell.value = rewritten
        changed = True
    return changed


def _solve(model: Any, scratch: str, wanted: dict[CellRef, str], whole_workbook: bool) -> Any:
    """formulas' solution for the cone of the wanted cells (or for every cell)."""
    if whole_workbook:
        return model.loads(str(Path(scratch) / _SCRATCH_NAME)).finish().calculate()
    model.basedir = scratch
    ranges = [_cell_range(sheet, ref.coordinate) for ref, sheet in wanted.items()]
    return model.from_ranges(*ranges).finish().calculate() if ranges else {}


def _cell_range(sheet: str, coordinate: str) -> str:
    """formulas' name of a cell of the scratch book: ``'[book.xlsx]My ''s sheet'!A1``."""
    return f"'[{_SCRATCH_NAME}]{sheet.replace(chr(39), chr(39) * 2)}'!{coordinate}"


def _by_cell(solution: Any) -> dict[tuple[str, str], CellResult]:
    """formulas' solution as (SHEET, A1) -> value. A range key (an array formula's result)
    fills each of its cells unless the cell has a key of its own."""
    single: dict[tuple[str, str], CellResult] = {}
    spread: dict[tuple[str, str], CellResult] = {}
    for key, ranges in solution.items():
        match = _KEY.match(str(key))
        if match is None:
            continue
        sheet = match.group("sheet").upper()
        try:
            rows = ranges.value
            top_left = coordinate_to_tuple(match.group("cell"))
            for dr, row in enumerate(rows):
                for dc, raw in enumerate(row):
                    target = spread if match.group("end") else single
                    target[(sheet, f"{get_column_letter(top_left[1] + dc)}{top_left[0] + dr}")] = _plain(raw)
        except (AttributeError, TypeError):
            continue
    return {**spread, **single}


def _plain(raw: Any) -> CellResult:
    from formulas.tokens.operand import XlError

    if isinstance(raw, XlError):
        return ExcelError(str(raw))
    if type(raw).__name__ == "bool_" or isinstance(raw, bool):
        return bool(raw)
    if hasattr(raw, "item") and not isinstance(raw, str):
        raw = raw.item()
    if isinstance(raw, str):
        return raw
    if isinstance(raw, (int, float)):
        return raw
    return None  # formulas' EMPTY marker and anything else without a value
