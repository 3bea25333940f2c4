"""Screening names the functions of a workbook that reach the network, in whatever case
they are written and wherever the chunks it inflates a part in cut them."""

from __future__ import annotations

from regrade.workbook.screening import CHUNK, screen
from tests.hostile_corpus import cell_rows, formula_cell, package, worksheet


def _book(tmp_path, name: str, sheet_xml: str):
    path = tmp_path / name
    path.write_bytes(package([("Sheet1", sheet_xml)]))
    return path


def test_a_network_function_is_found_in_any_case_and_none_where_there_is_none(tmp_path):
    for formula in ('WEBSERVICE("http://x")', 'webservice("http://x")', '_xlfn.WebService ("http://x")'):
        path = _book(tmp_path, "calls.xlsx", worksheet(cell_rows(formula_cell("A1", formula, "0"))))
        assert screen(path).network_functions == ("WEBSERVICE",), formula
    for formula in ('SUM(1,2)', 'MYWEBSERVICE("x")', '"webservice"&"("'):  # not a call of it
        path = _book(tmp_path, "none.xlsx", worksheet(cell_rows(formula_cell("A1", formula, "0"))))
        assert screen(path).network_functions == (), formula


def test_a_network_function_cut_by_the_inflating_chunks_is_found(tmp_path):
    head = '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    cut_at = CHUNK - len(head.encode()) - len('<sheetData><row r="1"><c r="A1"><f>We')
    padding = f"<!--{' ' * (cut_at - len('<!---->'))}-->"  # ends where the chunk ends, inside the name
    sheet = head + padding + '<sheetData><row r="1"><c r="A1"><f>WebService("http://x")</f><v>0</v></c></row></sheetData></worksheet>'
    assert sheet.encode().index(b"WebService") < CHUNK < sheet.encode().index(b"WebService") + len("WebService")
    assert screen(_book(tmp_path, "cut.xlsx", sheet)).network_functions == ("WEBSERVICE",)


def test_the_screening_says_whether_an_array_formula_may_be_there_and_the_search_trusts_it(tmp_path):
    import openpyxl
    from openpyxl.worksheet.formula import ArrayFormula

    from regrade.workbook.sheets import array_formula_ranges

    book = openpyxl.Workbook()
    book.active["A1"], book.active["A2"] = 1, 2
    book.active["B1"] = "=SUM(A1:A2)"
    book.save(plain := tmp_path / "plain.xlsx")
    book.active["C1"] = ArrayFormula("C1:C2", "=A1:A2*2")
    book.save(arrays := tmp_path / "arrays.xlsx")
    assert screen(plain).array_formulas is False and array_formula_ranges(plain) == []
    assert screen(arrays).array_formulas is True and array_formula_ranges(arrays) == [(0, "C1:C2")]
    head = '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    cut_at = CHUNK - len(head.encode()) - len('<sheetData><row r="1"><c r="A1"><f t="ar')
    padding = f"<!--{' ' * (cut_at - len('<!---->'))}-->"  # the chunk ends inside t="array"
    sheet = head + padding + '<sheetData><row r="1"><c r="A1"><f t="array" ref="A1:A2">{1;2}</f><v>1</v></c></row></sheetData></worksheet>'
    assert sheet.encode().index(b't="array"') < CHUNK < sheet.encode().index(b't="array"') + len('t="array"')
    cut = _book(tmp_path, "cut.xlsx", sheet)
    assert screen(cut).array_formulas is True and array_formula_ranges(cut) == [(0, "A1:A2")]


def test_an_array_formula_in_a_sheet_part_not_named_xml_is_still_searched_for(tmp_path):
    import io
    import zipfile

    from regrade.workbook.sheets import array_formula_ranges
    from tests.hostile_corpus import zip_bytes

    sheet = worksheet('<sheetData><row r="1"><c r="A1"><f t="array" ref="A1:A2">{1;2}</f><v>1</v></c></row></sheetData>')
    with zipfile.ZipFile(io.BytesIO(package([("Sheet1", sheet)]))) as archive:
        parts = {name: archive.read(name) for name in archive.namelist()}
    parts["xl/worksheets/sheet1.dat"] = parts.pop("xl/worksheets/sheet1.xml")  # the relationship names the part
    parts["xl/_rels/workbook.xml.rels"] = parts["xl/_rels/workbook.xml.rels"].replace(b"sheet1.xml", b"sheet1.dat")
    (renamed := tmp_path / "renamed.xlsx").write_bytes(zip_bytes(parts))
    assert screen(renamed).failure is None and screen(renamed).array_formulas is True
    assert array_formula_ranges(renamed) == [(0, "A1:A2")]
