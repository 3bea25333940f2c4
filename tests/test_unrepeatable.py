"""Cells no engine can recompute as the saving Excel did: dates typed as text read by Excel's locale."""

import pytest

from engines.base import CellRef
from engines.ironcalc_ import IronCalcEngine
from engines.unrepeatable import text_date


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
    assert "01/09/2020" in values[cells[0]].detail
    assert values[cells[2]] == 10
    assert values[cells[3]] == 10  # a date in the formula's own text is left alone: only cells read count


def test_a_date_text_only_compared_or_matched_is_computed(workbook):
    # SpreadsheetBench 49939 matches TEXT(date, "dd-mm-yyyy") against headers typed "31-03-2021":
    # text against text, the same in every locale. C1 = the column of the header for 31 Mar 2021.
    path = workbook({"A1": "30-03-2021", "B1": "31-03-2021", "D1": 44286,
                     "C1": '=MATCH(TEXT(D1,"dd-mm-yyyy"),A1:B1,0)'})
    values = IronCalcEngine().evaluate(path, [CellRef("Sheet1", 1, 3)]).cells
    assert values[CellRef("Sheet1", 1, 3)] == 2  # 44286 is 31 March 2021
