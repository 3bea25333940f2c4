"""Other workbooks' values as the file cached them: the linked copy every engine computes."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl
import pytest

from regrade.values import CannotEvaluate, CellRef
from regrade.workbook.external import CachedSheet, Linker, cached_sheets, write_linked_copy
from tests.hostile_corpus import NS, REL, URL, cell_rows, formula_cell, package, worksheet

# Another workbook's cached cells, as Excel writes them (ECMA-376 18.14): Data!A1:A3 = 7, 1, 2
# and Data!B1 = "x"; its sheet Old failed to refresh (its values may not be the formulas').
CACHE = (f'<externalLink {NS}><externalBook r:id="rId1"><sheetNames><sheetName val="Data"/><sheetName val="Old"/>'
         '</sheetNames><sheetDataSet><sheetData sheetId="0">'
         '<row r="1"><cell r="A1"><v>7</v></cell><cell r="B1" t="str"><v>x</v></cell></row>'
         '<row r="2"><cell r="A2"><v>1</v></cell></row><row r="3"><cell r="A3"><v>2</v></cell></row></sheetData>'
         '<sheetData sheetId="1" refreshError="1"><row r="1"><cell r="A1"><v>5</v></cell></row></sheetData>'
         '</sheetDataSet></externalBook></externalLink>')


def linked_book(path: Path, *cells: str) -> Path:
    path.write_bytes(package(
        [("Sheet1", worksheet(cell_rows(*cells)))],
        extra={"xl/externalLinks/externalLink1.xml": CACHE,
               "xl/externalLinks/_rels/externalLink1.xml.rels":
                   '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                   f'<Relationship Id="rId1" Type="{REL}/externalLinkPath" Target="{URL}book.xlsx" '
                   'TargetMode="External"/></Relationships>'},
        workbook_tail='<externalReferences><externalReference r:id="rIdX"/></externalReferences>',
        workbook_rels=f'<Relationship Id="rIdX" Type="{REL}/externalLink" Target="externalLinks/externalLink1.xml"/>'))
    return path


def linker() -> Linker:
    sheets = {(1, "data"): CachedSheet(1, "Data"), (1, "order data"): CachedSheet(1, "Order Data")}
    return Linker(sheets, {"Sheet1", "xl1 Order Data"})


@pytest.mark.parametrize("formula, linked", [
    ("[1]Data!A1+1", "'xl1 Data'!A1+1"),
    ("SUM('[1]Order Data'!$A:$C)", "SUM('xl1 Order Data (1)'!$A:$C)"),  # the name the workbook has is not taken
    ('"[1]Data!A1"&[1]Data!B1:C2', "\"[1]Data!A1\"&'xl1 Data'!B1:C2"),  # text in quotes stays
    ("[1]!Rate*[1]Other!A1", "[1]!Rate*[1]Other!A1"),  # the other workbook's name; a sheet not cached
    ("'[1]Jan:Mar'!A1", "'[1]Jan:Mar'!A1"),  # a 3-D reference
    ("SUMIF([1]Data!A:A,1)", "SUMIF([1]Data!A:A,1)"),  # #VALUE! in Excel while the other workbook is closed
    ("INDEX([1]Data!A1:A3,2)+_xlfn.COUNTIFS(A:A,1)", "INDEX([1]Data!A1:A3,2)+_xlfn.COUNTIFS(A:A,1)"),
])
def test_references_to_cached_sheets_point_at_the_copy_s_sheets(formula, linked):
    assert linker().formula(formula) == linked


def test_a_sheet_that_failed_to_refresh_is_not_cached(tmp_path):
    path = linked_book(tmp_path / "book.xlsx", ANSWERS[0])
    with zipfile.ZipFile(path) as archive:
        sheets = cached_sheets(archive)
    assert list(sheets) == [(1, "data")]
    assert sheets[(1, "data")].cells == {(1, 1): ("n", "7"), (1, 2): ("str", "x"), (2, 1): ("n", "1"), (3, 1): ("n", "2")}


ANSWERS = (formula_cell("A1", "[1]Data!A1*2", "14") + formula_cell("B1", "SUM([1]Data!A1:A3)", "10")
           + '<c r="C1" t="str"><f>[1]Data!B1&amp;"y"</f><v>xy</v></c>' + formula_cell("D1", 'SUMIF([1]Data!A1:A3,"&gt;1")', "9")
           + formula_cell("E1", "[1]Old!A1", "5") + formula_cell("F1", "A1+1", "15"),)


def test_the_linked_copy_holds_the_cache_on_a_very_hidden_sheet_and_leaves_the_input_alone(tmp_path):
    path = linked_book(tmp_path / "book.xlsx", *ANSWERS)
    before = path.read_bytes()
    copy = tmp_path / "copy.xlsx"
    assert write_linked_copy(path, copy)
    assert path.read_bytes() == before
    book = openpyxl.load_workbook(copy)
    assert book.sheetnames == ["Sheet1", "xl1 Data"] and book["xl1 Data"].sheet_state == "veryHidden"
    assert [[c.value for c in row] for row in book["xl1 Data"]["A1:B3"]] == [[7, "x"], [1, None], [2, None]]
    assert book["Sheet1"]["A1"].value == "='xl1 Data'!A1*2"
    assert book["Sheet1"]["E1"].value == "=[1]Old!A1"


def test_a_workbook_without_links_or_calling_sheets_gets_no_copy(tmp_path):
    copy = tmp_path / "copy.xlsx"
    plain = tmp_path / "plain.xlsx"
    plain.write_bytes(package([("Sheet1", worksheet(cell_rows(formula_cell("A1", "1+1", "2"))))]))
    assert not write_linked_copy(plain, copy)
    counted = linked_book(tmp_path / "sheets.xlsx", ANSWERS[0] + formula_cell("G1", "_xlfn.SHEETS()", "1"))
    assert not write_linked_copy(counted, copy)  # the added sheet would count
    assert not copy.exists()


@pytest.mark.parametrize("name", ["ironcalc", "libreoffice", "formulon"])
def test_every_engine_computes_from_the_cached_values_of_the_other_workbook(tmp_path, name, shared_engine):
    path = linked_book(tmp_path / "book.xlsx", *ANSWERS)
    cells = [CellRef("Sheet1", 1, column) for column in range(1, 7)]
    values = shared_engine(name).evaluate(path, cells).cells
    # by hand from the cache: 7*2, 7+1+2, "x"&"y", and A1+1
    assert [values[cells[i]] for i in (0, 1, 2, 5)] == [14.0, 10.0, "xy", 15.0]
    for abstained in (values[cells[3]], values[cells[4]]):  # SUMIF over the closed workbook; Old not cached
        assert isinstance(abstained, CannotEvaluate) and abstained.rule == "external-link"


@pytest.mark.parametrize("name", ["ironcalc", "libreoffice", "formulon"])
def test_an_engine_computes_nothing_when_no_graded_cell_can_be_recomputed(tmp_path, monkeypatch, name, shared_engine):
    """D1 (SUMIF over the closed workbook) and E1 (a sheet that failed to refresh) stay
    external whatever the engine computes, so the engine is not asked to compute the file;
    once F1 (A1+1, 15 by hand from the cache) is graded too, it is."""
    path = linked_book(tmp_path / "book.xlsx", *ANSWERS)
    engine = shared_engine(name)
    computed = []
    original = type(engine).compute
    monkeypatch.setattr(type(engine), "compute", lambda self, *args: computed.append(1) or original(self, *args))
    external = [CellRef("Sheet1", 1, 4), CellRef("Sheet1", 1, 5)]
    values = engine.evaluate(path, external)
    assert not computed
    assert {ref: value.rule for ref, value in values.cells.items()} == dict.fromkeys(external, "external-link")
    both = engine.evaluate(path, [*external, CellRef("Sheet1", 1, 6)])
    assert computed and both.cells[CellRef("Sheet1", 1, 6)] == 15.0
