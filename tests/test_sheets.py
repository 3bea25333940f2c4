"""The quick scan of sheet XML for formula cells (engines/sheets.formula_cells), against openpyxl."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import openpyxl
import pytest

from regrade.workbook.openpyxl_reading import formula_cells_of, load_formula_book
from regrade.workbook.sheets import formula_cells

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo-run" / "dataset" / "spreadsheet"


def openpyxl_formula_cells(path: Path) -> dict[str, set[tuple[int, int]]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        book = openpyxl.load_workbook(path)
    return {sheet.title: {(c.row, c.column) for row in sheet.iter_rows() for c in row if c.data_type == "f"}
            for sheet in book.worksheets}


def test_the_scan_finds_what_openpyxl_finds_in_excel_written_files():
    files = sorted(DEMO.glob("*/*.xlsx"))
    assert len(files) >= 20
    with_formulas = 0
    for path in files:
        scanned = formula_cells(path)
        assert scanned == openpyxl_formula_cells(path), path.name
        with_formulas += any(scanned.values())
    assert with_formulas >= 10  # shared formulas among them: Excel writes ranges of copied formulas that way


def test_the_scan_declines_what_it_cannot_read(tmp_path):
    book = openpyxl.Workbook()
    book.active["A1"] = "=1+1"
    plain = tmp_path / "plain.xlsx"
    book.save(plain)
    assert formula_cells(plain) == {"Sheet": {(1, 1)}}
    prefixed = tmp_path / "prefixed.xlsx"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(prefixed, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"<c ", b"<x:c ").replace(b"</c>", b"</x:c>")
            target.writestr(item, data)
    assert formula_cells(prefixed) is None  # namespace-prefixed elements: openpyxl is asked instead
    (tmp_path / "broken.xlsx").write_bytes(b"not a zip")
    assert formula_cells(tmp_path / "broken.xlsx") is None


def test_a_bloated_stylesheet_is_read_without_its_named_styles_and_the_same_values(tmp_path):
    import openpyxl
    from openpyxl.styles import NamedStyle

    from regrade.workbook.openpyxl_reading import MAX_NAMED_STYLES, read_book

    def book_with(named: int):
        book = openpyxl.Workbook()
        sheet = book.active
        for number in range(named):  # the copied-in styles of a bloated workbook
            book.add_named_style(NamedStyle(name=f"Style {number}", number_format="0.000"))
        sheet["A1"], sheet["A1"].number_format = 45000, "yyyy-mm-dd"
        sheet["A2"], sheet["A2"].style = 1.5, "Style 3" if named > 3 else "Normal"
        sheet["A3"] = "=A2*2"
        path = tmp_path / f"styles-{named}.xlsx"
        book.save(path)
        return path

    for named, kept in ((3, 4), (MAX_NAMED_STYLES + 100, 1)):  # 4 = Normal and the three
        path = book_with(named)
        for data_only in (True, False):
            plain = openpyxl.load_workbook(path, data_only=data_only).active
            lean_book = read_book(path, data_only=data_only)
            lean = lean_book.active
            assert [(c.value, c.number_format) for c in lean["A"]] == [(c.value, c.number_format) for c in plain["A"]]
            assert len(lean_book._named_styles) == kept
    assert read_book(book_with(MAX_NAMED_STYLES + 100), read_only=True).active["A2"].number_format == "0.000"


def test_formula_cells_are_read_from_the_cells_a_sheet_holds_not_its_bounding_box(tmp_path):
    """Two formulas a million rows and 16,000 columns apart: the walk visits the cells the
    file holds, in row order, and adds none (iterating the bounding box would create
    1,048,576 × 16,384 empty cells)."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["XFD1048576"] = "=A1+1"
    sheet["B2"] = "=SUM(A:A)"
    sheet["A1"] = 3
    sheet["C2"] = "text"
    second = book.create_sheet("Other")
    second["A3"] = "=Sheet!A1"
    path = tmp_path / "sparse.xlsx"
    book.save(path)
    loaded = load_formula_book(path)
    held = sum(len(ws._cells) for ws in loaded.worksheets)
    found = [(c.sheet, c.row, c.column, c.text) for c in formula_cells_of(loaded)]
    assert found == [("Sheet", 2, 2, "=SUM(A:A)"), ("Sheet", 1048576, 16384, "=A1+1"), ("Other", 3, 1, "=Sheet!A1")]
    assert sum(len(ws._cells) for ws in loaded.worksheets) == held == 5


def test_a_formula_book_is_read_without_its_drawings(tmp_path):
    """Charts and pictures hold no formula a cell reads; openpyxl parses each chart's whole
    DrawingML (2.8 s of the 5 s it takes to open SpreadsheetBench 59932's answer)."""
    from openpyxl.chart import BarChart, Reference

    book = openpyxl.Workbook()
    sheet = book.active
    for row in range(1, 4):
        sheet.cell(row, 1, row)
    sheet["B1"] = "=SUM(A1:A3)"
    chart = BarChart()
    chart.add_data(Reference(sheet, min_col=1, min_row=1, max_row=3))
    sheet.add_chart(chart, "D2")
    path = tmp_path / "chart.xlsx"
    book.save(path)
    assert len(openpyxl.load_workbook(path).active._charts) == 1  # the file has its chart
    read = load_formula_book(path)
    assert read.active._charts == [] and read.active["B1"].value == "=SUM(A1:A3)"
    assert len(load_formula_book(path, pivot_tables=True).active._charts) == 1  # a book to be saved keeps it


def _styled_book(path):
    """A workbook whose reading touches every part of a stylesheet openpyxl applies: dates and
    custom number formats, fonts, fills, a merged cell's borders, a conditional format's
    differential style, a named style."""
    from openpyxl.formatting.rule import CellIsRule
    from openpyxl.styles import Border, Font, NamedStyle, PatternFill, Side

    book = openpyxl.Workbook()
    sheet = book.active
    book.add_named_style(NamedStyle(name="Money", number_format="#,##0.00 [$€-1]"))
    sheet["A1"], sheet["A1"].number_format = 45000, "yyyy-mm-dd"
    sheet["A2"], sheet["A2"].style = 1234.5, "Money"
    sheet["A3"], sheet["A3"].font = "=A2*2", Font(bold=True, color="FF0000")
    sheet["A4"], sheet["A4"].fill = 0.25, PatternFill("solid", fgColor="00FF00")
    sheet["A4"].number_format = "0.0%"
    sheet["B1"].border = Border(left=Side(style="thick"))
    sheet["C2"].border = Border(right=Side(style="thin"), bottom=Side(style="double"))
    sheet.merge_cells("B1:C2")
    sheet.conditional_formatting.add("A1:A4", CellIsRule(operator="greaterThan", formula=["1"], font=Font(italic=True)))
    book.save(path)
    return path


def _cell_styles(sheet):
    return [(c.coordinate, c.value, c.number_format, getattr(c, "is_date", None), repr(c.font), repr(c.fill), repr(c.border),
             getattr(c, "style", None)) for row in sheet.iter_rows(min_row=1, max_row=4, max_col=3) for c in row]


def test_a_stylesheet_parsed_once_reads_as_openpyxl_reads_it_book_after_book(tmp_path):
    """Books read through the shared parse of their stylesheet give what openpyxl's own
    reading gives, cell for cell (values, dates, number formats, fonts, fills, a merged cell's
    borders, named styles, conditional formats), the second and third time as the first, and
    the stylesheet is parsed once."""
    from regrade.workbook.openpyxl_reading import parsed_stylesheet, read_book

    path = _styled_book(tmp_path / "styled.xlsx")
    parsed_stylesheet.cache_clear()
    for data_only in (False, True, False):
        plain, ours = openpyxl.load_workbook(path, data_only=data_only), read_book(path, data_only=data_only)
        assert _cell_styles(ours.active) == _cell_styles(plain.active)
        assert ours.active["A1"].value.year == 2023 and ours.active.merged_cells.ranges == plain.active.merged_cells.ranges
        rules = [(str(r), [x.dxf.font.i for x in v]) for r, v in ours.active.conditional_formatting._cf_rules.items()]
        assert rules == [(str(r), [x.dxf.font.i for x in v]) for r, v in plain.active.conditional_formatting._cf_rules.items()]
        assert [s.name for s in ours._named_styles] == [s.name for s in plain._named_styles]
        streamed = read_book(path, data_only=data_only, read_only=True)
        assert [(c.value, c.number_format) for row in streamed.active.iter_rows(max_col=1) for c in row] == \
            [(c.value, c.number_format) for row in plain.active.iter_rows(max_col=1) for c in row]
        streamed.close()
    assert parsed_stylesheet.cache_info().misses == 1 and parsed_stylesheet.cache_info().hits == 5


def test_a_stylesheet_openpyxl_cannot_read_fails_every_reading(tmp_path):
    """The shared parse keeps openpyxl's failures: a font size that is not a number fails
    openpyxl's reading, and regrade's each time it reads the file."""
    from regrade.workbook.openpyxl_reading import read_book

    good = _styled_book(tmp_path / "styled.xlsx")
    bad = tmp_path / "bad.xlsx"
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(bad, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/styles.xml":
                data = data.replace(b'<sz val="11" />', b'<sz val="eleven" />', 1)
                assert b"eleven" in data
            target.writestr(item, data)
    with pytest.raises(Exception) as expected:
        openpyxl.load_workbook(bad)
    for _ in range(2):
        with pytest.raises(type(expected.value)):
            read_book(bad, data_only=True)
