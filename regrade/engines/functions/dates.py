"""YEAR, MONTH, DAY, EOMONTH and EDATE in Excel's 1900 date system, quirks included.

Excel counts days from serial 1 = 1900-01-01 and keeps Lotus 1-2-3's mistake of a
29 February 1900 (serial 60), so serials 1 to 59 are one day off the real calendar
and serial 0 is "January 0, 1900": ``YEAR(0)`` is 1900, ``DAY(0)`` is 0 and
``EOMONTH(0, 0)`` is 31 (an empty cell is 0). IronCalc 0.9.1 dates serials below 61
from 1899-12-30 instead (``DAY(1)`` is 31, ``EOMONTH(0, 0)`` is ``#NUM!``), which is
why :mod:`regrade.engines.ironcalc.bridge` computes these functions here.

Arguments are plain values (float, bool, None, str) or :class:`ExcelError`. A date typed
as text is read when its month is a name, as Excel reads it in any locale (``1Jan2016``,
``15 March 2021``, ``Feb 3, 2020``) or in ISO order (``2020-02-03``); any other text that
is not a number (``3/4/2020`` reads differently by locale) raises
:class:`NotImplementedMode` so that the engine's own answer stands.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re

from regrade.values import ExcelError
from regrade.engines.functions.lookup import NotImplementedMode
from regrade.engines.functions.values import as_number

NUM, VALUE = ExcelError("#NUM!"), ExcelError("#VALUE!")
LAST_SERIAL = 2_958_465  # 9999-12-31
_EPOCH = dt.date(1899, 12, 30)  # serial 61 and later count from here
_LEAP_DAY = 60  # the 29 February 1900 that never was


def year(serial: object) -> object:
    parts = _parts(serial)
    return parts if isinstance(parts, ExcelError) else float(parts[0])


def month(serial: object) -> object:
    parts = _parts(serial)
    return parts if isinstance(parts, ExcelError) else float(parts[1])


def day(serial: object) -> object:
    parts = _parts(serial)
    return parts if isinstance(parts, ExcelError) else float(parts[2])


def eomonth(start: object, months: object) -> object:
    """The serial of the last day of the month ``months`` after ``start``'s month."""
    moved = _moved(start, months)
    if isinstance(moved, ExcelError):
        return moved
    _, y, m = moved
    return _serial(y, m, _days_in(y, m))


def edate(start: object, months: object) -> object:
    """The serial of the same day ``months`` later (the month's last day where it is shorter)."""
    moved = _moved(start, months)
    if isinstance(moved, ExcelError):
        return moved
    parts, y, m = moved
    if parts[2] == 0:  # "January 0" moved on is the day before the 1st
        first = _serial(y, m, 1)
        return first if isinstance(first, ExcelError) else _checked(first - 1)
    return _serial(y, m, min(parts[2], _days_in(y, m)))


def _moved(start: object, months: object) -> tuple[tuple[int, int, int], int, int] | ExcelError:
    """``start``'s (year, month, day), and the year and month ``months`` later."""
    parts, offset = _parts(start), _months(months)
    if isinstance(parts, ExcelError):
        return parts
    if isinstance(offset, ExcelError):
        return offset
    return (parts, *_shift(parts[0], parts[1], offset))


_MONTHS = {name.lower(): number for number in range(1, 13)
           for name in (calendar.month_name[number], calendar.month_abbr[number])}
_DAY_MONTH_YEAR = re.compile(r"\s*(\d{1,2})[\s\-/]*([A-Za-z]{3,9})[\s\-/,]*(\d{4}|\d{2})\s*")
_MONTH_DAY_YEAR = re.compile(r"\s*([A-Za-z]{3,9})[\s\-/]*(\d{1,2}),?[\s\-/]*(\d{4})\s*")
_ISO = re.compile(r"\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*")


def _number(value: object) -> float | ExcelError:
    if isinstance(value, ExcelError):
        return value
    number = as_number(value)
    if number is None and isinstance(value, str):
        return _text_date(value)
    return VALUE if number is None else number


def _text_date(text: str) -> float | ExcelError:
    """The serial of a date typed as text whose reading does not depend on the locale."""
    if match := _DAY_MONTH_YEAR.fullmatch(text):
        d, name, y = match.groups()
    elif match := _MONTH_DAY_YEAR.fullmatch(text):
        name, d, y = match.groups()
    elif match := _ISO.fullmatch(text):
        y, m, d = (int(part) for part in match.groups())
        return _valid(y, m, d)
    else:
        raise NotImplementedMode("a date written as text")
    if name.lower() not in _MONTHS:
        return VALUE
    year = int(y) if len(y) == 4 else int(y) + (2000 if int(y) < 30 else 1900)  # Excel's two-digit years
    return _valid(year, _MONTHS[name.lower()], int(d))


def _valid(y: int, m: int, d: int) -> float | ExcelError:
    if not (1900 <= y <= 9999 and 1 <= m <= 12 and 1 <= d <= _days_in(y, m)):
        return VALUE
    return _serial(y, m, d)


def _parts(serial: object) -> tuple[int, int, int] | ExcelError:
    number = _number(serial)
    if isinstance(number, ExcelError):
        return number
    whole = math.floor(number)
    if whole < 0 or whole > LAST_SERIAL:
        return NUM
    if whole == 0:
        return (1900, 1, 0)
    if whole == _LEAP_DAY:
        return (1900, 2, 29)
    date = _EPOCH + dt.timedelta(days=whole + (1 if whole < _LEAP_DAY else 0))
    return (date.year, date.month, date.day)


def _months(value: object) -> int | ExcelError:
    number = _number(value)
    return number if isinstance(number, ExcelError) else math.trunc(number)


def _shift(y: int, m: int, offset: int) -> tuple[int, int]:
    index = y * 12 + (m - 1) + offset
    return index // 12, index % 12 + 1


def _days_in(y: int, m: int) -> int:
    return 29 if (y, m) == (1900, 2) else calendar.monthrange(y, m)[1]


def _serial(y: int, m: int, d: int) -> float | ExcelError:
    if y < 1900 or y > 9999:
        return NUM
    if (y, m, d) == (1900, 2, 29):
        return float(_LEAP_DAY)
    days = (dt.date(y, m, d) - _EPOCH).days
    return _checked(float(days - 1 if days <= _LEAP_DAY else days))


def _checked(serial: float) -> float | ExcelError:
    return serial if 0 <= serial <= LAST_SERIAL else NUM
