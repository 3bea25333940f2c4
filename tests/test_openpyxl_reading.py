"""regrade's one module of openpyxl internals (regrade.workbook.openpyxl_reading) held against
openpyxl's public reading, ``openpyxl.load_workbook``, on files Excel saved: IronCalc's own
function tests (fixtures/oracles/ironcalc, made in Excel) and, when present, the answers of
the shared SpreadsheetBench split. Every cell of every sheet: the same value, number format
and formula, so a change of openpyxl's internals fails here, not in a verdict."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.reader.strings import read_string_table as openpyxl_string_table

from regrade.workbook.openpyxl_reading import (
    MAX_NAMED_STYLES, formula_cells_of, load_formula_book, read_book, read_box, read_string_table,
)
from tests.conftest import SHARED, SHARED_ABSENT

ROOT = Path(__file__).resolve().parents[1]
EXCEL_SAVED = sorted((ROOT / "fixtures" / "oracles" / "ironcalc" / "calc_tests").rglob("*.xlsx"))[::12]
MAX_CELLS = 200_000  # a shared answer larger than this is left to the slow tiers that read it anyway


def public_reading(path: Path, data_only: bool) -> dict[str, dict[tuple[int, int], tuple[object, str]]]:
    """Every cell holding something: (value, number format); without ``data_only``, formula
    cells only, as (formula text, number format): openpyxl marks them with data type "f"."""
    book = openpyxl.load_workbook(path, data_only=data_only)
    return {ws.title: {(c.row, c.column): (c.value, c.number_format) if data_only
                       else (str(getattr(c.value, "text", c.value)), c.number_format)
                       for row in ws.iter_rows() for c in row
                       if c.value is not None and (data_only or c.data_type == "f")} for ws in book.worksheets}


def same_as_openpyxl(path: Path) -> None:
    with zipfile.ZipFile(path) as archive:
        if "xl/sharedStrings.xml" in archive.namelist():
            with archive.open("xl/sharedStrings.xml") as mine, archive.open("xl/sharedStrings.xml") as theirs:
                assert read_string_table(mine) == openpyxl_string_table(theirs)
    values, formulas = public_reading(path, True), public_reading(path, False)
    lean = read_book(path, data_only=True)
    assert {ws.title: {(c.row, c.column): (c.value, c.number_format) for row in ws.iter_rows() for c in row
                       if c.value is not None} for ws in lean.worksheets} == values
    found = {(f.sheet, f.row, f.column): f.text.removeprefix("=") for f in formula_cells_of(load_formula_book(path))}
    assert found == {(sheet, row, column): text.removeprefix("=") for sheet, cells in formulas.items()
                     for (row, column), (text, _) in cells.items()}
    streamed = read_book(path, data_only=True, read_only=True)
    for sheet, cells in values.items():
        positions = set(cells) | set(formulas[sheet])
        if not positions:
            continue
        seen, formula_of = read_box(streamed[sheet], positions, formulas=True)
        assert {key: value for key, value in seen.items() if value[0] is not None} == cells
        assert {key: str(getattr(f, "text", f)) for key, f in formula_of.items()} == {
            key: text for key, (text, _) in formulas[sheet].items()}


@pytest.mark.parametrize("path", EXCEL_SAVED, ids=lambda p: p.stem)
def test_the_lean_readings_equal_openpyxls_public_one_on_excel_saved_files(path):
    same_as_openpyxl(path)


@pytest.mark.slow
def test_the_lean_readings_equal_openpyxls_public_one_on_the_shared_answers():
    if not SHARED.exists():
        pytest.skip(SHARED_ABSENT)
    answers = sorted((SHARED / "spreadsheet").glob("*/*_answer.xlsx"))[::15]
    checked = 0
    for path in answers:
        book = openpyxl.load_workbook(path, read_only=True)  # a cheap measure first
        size = sum((ws.max_row or 0) * (ws.max_column or 0) for ws in book.worksheets)
        book.close()
        if size > MAX_CELLS or path.read_bytes().count(b"<cellStyle ") > MAX_NAMED_STYLES:
            continue  # the bloated stylesheet is read differently on purpose (test_sheets)
        same_as_openpyxl(path)
        checked += 1
    assert checked >= 30
