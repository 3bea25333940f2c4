"""Cells no engine can recompute as the saving Excel did: dates typed as text read by Excel's locale."""

import pytest

from regrade.values import CellRef
from regrade.engines.ironcalc.engine import IronCalcEngine
from regrade.engines.unrepeatable import text_date


@pytest.mark.parametrize("text, expected", [
    ("01/09/2020 15:02:40", True),  # SpreadsheetBench 59643: 1 September to a day-first Excel, 9 January here
    ("PAID ON 16.02.24--96072", True),  # 30709: 16 February 2024 day first, no date month first
    ("3-4-21", True),
    ("2024-02-16", False),  # year first reads the same everywhere
    ("version 1.2.3", False),  # a one-digit year is no year
    ("192.168.1.10", False),
    ("12-34-5678", False),  # 34 is no day and no month
    ("Invoice 40-50-2020", False),
    ("no date here", False),
])
def test_dates_with_day_and_month_in_numbers(text, expected):
    assert text_date(text) is expected


def test_a_value_that_reads_a_date_typed_as_text_is_an_abstention(workbook):
    # 59643: =INT(A1) with A1 "01/09/2020 15:02:40" is 44075 (1 Sep 2020) in the Excel that saved
    # it; IronCalc, like every engine here, reads 9 Jan 2020. B2 reads B1; B3 reads only A3.
    path = workbook({"A1": "01/09/2020 15:02:40", "A3": 5, "B1": "=INT(A1)", "B2": "=B1+1", "B3": "=A3*2",
                     "B4": '=LEN("01/09/2020")'})
    cells = [CellRef("Sheet1", row, 2) for row in (1, 2, 3, 4)]
    values = IronCalcEngine().evaluate(path, cells).cells
    assert [values[c].reason for c in cells[:2]] == ["locale-date"] * 2
    assert "locale" in values[cells[0]].detail
    assert values[cells[2]] == 10
    assert values[cells[3]] == 10  # a date in the formula's own text is left alone: only cells read count


def test_a_date_text_only_compared_or_matched_is_computed(workbook):
    # SpreadsheetBench 49939 matches TEXT(date, "dd-mm-yyyy") against headers typed "31-03-2021":
    # text against text, the same in every locale. C1 = the column of the header for 31 Mar 2021.
    path = workbook({"A1": "30-03-2021", "B1": "31-03-2021", "D1": 44286,
                     "C1": '=MATCH(TEXT(D1,"dd-mm-yyyy"),A1:B1,0)'})
    values = IronCalcEngine().evaluate(path, [CellRef("Sheet1", 1, 3)]).cells
    assert values[CellRef("Sheet1", 1, 3)] == 2  # 44286 is 31 March 2021


@pytest.mark.parametrize("text, expected", [
    ("01/09/2020 15:02:40", True), ("23.11.21 22:04", True), ("3-1-21", True), (" 07/10/21 ", True),
    ("5/31/2021 4:05 PM", True), ("Go Live 1/3/18", False), ("PAID ON 16.02.24--96072", False),
])
def test_texts_that_are_a_date_whole(text, expected):
    from regrade.engines.unrepeatable import whole_text_date

    assert whole_text_date(text) is expected


def test_a_date_inside_a_longer_text_counts_only_where_a_formula_takes_it_out(workbook):
    # SpreadsheetBench 30709: SUBSTITUTE(MID(D1,9,8),".","/")+0 reads "16.02.24" out of the text:
    # 16 Feb 2024 to a day-first Excel. B2 adds to a label holding a date: #VALUE! everywhere.
    path = workbook({"D1": "PAID ON 16.02.24--96072", "D2": "Go Live 1/3/18",
                     "B1": '=SUBSTITUTE(MID(D1,9,8),".","/")+0', "B2": '=IFERROR(D2+1,"no")'})
    values = IronCalcEngine().evaluate(path, [CellRef("Sheet1", 1, 2), CellRef("Sheet1", 2, 2)]).cells
    assert values[CellRef("Sheet1", 1, 2)].reason == "locale-date"
    assert values[CellRef("Sheet1", 2, 2)] == "no"


def test_a_date_text_written_inline_is_found(tmp_path):
    import zipfile

    # Some writers put strings in the sheet (t="inlineStr") rather than in shared strings.
    # Rewrite a workbook's A1 so: =INT(A1) then reads the inline "01/09/2020".
    import openpyxl

    book = openpyxl.Workbook()
    book.active.title = "Sheet1"
    book.active["A1"] = 5
    book.active["B1"] = "=INT(A1)"
    book.save(tmp_path / "plain.xlsx")
    with zipfile.ZipFile(tmp_path / "plain.xlsx") as source, zipfile.ZipFile(tmp_path / "inline.xlsx", "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b'<c r="A1" t="n"><v>5</v></c>', b'<c r="A1" t="inlineStr"><is><t>01/09/2020</t></is></c>')
                assert b"inlineStr" in data
            target.writestr(info, data)
    values = IronCalcEngine().evaluate(tmp_path / "inline.xlsx", [CellRef("Sheet1", 1, 2)]).cells
    assert values[CellRef("Sheet1", 1, 2)].reason == "locale-date"


@pytest.mark.parametrize("formula, expected", [
    ("=INDEX($K$3:$K$22,MATCH($B4&C$3,$I$3:$I$22&$J$3:$J$22,0))", True),  # SpreadsheetBench 39931
    ("=IFERROR(A5-INDEX($A$1:A4,MATCH(2,(1/(B5=$B$1:B4)))),0)", True),
    ("=INDEX($E9:$AN9,,MATCH(TRUE,INDEX($E9:$AN9<>0,),0))", False),  # INDEX(...,) computes the array (9569)
    ("=MATCH(G4,'Admin & Settings'!$U$5:$U$66,0)", False),  # a range alone; the & is the sheet's name
    ("=MATCH(A1&B1,C:C,0)", False),  # the operator is in the lookup value
])
def test_lookup_arrays_computed_from_ranges(formula, expected):
    from regrade.engines.unrepeatable import intersects_implicitly

    assert intersects_implicitly(formula) is expected


def test_a_plain_formula_whose_lookup_array_excel_intersects_is_an_abstention(workbook, tmp_path):
    # SpreadsheetBench 39931, case 3: saved as a plain formula, Excel computes it as a legacy one
    # (implicit intersection) and caches #VALUE!; every engine here computes the array, 23.56.
    # Entered as an array formula, it is computed: B1&C1 = "xA" is the 2nd of I&J, K2 = 23.56.
    import openpyxl
    from openpyxl.worksheet.formula import ArrayFormula

    cells = {"B1": "x", "C1": "A", "I1": "w", "J1": "A", "K1": 10.74, "I2": "x", "J2": "A", "K2": 23.56,
             "D1": "=INDEX($K$1:$K$2,MATCH($B1&C$1,$I$1:$I$2&$J$1:$J$2,0))", "E1": "=D1*2"}
    plain = workbook(cells)
    values = IronCalcEngine().evaluate(plain, [CellRef("Sheet1", 1, 4), CellRef("Sheet1", 1, 5)]).cells
    assert [values[CellRef("Sheet1", 1, c)].reason for c in (4, 5)] == ["implicit-intersection"] * 2
    book = openpyxl.load_workbook(plain)
    book.active["D1"] = ArrayFormula("D1", cells["D1"])
    book.save(array := tmp_path / "array.xlsx")
    values = IronCalcEngine().evaluate(array, [CellRef("Sheet1", 1, 4), CellRef("Sheet1", 1, 5)]).cells
    assert values[CellRef("Sheet1", 1, 4)] == 23.56
    assert values[CellRef("Sheet1", 1, 5)] == 47.12


def test_an_approximate_xlookup_over_empty_cells_is_an_abstention(workbook):
    # SpreadsheetBench 57448: XLOOKUP(0.5, FILTER(row), headers, "", 1) over a row with empty cells
    # is the header of the first empty cell in Excel (20), "" in every engine here (no number is
    # 0.5 or more). Over a row without empty cells the next larger value is found by hand:
    # 0.5 -> 0.6 in B1 -> header "b".
    cells = {"A1": 0.1, "B1": 0.6, "C1": 0.2, "A2": "a", "B2": "b", "C2": "c",
             "D1": '=_xlfn.XLOOKUP(0.5,A1:C1,A2:C2,"",1)', "D2": '=_xlfn.XLOOKUP(0.5,A1:C1,A2:C2,"")'}
    refs = [CellRef("Sheet1", 1, 4), CellRef("Sheet1", 2, 4)]
    values = IronCalcEngine().evaluate(workbook(cells), refs).cells
    assert [values[r] for r in refs] == ["b", ""]
    values = IronCalcEngine().evaluate(workbook({**cells, "B1": None}, name="gap.xlsx"), refs).cells
    assert values[refs[0]].rule == "approximate-lookup-over-empty" and "empty" in values[refs[0]].detail
    assert values[refs[1]] == ""  # an exact match does not rank empty cells
