"""Turning an engine's raw reading of a cell into regrade's cell values.

Shared by the engines so that they agree on what a number in a date format is and
on how to tell that an engine did not know a function.
"""

from __future__ import annotations

import re

from openpyxl.styles.numbers import is_date_format, is_timedelta_format
from openpyxl.utils.datetime import from_excel

from regrade.values import PlainValue
from regrade.workbook.formula import bare_name

_LOWER_CASE_CALL = re.compile(r"(?<![A-Za-z0-9_.])((?:_xl[a-z]+\.)?[a-z][a-z0-9_.]*)\(")
_STRING_LITERAL = re.compile(r'"(?:[^"]|"")*"')


def number_value(value: float, number_format: str | None) -> PlainValue:
    """A number as openpyxl reads a cached one: a date or time when its format says so."""
    if number_format and is_date_format(number_format):
        try:
            return from_excel(value, timedelta=is_timedelta_format(number_format))
        except (OverflowError, ValueError):
            return value
    return value


def unknown_functions(formula: str) -> list[str]:
    """Functions an engine did not recognise, from its own rendering of a formula.

    IronCalc and LibreOffice both print the functions they know in upper case and leave
    unknown ones as they found them, lower-cased: ``=_xlfn.aggregate(9,6,B2:B4)``.
    """
    code = _STRING_LITERAL.sub('""', formula)
    names = (m.group(1) for m in _LOWER_CASE_CALL.finditer(code))
    return sorted({bare_name(n) for n in names})
