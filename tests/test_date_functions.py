"""Excel's 1900 date system in engines/functions/dates.py, checked against openpyxl's own
converter (an independent implementation) and against Excel's documented quirks."""

import calendar
import datetime as dt

import pytest
from openpyxl.utils.datetime import from_excel

from regrade.values import ExcelError
from regrade.engines.functions.dates import day, edate, eomonth, month, year
from regrade.engines.functions.lookup import NotImplementedMode

NUM = ExcelError("#NUM!")


@pytest.mark.parametrize("serial", [1, 2, 31, 32, 59, 61, 62, 366, 10_000, 44_927, 45_000, 2_958_465])
def test_year_month_day_agree_with_openpyxl(serial):
    date = from_excel(serial)
    assert (year(float(serial)), month(float(serial)), day(float(serial))) == (date.year, date.month, date.day)


def test_the_quirks_excel_documents():
    # serial 0 is "January 0, 1900" (an empty cell); serial 60 is the 29 February 1900 Excel keeps
    # for Lotus 1-2-3 compatibility (Microsoft KB 214326)
    assert (year(None), month(None), day(None)) == (1900, 1, 0)
    assert (year(60.0), month(60.0), day(60.0)) == (1900, 2, 29)
    assert day(59.9) == 28  # the fraction is the time of day
    assert year(-1.0) == NUM and year(2_958_466.0) == NUM
    assert year(True) == 1900 and day("5") == 5
    assert year(ExcelError("#N/A")) == ExcelError("#N/A")
    with pytest.raises(NotImplementedMode):
        year("16.02.2024")  # a date typed as text in an order that depends on the locale: left to the engine
    with pytest.raises(NotImplementedMode):
        month("3/4/2020")  # 4 March or 3 April


def test_dates_typed_with_a_month_name_or_in_iso_order_are_read():
    # SpreadsheetBench task 46646: EOMONTH(1&"Jan"&2016, 0); Excel's cached answers need 31 days
    # for January 2016 and 29 for February 2016
    assert eomonth("1Jan2016", 0) == _serial(dt.date(2016, 1, 31))
    assert day(eomonth("1Feb2016", 0)) == 29
    assert year("15 March 2021") == 2021 and month("Feb 3, 2020") == 2 and day("2020-02-03") == 3
    assert year("1-Jan-99") == 1999 and year("1-Jan-29") == 2029  # Excel's two-digit years: 00-29 are 20xx
    assert month("1 Foo 2020") == ExcelError("#VALUE!") and day("31 Feb 2020") == ExcelError("#VALUE!")


def _serial(date: dt.date) -> float:
    # independent of dates.py: days since 1899-12-30, which is Excel's serial from 1900-03-01 on
    return float((date - dt.date(1899, 12, 30)).days)


@pytest.mark.parametrize("start, months", [(44_927, 0), (44_927, 1), (44_927, -13), (45_000, 11), (61, 0), (400, 25)])
def test_eomonth_and_edate_agree_with_the_calendar(start, months):
    date = from_excel(start).date()
    index = date.year * 12 + date.month - 1 + months
    y, m = divmod(index, 12)
    last = calendar.monthrange(y, m + 1)[1]
    assert eomonth(float(start), float(months)) == _serial(dt.date(y, m + 1, last))
    assert edate(float(start), float(months)) == _serial(dt.date(y, m + 1, min(date.day, last)))


def test_eomonth_and_edate_in_the_first_months_of_1900():
    assert eomonth(None, 0.0) == 31  # an empty start: the end of January 1900, serial 31
    assert eomonth(15.0, 0.0) == 31
    assert eomonth(40.0, 0.0) == 60  # February 1900 ends on its fictitious 29th
    assert eomonth(0.0, 2.0) == 91  # 31 March 1900
    assert eomonth(10.0, -1.0) == NUM  # December 1899 is before serial 1
    assert eomonth(10.0, 1.9) == 60  # months are truncated
    assert edate(31.0, 1.0) == 60  # 31 January + 1 month: the last day of February, the 29th
    assert edate(None, 1.0) == 31  # "1 February 0" is 31 January
    assert edate(61.0, -1.0) == 32  # 1 March 1900 - 1 month: 1 February 1900
