"""Rewriting [@Col] into the form Excel saves, and AGGREGATE chains in IronCalc."""

from engines.base import CellRef
from engines.ironcalc_ import IronCalcEngine
from engines.tables import rewrite_this_row


def test_qualified_and_unqualified_this_row_references():
    assert rewrite_this_row("=Sales[@Qty]*Sales[@Price]", None) == (
        "=Sales[[#This Row],[Qty]]*Sales[[#This Row],[Price]]")
    assert rewrite_this_row("=[@Qty]*2", "Sales") == "=Sales[[#This Row],[Qty]]*2"
    assert rewrite_this_row("=[@[Unit Price]]+1", "Sales") == "=Sales[[#This Row],[Unit Price]]+1"
    assert rewrite_this_row('=[@Qty]&"[@Qty]"', "Sales") == '=Sales[[#This Row],[Qty]]&"[@Qty]"'  # text untouched
    assert rewrite_this_row("=[@Qty]", None) == "=[@Qty]"  # outside any table: left for the engine to refuse


def test_an_aggregate_reading_another_aggregate_converges(workbook):
    # A3 = SUM of A1:A2 ignoring errors = 1 + 2 = 3; B1 = MAX of A1:A3 = 3; B2 = B1 * 10 = 30
    path = workbook({"A1": 1, "A2": 2, "A3": "=_xlfn.AGGREGATE(9,6,A1:A2)",
                     "B1": "=_xlfn.AGGREGATE(4,4,A1:A3)", "B2": "=B1*10"})
    cells = [CellRef("Sheet1", 3, 1), CellRef("Sheet1", 1, 2), CellRef("Sheet1", 2, 2)]
    values = IronCalcEngine().evaluate(path, cells)
    assert [values.cells[c] for c in cells] == [3.0, 3.0, 30.0]
    assert values.formulas[cells[1]].lower() == "=_xlfn.aggregate(4,4,a1:a3)"  # the original is reported


def test_aggregate_inside_a_larger_formula(workbook):
    # INDEX(B1:B4, SMALL row of the rows marked y): rows 2 and 4 are y; the 2nd is row 4 -> "d"
    path = workbook({"A1": "x", "A2": "y", "A3": "x", "A4": "y", "B1": "a", "B2": "b", "B3": "c", "B4": "d",
                     "C1": '=INDEX(B1:B4,_xlfn.AGGREGATE(15,6,ROW(A1:A4)/(A1:A4="y"),2))'})
    assert IronCalcEngine().evaluate(path, [CellRef("Sheet1", 1, 3)]).cells == {CellRef("Sheet1", 1, 3): "d"}


def test_single_cell_criteria_ranges_are_widened_only_in_range_positions():
    from engines.ironcalc_rewrites import widen_criteria_ranges as widen

    assert widen('=COUNTIF(A1,"a*")') == '=COUNTIF(A1:A1,"a*")'
    assert widen('=COUNTIFS(A1,"x",Sheet2!B2,">1")') == '=COUNTIFS(A1:A1,"x",Sheet2!B2:B2,">1")'
    assert widen('=SUMIFS(C1,A1,"x")') == '=SUMIFS(C1:C1,A1:A1,"x")'
    assert widen("=COUNTIF(A1:A5,B1)") == "=COUNTIF(A1:A5,B1)"  # B1 is the criterion, not a range
    assert widen('=COUNTIF(A1,"COUNTIF(A1,1)")') == '=COUNTIF(A1:A1,"COUNTIF(A1,1)")'  # text untouched
    assert widen("=SUM(A1)") == "=SUM(A1)"


def test_the_spreadsheetbench_68_47_pattern_computes_in_ironcalc(workbook):
    # task 68-47: IF(COUNTIF(C7, "*AFS/FSTC"), ...) gave #VALUE! in IronCalc for every row.
    # C1 ends in AFS/FSTC, so COUNTIF is 1 and the IF takes its first branch.
    path = workbook({"C1": "xx AFS/FSTC", "D1": '=IF(C1="","",IF(COUNTIF(C1, "*AFS/FSTC"),"Corresponding Entry","no"))'})
    values = IronCalcEngine().evaluate(path, [CellRef("Sheet1", 1, 4)])
    assert values.cells == {CellRef("Sheet1", 1, 4): "Corresponding Entry"}
    assert "C1:C1" not in values.formulas[CellRef("Sheet1", 1, 4)]  # the original is reported, not the rewrite
