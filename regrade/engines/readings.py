"""Turning an engine's raw reading of a cell into regrade's cell values.

Shared by the engines so that they agree on what a number in a date format is and
on how to tell that an engine did not know a function.
"""

from __future__ import annotations

import re

from openpyxl.styles.numbers import is_date_format, is_timedelta_format
from openpyxl.utils.datetime import from_excel

from typing import Mapping, TypeVar

from regrade.values import CellResult, PlainValue

T = TypeVar("T")
K = TypeVar("K")
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


_ESCAPED_CHARACTER = re.compile(r"_x([0-9A-Fa-f]{4})_")


def decoded_text(value: T) -> T | str:
    """Text as Excel holds it, from text as openpyxl reads it from the file.

    OOXML writes a character XML cannot carry (a control character: ``CHAR(1)``) as
    ``_xHHHH_``, and a literal ``_x`` that would read as one with its underscore written
    ``_x005F_`` (ECMA-376 Part 1, 22.9.2.19 ST_Xstring). openpyxl leaves cached formula text
    so escaped; an engine's computed text holds the character itself. Applied to what is
    read from a file, never to what an engine computed."""
    if not isinstance(value, str) or "_x" not in value:
        return value
    return _ESCAPED_CHARACTER.sub(lambda m: chr(int(m.group(1), 16)), value)


def decoded_texts(cells: Mapping[K, CellResult]) -> dict[K, CellResult]:
    """``{key: decoded_text(value) for key, value in cells.items()}``, in that order, calling it
    only on a text that holds ``_x`` (no other value changes): a graded range can hold a
    hundred thousand cells."""
    decoded = dict(cells)
    for key in [key for key, value in cells.items() if isinstance(value, str) and "_x" in value]:
        decoded[key] = decoded_text(decoded[key])
    return decoded


def unknown_functions(formula: str) -> list[str]:
    """Functions an engine did not recognise, from its own rendering of a formula.

    IronCalc and LibreOffice both print the functions they know in upper case and leave
    unknown ones as they found them, lower-cased: ``=_xlfn.aggregate(9,6,B2:B4)``.
    """
    code = _STRING_LITERAL.sub('""', formula)
    names = (m.group(1) for m in _LOWER_CASE_CALL.finditer(code))
    return sorted({bare_name(n) for n in names})
