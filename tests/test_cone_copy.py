"""The cone copy (workbook/cone_copy.py): which formulas it leaves out, and that the engines
compute from it the graded values worked out by hand."""

import zipfile
from pathlib import Path

import openpyxl
import pytest

from regrade.engines.ironcalc.engine import IronCalcEngine
from regrade.values import CellRef
from regrade.workbook.cone_copy import CONE_WORK, asks_much_work, write_cone_copy
from regrade.workbook.cones import load_graph
from tests.conftest import SHARED, SHARED_ABSENT, edit_first_sheet, make_shared, require_engines


def _formulas(path: Path) -> dict[str, str]:
    book = openpyxl.load_workbook(path)
    return {cell.coordinate: cell.value for row in book.active.iter_rows() for cell in row
            if isinstance(cell.value, str) and cell.value.startswith("=")}


def test_formulas_no_graded_cell_depends_on_are_left_out(workbook, tmp_path):
    path = workbook({
        "A1": 1, "A2": 2, "A3": 4,
        "B1": "=A1*2",  # read by the graded D1: kept
        "H9": "=SUMPRODUCT(A:A*A:A)",  # nothing reads it: left out
        "C9": "=B1+100",  # nothing reads it: left out
        "D1": "=B1+G3+SUM(F2:F3)",  # graded
        "F1": "=A1:A3",  # nothing reads it, but it could spill into F2:F3, which D1 reads: kept
        "C2": "=A1",  # likewise: it lies above and left of F3, the far corner of what D1 reads
        "G1": "=0", "G2": "=0", "G3": "=0",  # made one shared formula below; D1 reads G3
    })
    make_shared(path, "G", range(1, 4), "A1*3")  # =A1*3, =A2*3, =A3*3
    copy = tmp_path / "copy.xlsx"
    assert write_cone_copy(path, copy, load_graph(path), [CellRef("Sheet1", 1, 4)])
    kept = _formulas(copy)
    assert set(kept) == {"B1", "C2", "D1", "F1", "G1", "G3"}  # G1 holds the text G3 shares; G2 is left out
    assert openpyxl.load_workbook(copy).active["C9"].value is None  # no cached value left behind
    # the graded value through the copy, by hand: B1 = 2, G3 = A3*3 = 12, F2:F3 = blank or the
    # spill of F1 (A2, A3 = 2, 4), 6 with a spill, 0 without: the engine's value is the same in both
    for engine in (IronCalcEngine(),):
        from_file = engine.evaluate(path, [CellRef("Sheet1", 1, 4)]).cells[CellRef("Sheet1", 1, 4)]
        from_copy = engine.evaluate(copy, [CellRef("Sheet1", 1, 4)]).cells[CellRef("Sheet1", 1, 4)]
        assert from_copy == from_file and from_file in (14, 20)


def test_no_copy_when_the_cone_may_read_any_cell(workbook, tmp_path):
    path = workbook({"A1": 1, "B1": '=INDIRECT("A"&1)', "C1": "=SUMPRODUCT(A:A*A:A)"})
    assert not write_cone_copy(path, tmp_path / "copy.xlsx", load_graph(path), [CellRef("Sheet1", 1, 2)])


def test_a_reference_to_another_workbook_reads_no_cell_of_this_one(workbook, tmp_path):
    """B1 reads another workbook and A1: the copy keeps A1's formula and leaves out C9, which
    nothing reads (the other workbook's cells are not this one's)."""
    path = workbook({"A1": "=2+3", "B1": "='[1]Data'!A1+A1", "C9": "=SUMPRODUCT(A:A*A:A)"})
    copy = tmp_path / "copy.xlsx"
    assert write_cone_copy(path, copy, load_graph(path), [CellRef("Sheet1", 1, 2)])
    assert set(_formulas(copy)) == {"A1", "B1"}


# an extension list as Excel writes one after the cells (SpreadsheetBench 55392's sheets carry
# such): a conditional format whose formula is an <xm:f>, which no engine computes into a cell
_EXTENSION_LIST = (
    '<extLst><ext uri="{78C0D931-6437-407d-A8EE-F0AAD7539E65}" '
    'xmlns:x14="http://schemas.microsoft.com/office/spreadsheetml/2009/9/main">'
    '<x14:conditionalFormattings><x14:conditionalFormatting '
    'xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main"><x14:cfRule type="expression" priority="1" '
    'id="{DB636F27-925E-406A-8DEA-B54ADC02408A}"><xm:f>$A$1&gt;0</xm:f><x14:dxf/></x14:cfRule>'
    '<xm:sqref>A1:A3</xm:sqref></x14:conditionalFormatting></x14:conditionalFormattings></ext></extLst>')


def test_prefixed_formulas_after_the_cells_leave_the_copy_possible_and_prefixed_cells_do_not(workbook, tmp_path):
    cells = {"A1": 1, "B1": "=A1*2", "C9": "=SUMPRODUCT(A:A*A:A)"}  # B1 graded; C9 read by nothing
    after = workbook(cells, name="after.xlsx")
    edit_first_sheet(after, lambda xml: xml.replace("</worksheet>", _EXTENSION_LIST + "</worksheet>"))
    copy = tmp_path / "copy.xlsx"
    assert write_cone_copy(after, copy, load_graph(after), [CellRef("Sheet1", 1, 2)])
    assert set(_formulas(copy)) == {"B1"}
    assert b"<xm:f>$A$1&gt;0</xm:f>" in zipfile.ZipFile(copy).read("xl/worksheets/sheet1.xml")  # left as it was
    among = workbook(cells, name="among.xlsx")  # a cell's formula prefixed: the copy's patterns would miss it
    edit_first_sheet(among, lambda xml: xml.replace("<f>A1*2</f>", '<x:f xmlns:x="http://schemas.openxmlformats.org/'
                                                                   'spreadsheetml/2006/main">A1*2</x:f>'))
    assert "<x:f " in zipfile.ZipFile(among).read("xl/worksheets/sheet1.xml").decode()
    assert not write_cone_copy(among, tmp_path / "copy2.xlsx", load_graph(among), [CellRef("Sheet1", 1, 2)])


def test_only_a_workbook_asking_for_much_work_is_narrowed(workbook):
    whole_columns = CONE_WORK // (2 * 1_048_576) + 1  # each formula reads two whole columns
    heavy = workbook({f"C{row}": "=SUMPRODUCT(A:A*B:B)" for row in range(1, whole_columns + 1)}, name="heavy.xlsx")
    rows = CONE_WORK // 2 - 1  # two ranges of that many rows: just under CONE_WORK cells
    light = workbook({"C1": f"=SUMPRODUCT(A1:A{rows}*B1:B{rows})"}, name="light.xlsx")
    assert asks_much_work(heavy) and not asks_much_work(light)


@pytest.mark.slow
def test_engines_compute_the_graded_cells_of_a_heavy_workbook_through_its_cone(workbook):
    require_engines("ironcalc", "libreoffice", "formulon")
    from regrade.engines.registry import open_engine

    # 20 whole-column array products nobody reads (40 M referenced cells, past CONE_WORK) beside
    # a graded cell: E1 = SUM(A1:A3) * 2 = (1 + 2 + 4) * 2 = 14, by hand
    cells = {"A1": 1, "A2": 2, "A3": 4, "E1": "=SUM(A1:A3)*2"}
    cells.update({f"C{row}": "=SUMPRODUCT(A:A*B:B)" for row in range(1, 21)})
    path = workbook(cells)
    assert asks_much_work(path)
    graded = CellRef("Sheet1", 1, 5)
    for name in ("ironcalc", "libreoffice", "formulon"):
        values = open_engine(name, timeout_s=120).evaluate(path, [graded])
        assert values.cells[graded] == 14, name
        assert values.formulas[graded] == "=SUM(A1:A3)*2"


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "dataset.json").is_file(), reason=SHARED_ABSENT)
def test_a_heavy_workbook_is_computed_through_its_cone_as_excel_computed_it():
    """Task 59932: 10,000 whole-column lookups and 350 whole-column array formulas that the
    answer (All!J12:J3400) does not read; IronCalc computed them all for minutes. Through the
    cone copy, the answer cells equal Excel's cached values."""
    path = SHARED / "spreadsheet" / "59932" / "1_59932_answer.xlsx"
    assert asks_much_work(path)
    cells = [CellRef("All", row, 10) for row in range(12, 3401, 97)]
    cached = openpyxl.load_workbook(path, data_only=True, read_only=True)["All"]
    excel = {cell: cached.cell(cell.row, cell.column).value for cell in cells}
    values = IronCalcEngine().evaluate(path, cells)
    assert {cell: values.cells[cell] for cell in cells} == excel
