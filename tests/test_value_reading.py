"""The value-only reading reads cached values and formulas in one pass, as openpyxl's two
readings (``data_only=True`` and ``data_only=False``) give them: openpyxl itself is the
reference every expected value below is taken from."""

import datetime as dt
import re
import zipfile

import openpyxl
import pytest

from regrade.engines.cached import CachedEngine, read_cells
from regrade.values import CellRef, ExcelError

# Cells as Excel writes them: a shared formula (master B2, child B3 translated to A3*2), an
# array formula, a formula with a cached error, a date, a text constant beginning with "=",
# a row whose number does not move forward (row 3 again: iter_rows skips it), and the same
# cell twice in one row (the last one counts).
SHEET_DATA = (
    '<sheetData>'
    '<row r="2"><c r="A2"><v>4</v></c><c r="B2"><f t="shared" ref="B2:B3" si="0">A2*2</f><v>8</v></c>'
    '<c r="C2" t="e"><f>1/0</f><v>#DIV/0!</v></c><c r="D2" s="1"><v>45000</v></c></row>'
    '<row r="3"><c r="A3"><v>5</v></c><c r="B3"><f t="shared" si="0"/><v>10</v></c>'
    '<c r="C3"><f t="array" ref="C3">SUM(A2:A3*2)</f><v>18</v></c>'
    '<c r="D3" t="inlineStr"><is><t>=not a formula</t></is></c>'
    '<c r="E3"><v>1</v></c><c r="E3"><f>A3+1</f><v>6</v></c></row>'
    '<row r="3"><c r="A3"><v>99</v></c></row>'
    '</sheetData>'
)


@pytest.fixture
def excel_cells(tmp_path):
    path = tmp_path / "cells.xlsx"
    book = openpyxl.Workbook()
    book.active["D2"] = dt.date(2023, 3, 15)  # a date style for s="1"
    book.active["D2"].number_format = "yyyy-mm-dd"
    book.save(path)
    with zipfile.ZipFile(path) as original:
        items = [(info, original.read(info.filename)) for info in original.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as copy:
        for info, data in items:
            if info.filename == "xl/worksheets/sheet1.xml":
                data = re.sub(rb"<sheetData>.*</sheetData>", SHEET_DATA.encode(), data, flags=re.S)
            copy.writestr(info, data)
    return path


def openpyxl_reading(path, data_only: bool, box: str) -> dict[tuple[int, int], tuple]:
    book = openpyxl.load_workbook(path, data_only=data_only, read_only=True)
    found = {}
    for row in book["Sheet"][box]:
        for cell in row:
            if getattr(cell, "row", None) is not None:
                found[(cell.row, cell.column)] = (cell.value, cell.number_format)
    book.close()
    return found


def test_one_pass_gives_openpyxls_values_and_its_formulas(excel_cells):
    cells = [CellRef("Sheet", row, column) for row in (2, 3) for column in range(1, 6)]
    names, values, formulas = read_cells(excel_cells, cells, formulas=True)
    assert names == ["Sheet"]
    cached, written = openpyxl_reading(excel_cells, True, "A2:E3"), openpyxl_reading(excel_cells, False, "A2:E3")
    assert {(r.row, r.column): v for r, v in values.items() if v != (None, "General")} == cached
    assert values[CellRef("Sheet", 3, 1)][0] == 5  # the second row 3 is skipped, as iter_rows skips it
    assert values[CellRef("Sheet", 2, 4)] == (dt.datetime(2023, 3, 15), "yyyy-mm-dd")
    expected_formulas = {key: value for key, (value, _) in written.items()
                         if type(value).__name__ == "ArrayFormula" or (isinstance(value, str) and value.startswith("="))}
    assert {(r.row, r.column): f if isinstance(f, str) else f.text for r, f in formulas.items()} == \
        {key: f if isinstance(f, str) else f.text for key, f in expected_formulas.items() if key != (3, 4)}
    assert formulas[CellRef("Sheet", 3, 2)] == "=A3*2"  # the shared formula translated to its cell
    assert written[(3, 4)][0] == "=not a formula"  # openpyxl's formula reading gives the text constant ...
    assert CellRef("Sheet", 3, 4) not in formulas  # ... which is no formula: it has no <f>


def test_the_value_only_view_keeps_formulas_only_where_asked(excel_cells):
    cells = [CellRef("Sheet", 2, 2), CellRef("Sheet", 2, 3), CellRef("Sheet", 3, 3), CellRef("Sheet", 3, 5)]
    view = CachedEngine().evaluate(excel_cells, cells)
    assert view.cells == {cells[0]: 8, cells[1]: ExcelError("#DIV/0!"), cells[2]: 18, cells[3]: 6}
    assert view.formulas == {cells[0]: "=A2*2", cells[1]: "=1/0", cells[2]: "=SUM(A2:A3*2)", cells[3]: "=A3+1"}
    assert CachedEngine(read_formulas=False).evaluate(excel_cells, cells).formulas == {}


def test_a_formula_openpyxl_cannot_read_fails_the_reading_only_when_formulas_are_read(excel_cells, tmp_path):
    broken = tmp_path / "broken.xlsx"
    with zipfile.ZipFile(excel_cells) as original, zipfile.ZipFile(broken, "w") as copy:
        for info in original.infolist():
            data = original.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":  # a shared formula openpyxl's Translator cannot tokenize
                data = data.replace(b">A2*2</f>", b">A2&amp;&quot;abc</f>")  # an unterminated string
            copy.writestr(info, data)
    with pytest.raises(Exception):
        openpyxl_reading(broken, False, "A2:E3")  # openpyxl's formula reading fails on it ...
    assert openpyxl_reading(broken, True, "A2:E3")[(2, 2)][0] == 8  # ... its value reading does not
    cells = [CellRef("Sheet", 2, 2)]
    assert read_cells(broken, cells)[1][cells[0]][0] == 8
    with pytest.raises(Exception):
        read_cells(broken, cells, formulas=True)
    assert CachedEngine().evaluate(broken, cells).failure.reason == "unreadable-output"
    assert CachedEngine(read_formulas=False).evaluate(broken, cells).cells[cells[0]] == 8


# Every kind of cell openpyxl's parse_cell tells apart, as other writers than Excel write them:
# inline strings (plain, spaced, empty, rich), booleans, t="str", t="d", an error, a date and a
# date past Excel's range (openpyxl reads it as #VALUE!), an empty <v/>, cells and a row without
# r, a row numbered "5.0", a style id of "0".
EVERY_KIND = (
    '<sheetData>'
    '<row r="2"><c r="A2" t="inlineStr"><is><t>plain</t></is></c>'
    '<c r="B2" t="inlineStr"><is><t xml:space="preserve"> spaced </t></is></c>'
    '<c r="C2" t="inlineStr"><is><t/></is></c><c r="D2" t="inlineStr"><is/></c><c r="E2" t="inlineStr"/>'
    '<c r="F2" t="inlineStr"><is><r><t>ri</t></r><r><rPr><b/></rPr><t>ch</t></r></is></c></row>'
    '<row r="3"><c r="A3" t="b"><v>1</v></c><c r="B3" t="b"><v>0</v></c><c r="C3" t="str"><v>text</v></c>'
    '<c r="D3" t="d"><v>2024-02-29T12:30:00</v></c><c r="E3" t="e"><v>#N/A</v></c>'
    '<c r="F3" s="1"><v>45000.5</v></c><c r="G3" s="1"><v>1e10</v></c><c r="H3"><v/></c>'
    '<c r="I3" s="0"><v>2.5E-3</v></c></row>'
    '<row><c><v>7</v></c><c t="inlineStr"><is><t>no r</t></is></c><c r="D4"><v>8</v></c><c><v>9</v></c></row>'
    '<row r="5.0"><c r="A5"><v>-3</v></c></row>'
    '</sheetData>'
)


def with_sheet_data(path, tmp_path, name: str, sheet_data: str):
    changed = tmp_path / name
    with zipfile.ZipFile(path) as original, zipfile.ZipFile(changed, "w") as copy:
        for info in original.infolist():
            data = original.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                data = re.sub(rb"<sheetData>.*</sheetData>", sheet_data.encode(), data, flags=re.S)
            copy.writestr(info, data)
    return changed


def test_every_kind_of_cell_reads_as_openpyxl_reads_it(excel_cells, tmp_path):
    path = with_sheet_data(excel_cells, tmp_path, "kinds.xlsx", EVERY_KIND)
    expected = openpyxl_reading(path, True, "A2:I5")
    cells = [CellRef("Sheet", row, column) for row in range(2, 6) for column in range(1, 10)]
    values = read_cells(path, cells, formulas=True)[1]
    assert {(r.row, r.column): v for r, v in values.items() if v != (None, "General")} == \
        {key: v for key, v in expected.items() if v != (None, "General")}
    assert {key: type(v[0]) for key, v in expected.items()} == {(r.row, r.column): type(v[0])
                                                                for r, v in values.items() if (r.row, r.column) in expected}
    assert expected[(2, 1)][0] == "plain" and expected[(2, 6)][0] == "rich" and expected[(3, 7)][0] == "#VALUE!"
    assert expected[(4, 2)][0] == "no r" and expected[(4, 4)][0] == 8 and expected[(4, 5)][0] == 9  # D4 moves the count on
    assert expected[(3, 6)][0] == dt.datetime(2023, 3, 15, 12, 0) and expected[(5, 1)][0] == -3


@pytest.mark.parametrize("sheet_data", [
    '<sheetData><row r="2.5"><c r="A2"><v>1</v></c></row></sheetData>',  # a row number that is no integer
    '<sheetData><row r="2"><c r="A2" t="s"><v>999</v></c></row></sheetData>',  # no such shared string
    '<sheetData><row r="2"><c r="A2" s="x"><v>1</v></c></row></sheetData>',  # a style id that is no number
    '<sheetData><row r="2"><c r="A2" s="77"><v>1</v></c></row></sheetData>',  # no such style
    '<sheetData><row r="2"><c r="A2"><v>one</v></c></row></sheetData>',  # a number that is not one
], ids=["row", "shared-string", "style-text", "style-missing", "number"])
def test_a_cell_openpyxl_cannot_read_fails_the_reading_as_it_fails_openpyxl(excel_cells, tmp_path, sheet_data):
    path = with_sheet_data(excel_cells, tmp_path, "broken.xlsx", sheet_data)
    with pytest.raises(Exception) as theirs:
        openpyxl_reading(path, True, "A2:B2")
    with pytest.raises(Exception) as ours:
        read_cells(path, [CellRef("Sheet", 2, 1)])
    assert type(ours.value) is type(theirs.value)
