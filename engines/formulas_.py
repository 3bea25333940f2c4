"""formulas (PyPI): a pure-Python compiler of Excel workbooks.

Its own registry says which functions it implements, so a graded cell whose formula
calls another one abstains (``unsupported-function``), and so does an erroring cell
in a workbook that calls one anywhere. Any structured reference makes its loader
reject the whole workbook, so they are first resolved to ranges
(:mod:`engines.tables`) in a scratch copy; the original file is never written.
It compiles the whole workbook (no dependency cone yet): about 1 s per workbook even
when tiny, so it is not in the default consensus (``--engines ...,formulas`` adds it),
and the worker's time limit turns a very slow workbook into an abstention.
"""

from __future__ import annotations

import re
import tempfile
import warnings
from pathlib import Path
from typing import Any, Sequence

import openpyxl
from openpyxl.utils.cell import coordinate_to_tuple, get_column_letter

from engines.base import CannotEvaluate, CellRef, CellResult, ExcelError, WorkbookFailure, WorkbookValues
from engines.cones import abstain_on_external_links
from engines.screening import refusal
from engines.sheets import formula_text, load_formula_book, resolve_sheet
from engines.tables import structured_rewrites
from engines.tools import PythonPackageEngine

_CALL = re.compile(r"(?<![A-Za-z0-9_.])((?:_xl[a-z]+\.)*[A-Za-z][A-Za-z0-9_.]*)\(", re.IGNORECASE)
_STRING = re.compile(r'"(?:[^"]|"")*"')
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
    # about 1 s per workbook even when tiny (compiling the whole workbook): opt-in with --engines
    in_default_consensus = False

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        import formulas

        if (refused := refusal(path)) is not None:
            return refused
        try:
            book = load_formula_book(path)
        except MemoryError:  # a limit, not a broken file: the isolating worker reports it
            raise
        except Exception as exc:
            return WorkbookValues(failure=WorkbookFailure("load-failed", f"formulas cannot read it: {exc}"))
        with tempfile.TemporaryDirectory(prefix="regrade-formulas-") as scratch:
            source = _with_ranges(path, book, Path(scratch))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    solution = formulas.ExcelModel().loads(str(source)).finish().calculate()
            except MemoryError:  # a limit, not a broken file: the isolating worker reports it
                raise
            except Exception as exc:
                return WorkbookValues(failure=WorkbookFailure("load-failed", f"formulas cannot compute it: {type(exc).__name__}: {exc}"))
        computed = _by_cell(solution)
        known = set(formulas.get_functions())
        names = book.sheetnames
        result = WorkbookValues(sheet_names=list(names))
        workbook_unknown: list[str] | None = None
        for ref in cells:
            sheet = resolve_sheet(ref.sheet, names)
            if sheet is None:
                continue
            content = book[sheet].cell(ref.row, ref.column).value
            formula = formula_text(content)
            if formula is None:
                result.cells[ref] = computed.get((sheet.upper(), ref.coordinate), content)
                continue
            result.formulas[ref] = formula
            value = computed.get((sheet.upper(), ref.coordinate), CannotEvaluate("not-computed", "formulas gave no value"))
            own_unknown = unknown_to_formulas(formula, known)
            if own_unknown:
                value = CannotEvaluate("unsupported-function", f"formulas lacks {', '.join(own_unknown)}")
            elif isinstance(value, ExcelError):
                if workbook_unknown is None:
                    workbook_unknown = sorted({n for ws in book.worksheets for row in ws.iter_rows() for c in row
                                               if (text := formula_text(c.value))
                                               for n in unknown_to_formulas(text, known)})
                if workbook_unknown:
                    value = CannotEvaluate("unsupported-function",
                                           f"{value.code} while the workbook uses {', '.join(workbook_unknown)}, which formulas lacks")
            result.cells[ref] = value
        return abstain_on_external_links(path, result)


def _with_ranges(path: Path, book: openpyxl.Workbook, scratch: Path) -> Path:
    """The file itself, or a scratch copy whose structured references are ranges."""
    rewrites = structured_rewrites(path)
    if not rewrites:
        return path
    for (sheet, row, column), formula in rewrites.items():
        book[sheet].cell(row, column).value = formula
    copy = scratch / path.name
    book.save(copy)
    return copy


def _by_cell(solution: Any) -> dict[tuple[str, str], CellResult]:
    """formulas' solution as (SHEET, A1) -> value. A range key (an array formula's result)
    fills each of its cells unless the cell has a key of its own."""
    single, spread = {}, {}
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
