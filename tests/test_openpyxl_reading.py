"""regrade's one module of openpyxl internals (regrade.workbook.openpyxl_reading) held against
openpyxl's public reading, ``openpyxl.load_workbook``, on files Excel saved: IronCalc's own
function tests (fixtures/oracles/ironcalc, made in Excel) and, when present, the answers of
the shared SpreadsheetBench split. Every cell of every sheet: the same value, number format
and formula, so a change of openpyxl's internals fails here, not in a verdict; and what is
parsed once per process (stylesheets, their bound named styles, external links) is the same
for a second book of the same content as for the first."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.reader.strings import read_string_table as openpyxl_string_table
from openpyxl.xml.functions import tostring

from regrade.workbook.openpyxl_reading import (
    MAX_NAMED_STYLES, formula_cells_of, lean_stylesheet, load_formula_book, read_book, read_box, read_string_table,
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


def style_lists(book: openpyxl.Workbook) -> list[list[bytes]]:
    """The book's fonts, borders, fills and number formats once its named styles are bound."""
    return [[tostring(item.to_tree()) for item in items] for items in (book._fonts, book._borders, book._fills)] + [
        list(book._number_formats)]


def same_as_openpyxl(path: Path) -> None:
    with zipfile.ZipFile(path) as archive:
        stylesheet = archive.read("xl/styles.xml") if "xl/styles.xml" in archive.namelist() else b""
        cut = lean_stylesheet(stylesheet) is not stylesheet
        if "xl/sharedStrings.xml" in archive.namelist():
            with archive.open("xl/sharedStrings.xml") as mine, archive.open("xl/sharedStrings.xml") as theirs:
                assert read_string_table(mine) == openpyxl_string_table(theirs)
    values, formulas = public_reading(path, True), public_reading(path, False)
    styles = style_lists(openpyxl.load_workbook(path, data_only=True))
    for _ in range(2):  # the second book gets the styles bound for the first (apply_parsed_stylesheet)
        lean = read_book(path, data_only=True)
        assert {ws.title: {(c.row, c.column): (c.value, c.number_format) for row in ws.iter_rows() for c in row
                           if c.value is not None} for ws in lean.worksheets} == values
        assert style_lists(lean) == styles or cut  # a cut stylesheet binds only Normal, on purpose
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
    answers = sorted((SHARED / "spreadsheet").glob("*/*_answer.xlsx"))[::30]
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


EXCEL_SAVED_LINKS = [ROOT / "fixtures" / "oracles" / name for name in (
    "ironcalc/link_test.xlsx", "ironcalc/calc_tests/INFORMATION/SHEET_SHEETS.xlsx", "poi/63934.xlsx", "poi/56502.xlsx")]


def linked(book: openpyxl.Workbook) -> list[tuple[bytes, str]]:
    return [(tostring(link.to_tree()), link.file_link.Target) for link in book._external_links]


@pytest.mark.parametrize("path", EXCEL_SAVED_LINKS, ids=lambda p: p.stem)
def test_external_links_are_openpyxls_and_parsed_once_per_content(path):
    expected = linked(openpyxl.load_workbook(path))
    assert expected, "the file links another workbook"
    first, again = read_book(path, data_only=True), read_book(path, data_only=True, read_only=True)
    assert linked(first) == linked(again) == expected
    assert all(a is b for a, b in zip(first._external_links, again._external_links))  # the second read parsed nothing
    assert linked(load_formula_book(path)) == expected


def test_a_broken_external_link_fails_the_reading_as_it_fails_openpyxl_each_time(tmp_path):
    source, broken = EXCEL_SAVED_LINKS[0], tmp_path / "broken.xlsx"
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(broken, "w") as copy:
        for info in original.infolist():
            data = original.read(info)
            copy.writestr(info, b"<externalLink" if info.filename.startswith("xl/externalLinks/ext") else data)
    with pytest.raises(Exception) as public:
        openpyxl.load_workbook(broken)
    for _ in range(2):
        with pytest.raises(type(public.value)):
            read_book(broken, data_only=True)
