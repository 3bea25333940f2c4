"""Ranges written with rows to the sheet's end, cut before Formulon computes (engines/formulon.py,
engines/range_rewrites.py): the text of the cuts, Formulon's values through them against its own
values of the uncut file and values worked out by hand, and Excel's cached values of task 68-47."""

from pathlib import Path

import pytest
from openpyxl.worksheet.formula import ArrayFormula

from tests.conftest import SHARED, SHARED_ABSENT, require_engines
from regrade.engines.range_rewrites import plain_formula_cuts
from regrade.values import CellRef
from regrade.workbook.analysis import WorkbookAnalysis


def test_plain_formula_cuts_keep_excels_value_and_widen_nothing():
    last = {None: 144, "Data": 50}.get
    assert plain_formula_cuts("=IF(COUNTIF(H$7:H$1048576,-ABS(H34))<2,1,0)", last) == (
        "=IF((COUNTIF(H$7:H$144,-ABS(H34))+1048432*COUNTIF($XFD$1048576:$XFD$1048576,-ABS(H34)))<2,1,0)")
    assert plain_formula_cuts('=SUMIF(A1:A1048576,"x",B1:B1048576)', last) == '=SUMIF(A1:A144,"x",B1:B144)'
    assert plain_formula_cuts("=VLOOKUP(A2,Data!$B$2:$Z$1048576,9,FALSE)", last) == "=VLOOKUP(A2,Data!$B$2:$Z$50,9,FALSE)"
    assert plain_formula_cuts("=SUMPRODUCT((Data!I1:I1048576=A3)*(Data!Q1:Q1048576=L3))", last) == (
        "=(SUMPRODUCT((Data!I1:I50=A3)*(Data!Q1:Q50=L3))"
        "+1048526*SUMPRODUCT(($XFD$1048576:$XFD$1048576=A3)*($XFD$1048576:$XFD$1048576=L3)))")
    # left alone: whole columns (Formulon reads only their used rows), a single cell in a range
    # position (IronCalc's defect, not Formulon's), an approximate lookup, MAX of an array (only
    # an array formula is cut there), UNIQUE
    for formula in ("=VLOOKUP(A2,Data!$B:$Z,9,FALSE)", "=SUMPRODUCT((Data!I:I=A3)*(Data!Q:Q=L3))",
                    '=COUNTIF(A1,"a*")', "=VLOOKUP(A2,Data!$B$2:$Z$1048576,9,TRUE)",
                    '=MAX(IF(F1:F1048576=A2,G1:G1048576,""))', '=UNIQUE(IF(A2=Data!A2:A1048576,Data!C2:C1048576,""))'):
        assert plain_formula_cuts(formula, last) == formula


# A2:A4 = x, 5, y and B2:B4 = 10, 20, blank; every row below is blank. Each formula's value by hand.
CUT_BY_HAND = {
    "D1": ('=COUNTIF(A$2:A$1048576,"")', 1_048_572),  # the blank rows: 1,048,575 - 3
    "D2": ('=COUNTIF(A2:A1048576,"<>5")', 1_048_574),  # every cell but A3, blanks included
    "D3": ("=COUNTIF(A2:A1048576,5)", 1),  # A3
    "D4": ('=SUMIF(A2:A1048576,"x",B2:B1048576)', 10),  # B2
    "D5": ('=COUNTIFS(A2:A1048576,"",B2:B1048576,"")', 1_048_572),  # rows 5 onwards: both blank
    "D6": ('=AVERAGEIF(A2:A1048576,"<>x",B2:B1048576)', 20),  # B3; blank B cells are skipped
    "D7": ("=VLOOKUP(5,A2:B1048576,2,FALSE)", 20),  # row 3
    "D8": ('=MATCH("y",A1:A1048576,0)', 4),
    "D9": ('=SUMPRODUCT((A2:A1048576="")*1)', 1_048_572),  # blank elements count as ""
    "D10": ('=SUMPRODUCT((A2:A1048576<>"x")*(B2:B1048576<>""))', 1),  # row 3 alone
}


def test_formulon_computes_the_cut_ranges_as_excel_and_as_itself_uncut(workbook):
    require_engines("formulon")
    import formulon

    from regrade.engines.formulon import FormulonEngine, cut_tall_ranges

    path = workbook({"A2": "x", "A3": 5, "A4": "y", "B2": 10, "B3": 20,
                     **{where: formula for where, (formula, _) in CUT_BY_HAND.items()}})
    cells = [CellRef("Sheet1", int(where[1:]), 4) for where in CUT_BY_HAND]
    engine = FormulonEngine()
    engine.start()
    values = engine.evaluate(path, cells)
    assert [values.cells[cell] for cell in cells] == [value for _, value in CUT_BY_HAND.values()]
    assert values.formulas[cells[0]] == '=COUNTIF(A$2:A$1048576,"")'  # the file's formula is reported

    book = formulon.Workbook.load(path.read_bytes())
    try:
        cuts = cut_tall_ranges(WorkbookAnalysis(path), book)
        assert cuts is not None and len(cuts.originals) == len(CUT_BY_HAND)  # every one of them was cut
        assert "XFD" in book.get_formula(0, 0, 3)
    finally:
        book.close()
    uncut = formulon.Workbook.load(path.read_bytes())  # Formulon's own values of the whole ranges
    try:
        uncut.recalc()
        assert [uncut.get_value(0, cell.row - 1, 3).number for cell in cells] == [values.cells[c] for c in cells]
    finally:
        uncut.close()


def test_an_array_formula_spilling_below_the_assumed_last_row_undoes_the_cuts(workbook):
    require_engines("formulon")
    import formulon

    from regrade.engines.formulon import TallRangeCuts

    path = workbook({"A1": 1, "C1": ArrayFormula("C1:C5", "=ROW(A1:A5)")})
    book = formulon.Workbook.load(path.read_bytes())
    try:
        book.recalc()
        assert book.spill_info(0, 0, 2).rows == 5
        assert TallRangeCuts({(0, 0, 3): "=1"}, {0: 3}, [(0, 0, 2)]).spilled_past(book)
        assert not TallRangeCuts({(0, 0, 3): "=1"}, {0: 5}, [(0, 0, 2)]).spilled_past(book)
    finally:
        book.close()


def test_formulon_gives_excels_cached_values_of_task_68_47_through_the_cuts():
    """134 COUNTIF over H$7:H$1048576 in the graded column I, saved by Excel with its values."""
    import openpyxl

    task = SHARED / "spreadsheet" / "68-47"
    if not task.is_dir():
        pytest.skip(SHARED_ABSENT)
    require_engines("formulon")
    import formulon

    from regrade.engines.formulon import FormulonEngine, cut_tall_ranges

    for path in sorted(Path(task).glob("*_answer.xlsx")):
        sheet = openpyxl.load_workbook(path, data_only=True)["2023"]
        cells = [CellRef("2023", row, 9) for row in range(7, 141)]
        engine = FormulonEngine()
        engine.start()
        values = engine.evaluate(path, cells)
        cached = [sheet.cell(cell.row, 9).value for cell in cells]
        assert [values.cells[cell] if values.cells[cell] is not None else "" for cell in cells] == \
            [value if value is not None else "" for value in cached]
        assert any(value for value in cached)  # the column is not all blank
        book = formulon.Workbook.load(path.read_bytes())
        try:
            cuts = cut_tall_ranges(WorkbookAnalysis(path), book)
            assert cuts is not None and len(cuts.originals) >= 134
        finally:
            book.close()
