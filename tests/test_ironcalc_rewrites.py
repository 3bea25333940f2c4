"""The formula rewrites around IronCalc's defects (engines/range_rewrites.py): the text they
produce, and the values IronCalc computes through them against values worked out by hand."""

from regrade.values import CellRef
from regrade.engines.ironcalc.engine import IronCalcEngine
from regrade.engines.range_rewrites import rewrite_range_arguments as rewrite


def test_single_cell_criteria_ranges_are_widened_only_in_range_positions():
    assert rewrite('=COUNTIF(A1,"a*")') == '=COUNTIF(A1:A1,"a*")'
    assert rewrite('=COUNTIFS(A1,"x",Sheet2!B2,">1")') == '=COUNTIFS(A1:A1,"x",Sheet2!B2:B2,">1")'
    assert rewrite('=SUMIFS(C1,A1,"x")') == '=SUMIFS(C1:C1,A1:A1,"x")'
    assert rewrite("=COUNTIF(A1:A5,B1)") == "=COUNTIF(A1:A5,B1)"  # B1 is the criterion, not a range
    assert rewrite('=COUNTIF(A1,"COUNTIF(A1,1)")') == '=COUNTIF(A1:A1,"COUNTIF(A1,1)")'  # text untouched
    assert rewrite("=SUM(A1)") == "=SUM(A1)"


def test_ranges_to_the_sheets_end_are_cut_at_its_last_used_row():
    last = {None: 144, "Data": 50}.get
    # a count gets the blank rows cut off back: their number times the count of one blank cell
    assert rewrite("=IF(COUNTIF(H$7:H$1048576,-ABS(H34))<2,1,0)", last) == (
        "=IF((COUNTIF(H$7:H$144,-ABS(H34))+1048432*COUNTIF($XFD$1048576:$XFD$1048576,-ABS(H34)))<2,1,0)")
    assert rewrite('=COUNTIFS(Data!A2:A1048576,">1",Data!B2:B1048576,C1)', last) == (
        '=(COUNTIFS(Data!A2:A50,">1",Data!B2:B50,C1)'
        '+1048526*COUNTIFS($XFD$1048576:$XFD$1048576,">1",$XFD$1048576:$XFD$1048576,C1))')
    # blank rows add nothing to a sum: cut only
    assert rewrite('=SUMIF(A1:A1048576,"x",B1:B1048576)', last) == '=SUMIF(A1:A144,"x",B1:B144)'
    # left alone: ranges of different rows, a sheet not in the workbook, a range that ends near the data
    assert rewrite('=SUMIF(A1:A1048576,"x",B2:B1048576)', last) == '=SUMIF(A1:A1048576,"x",B2:B1048576)'
    assert rewrite("=COUNTIF(Nope!A1:A1048576,1)", last) == "=COUNTIF(Nope!A1:A1048576,1)"
    assert rewrite("=COUNTIF(A1:A5000,1)", last) == "=COUNTIF(A1:A5000,1)"


def test_cut_ranges_give_the_values_of_the_whole_ranges(workbook):
    # Rows 2-4 hold A = x, 5, y and B = 10, blank, blank; rows 5 to 1,048,576 are blank. The
    # ranges start at row 2 (IronCalc reads A1:A1048576 as the whole column A:A, which it handles).
    path = workbook({"A2": "x", "A3": 5, "A4": "y", "B2": 10,
                     "D1": '=COUNTIF(A$2:A$1048576,"")',  # the blank rows: 1,048,575 - 3
                     "D2": '=COUNTIF(A2:A1048576,"<>5")',  # every cell but A3, blanks included
                     "D3": "=COUNTIF(A2:A1048576,5)",  # A3
                     "D4": '=SUMIF(A2:A1048576,"x",B2:B1048576)',  # B2
                     "D5": '=COUNTIFS(A2:A1048576,"",B2:B1048576,"")',  # rows 5 onwards: both blank
                     "D6": '=AVERAGEIF(A2:A1048576,"<>5",B2:B1048576)',  # B2; blank B cells are skipped
                     "D7": '=AVERAGEIF(A2:A1048576,"y",B2:B1048576)'})  # B4 is blank: nothing to average
    cells = [CellRef("Sheet1", row, 4) for row in range(1, 8)]
    values = IronCalcEngine().evaluate(path, cells)
    assert [values.cells[c] for c in cells[:6]] == [1_048_572, 1_048_574, 1, 10, 1_048_572, 10]
    assert str(values.cells[cells[6]]) == "#DIV/0!"
    assert values.formulas[cells[0]] == '=COUNTIF(A$2:A$1048576,"")'  # the file's formula is reported


def test_formulas_counts_through_cut_ranges_what_it_missed_in_whole_ones(workbook):
    from regrade.engines.formulas import FormulasEngine

    # A2:A4 = x, 5, y and B2 = 10, as above; formulas 1.3.4 counts nothing in ranges to row 1,048,576
    path = workbook({"A2": "x", "A3": 5, "A4": "y", "B2": 10,
                     "D1": "=COUNTIF(A2:A1048576,5)",  # A3
                     "D2": '=SUMIF(A2:A1048576,"x",B2:B1048576)',  # B2
                     "D3": '=COUNTIFS(A2:A1048576,">1",B2:B1048576,"<20")',  # A3 > 1, but B3 is blank: 0
                     "D4": '=COUNTIF(A2:A1048576,"y")'})  # A4
    cells = [CellRef("Sheet1", row, 4) for row in range(1, 5)]
    values = FormulasEngine().evaluate(path, cells)
    assert [values.cells[c] for c in cells] == [1, 10, 0, 1]
    assert values.formulas[cells[0]] == "=COUNTIF(A2:A1048576,5)"  # the file's formula is reported


def test_exact_lookups_over_whole_columns_are_cut_and_approximate_ones_left_alone():
    last = {None: 144, "Data": 50}.get
    assert rewrite("=VLOOKUP(A1,Data!$B:$Z,9,FALSE)", last) == "=VLOOKUP(A1,Data!$B$1:$Z$50,9,FALSE)"
    assert rewrite("=INDEX(C:C,MATCH(A1,B1:B1048576,0))", last) == "=INDEX(C:C,MATCH(A1,B1:B144,0))"
    assert rewrite("=VLOOKUP(A1,B:C,2,0)", last) == "=VLOOKUP(A1,B$1:C$144,2,0)"
    # an approximate match's binary search depends on the range's size: left alone
    for formula in ("=VLOOKUP(A1,B:C,2)", "=VLOOKUP(A1,B:C,2,TRUE)", "=MATCH(A1,B:B)", "=MATCH(A1,B:B,-1)"):
        assert rewrite(formula, last) == formula
    assert rewrite("=VLOOKUP(A1,Nope!B:C,2,FALSE)", last) == "=VLOOKUP(A1,Nope!B:C,2,FALSE)"  # no such sheet
    assert rewrite("=COUNTIF(A:A,1)", last) == "=COUNTIF(A:A,1)"  # IronCalc is quick on these already


def test_cut_lookups_give_the_values_of_the_whole_columns(workbook):
    # A2:A4 = x, 5, y and B2:B4 = 10, blank, 30; every row below is blank
    path = workbook({"A2": "x", "A3": 5, "A4": "y", "B2": 10, "B4": 30,
                     "D1": '=VLOOKUP("y",A:B,2,FALSE)',  # row 4: B4
                     "D2": "=MATCH(5,A:A,0)",  # A3 is the 3rd cell of the column
                     "D3": '=MATCH("*",$A:$A,0)',  # a wildcard matches text only: A2, not blank A1
                     "D4": '=VLOOKUP("z",A$1:B$1048576,2,0)',  # nowhere: #N/A
                     "D5": '=IFERROR(VLOOKUP(5,A:B,2,FALSE),"none")'})  # B3 is blank: 0
    cells = [CellRef("Sheet1", row, 4) for row in range(1, 6)]
    values = IronCalcEngine().evaluate(path, cells)
    assert [values.cells[c] for c in cells[:3]] == [30, 3, 2]
    assert str(values.cells[cells[3]]) == "#N/A"
    assert values.cells[cells[4]] == 0
    assert values.formulas[cells[0]] == '=VLOOKUP("y",A:B,2,FALSE)'  # the file's formula is reported


def test_unique_of_an_elementwise_expression_over_whole_columns_is_cut_one_row_past_the_data():
    last = {None: 15, "Data": 50}.get
    assert rewrite('=TEXTJOIN(",",TRUE,UNIQUE(IF(A2=Data!A:A,Data!C:C,"")))', last) == (
        '=TEXTJOIN(",",TRUE,UNIQUE(IF(A2=Data!A$1:A$51,Data!C$1:C$51,"")))')
    assert rewrite("=SUM(UNIQUE(A1:A1048576&B1:B1048576))", last) == "=SUM(UNIQUE(A1:A16&B1:B16))"
    # left alone: a position (ROW), an aggregate inside, exactly_once (it counts repeats), ranges of
    # different rows, a sheet not in the workbook, a name
    for formula in ('=UNIQUE(IF(A2=A:A,ROW(A:A),""))', "=UNIQUE(IF(A:A>SUM(B:B),1,0))", "=UNIQUE(A:A,,TRUE)",
                    "=UNIQUE(A1:A1048576&B2:B1048576)", "=UNIQUE(IF(A2=Nope!A:A,Nope!C:C))", "=UNIQUE(Names&A:A)"):
        assert rewrite(formula, last) == formula


def test_cut_unique_gives_the_values_of_the_whole_columns(workbook):
    # A2:A5 = k, m, k, k and B2:B5 = 1, 2, 3, 1; row 1 and every row below 5 are blank. By hand:
    # IF(A="k", B, "") over the whole columns is "", 1, "", 3, 1 and then "" for every blank row,
    # so the distinct values in first-seen order are "", 1, 3: joined skipping empty texts "1,3",
    # without skipping them ",1,3". Array formulas, as Excel saves them (45896).
    from openpyxl.worksheet.formula import ArrayFormula

    unique = '_xlfn.UNIQUE(IF("k"=A:A,B:B,""))'
    path = workbook({"A2": "k", "A3": "m", "A4": "k", "A5": "k", "B2": 1, "B3": 2, "B4": 3, "B5": 1,
                     "D1": ArrayFormula("D1", f'=_xlfn.TEXTJOIN(",",TRUE,{unique})'),
                     "D2": ArrayFormula("D2", f'=_xlfn.TEXTJOIN(",",FALSE,{unique})'),
                     "D3": ArrayFormula("D3", f"=ROWS({unique})")})
    cells = [CellRef("Sheet1", row, 4) for row in range(1, 4)]
    values = IronCalcEngine().evaluate(path, cells)
    assert [values.cells[c] for c in cells] == ["1,3", ",1,3", 3]


def test_sumproduct_of_operators_over_whole_columns_is_cut_and_the_blank_rows_counted():
    last = {None: 15, "Data": 50}.get
    assert rewrite("=SUMPRODUCT((Data!I:I=A3)*(Data!Q:Q=L3))", last) == (
        "=(SUMPRODUCT((Data!I$1:I$50=A3)*(Data!Q$1:Q$50=L3))"
        "+1048526*SUMPRODUCT(($XFD$1048576:$XFD$1048576=A3)*($XFD$1048576:$XFD$1048576=L3)))")
    assert rewrite("=SUMPRODUCT(A:A,B:B)", last) == (
        "=(SUMPRODUCT(A$1:A$15,B$1:B$15)+1048561*SUMPRODUCT($XFD$1048576:$XFD$1048576,$XFD$1048576:$XFD$1048576))")
    # left alone: a function inside (IF needs an array formula in Excel before 365), a range of two
    # columns (a blank row is two elements), an argument with no tall range, different rows, a name
    for formula in ('=SUMPRODUCT(IF(A:A="k",1,0))', "=SUMPRODUCT(A:B)", "=SUMPRODUCT(A:A,2)",
                    "=SUMPRODUCT(A1:A1048576*B2:B1048576)", "=SUMPRODUCT(Names*A:A)"):
        assert rewrite(formula, last) == formula


def test_max_and_min_of_an_elementwise_expression_over_whole_columns_are_cut_in_array_formulas_only():
    last = {None: 1998, "Data": 50}.get
    assert rewrite('=MAX(IF(F:F=A2,G:G,""))', last, array=True) == '=MAX(IF(F$1:F$1999=A2,G$1:G$1999,""))'
    assert rewrite("=MIN(IF(Data!A:A=1,Data!B:B))", last, array=True) == "=MIN(IF(Data!A$1:A$51=1,Data!B$1:B$51))"
    assert rewrite('=IF(MAX(IF(A2=$F:$F,$G:$G)),1,"")', last, array=True) == '=IF(MAX(IF(A2=$F$1:$F$1999,$G$1:$G$1999)),1,"")'
    # left alone: a plain formula (implicit intersection before Excel 365), a position (ROW), MAXA
    # (it counts text), two arguments, ranges of different rows
    assert rewrite('=MAX(IF(F:F=A2,G:G,""))', last) == '=MAX(IF(F:F=A2,G:G,""))'
    for formula in ("=MAX(IF(F:F=A2,ROW(F:F)))", '=MAXA(IF(F:F=A2,G:G,""))', "=MAX(IF(F:F=A2,G:G),0)",
                    "=MIN(IF(F1:F1048576=A2,G2:G1048576))"):
        assert rewrite(formula, last, array=True) == formula

