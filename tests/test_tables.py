"""Structured references resolved from table parts, and IronCalc's formula workarounds."""

import pytest

from regrade.values import CellRef
from regrade.engines.ironcalc.engine import IronCalcEngine
from regrade.workbook.structured import TablePart, resolve_structured


# Sales is A1:D4 on Sheet1 (header row 1; Item, Qty, Price, Total); Stock is A1:B5 on 'S 2'
# (header row 1, totals row 5; Name, Units). Each expected range is read off that layout by hand.
TABLES = {"sales": TablePart("Sales", "Sheet1", 1, 1, 4, 4, 1, 0, ("Item", "Qty", "Price", "Total")),
          "stock": TablePart("Stock", "S 2", 1, 1, 2, 5, 1, 1, ("Name", "Units"))}


@pytest.mark.parametrize("formula, row, column, expected", [
    ("=SUM(Sales[Qty])", 1, 6, "=SUM('Sheet1'!$B$2:$B$4)"),
    ("=Sales[[#Headers],[Qty]]", 1, 6, "='Sheet1'!$B$1"),
    ("=SUM(Sales[[Qty]:[Price]])", 1, 6, "=SUM('Sheet1'!$B$2:$C$4)"),
    ("=ROWS(Sales[#All])", 1, 6, "=ROWS('Sheet1'!$A$1:$D$4)"),
    ("=ROWS(Sales[#Data])", 1, 6, "=ROWS('Sheet1'!$A$2:$D$4)"),
    ("=Sales[[#This Row],[Qty]]*Sales[@Price]", 3, 4, "='Sheet1'!$B$3*'Sheet1'!$C$3"),
    ("=[@Qty]*[@[Price]]", 3, 4, "='Sheet1'!$B$3*'Sheet1'!$C$3"),
    ("=Stock[[#Totals],[Units]]", 1, 6, "='S 2'!$B$5"),
    ("=SUM(Sales[[#Headers],[#Data],[Qty]])", 1, 6, "=SUM('Sheet1'!$B$1:$B$4)"),
    ('="Sales[Qty]"&Sales[@Item]', 2, 9, '="Sales[Qty]"&\'Sheet1\'!$A$2'),  # text untouched
    ("=[1]Sheet1!A1+Nope[Qty]", 1, 9, "=[1]Sheet1!A1+Nope[Qty]"),  # external link, unknown table: left
    ("=[@Qty]", 9, 9, "=[@Qty]"),  # outside any table: left for the engine to refuse
])
def test_structured_references_resolve_to_ranges(formula, row, column, expected):
    assert resolve_structured(formula, "Sheet1", row, column, TABLES) == expected


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


def test_the_spreadsheetbench_68_47_pattern_computes_in_ironcalc(workbook):
    # task 68-47: IF(COUNTIF(C7, "*AFS/FSTC"), ...) gave #VALUE! in IronCalc for every row.
    # C1 ends in AFS/FSTC, so COUNTIF is 1 and the IF takes its first branch.
    path = workbook({"C1": "xx AFS/FSTC", "D1": '=IF(C1="","",IF(COUNTIF(C1, "*AFS/FSTC"),"Corresponding Entry","no"))'})
    values = IronCalcEngine().evaluate(path, [CellRef("Sheet1", 1, 4)])
    assert values.cells == {CellRef("Sheet1", 1, 4): "Corresponding Entry"}
    assert "C1:C1" not in values.formulas[CellRef("Sheet1", 1, 4)]  # the original is reported, not the rewrite


def test_an_array_formula_over_a_table_and_the_whole_sheet_computes_in_ironcalc(tmp_path):
    import openpyxl
    from openpyxl.worksheet.formula import ArrayFormula
    from openpyxl.worksheet.table import Table

    book = openpyxl.Workbook()
    data = book.active
    data.title = "Data"
    data.append(["Qty", "Price"])
    data.append([2, 3])
    data.append([4, 5])
    data.add_table(Table(displayName="Sales", ref="A1:B3"))
    report = book.create_sheet("Report")
    # INDEX over the whole sheet at row 3, column 1 of Data (4), plus an AGGREGATE over the table body:
    # the largest of 2, 3, 4, 5 is 5, so 4 + 5 = 9
    report["A1"] = ArrayFormula("A1", "=INDEX(Data!$1:$1048576,3,1)+_xlfn.AGGREGATE(14,6,Sales[],1)")
    path = tmp_path / "whole.xlsx"
    book.save(path)
    assert IronCalcEngine().evaluate(path, [CellRef("Report", 1, 1)]).cells == {CellRef("Report", 1, 1): 9.0}
