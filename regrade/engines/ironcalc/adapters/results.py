"""What an adapter gives back besides a value: a formula text to put in the call's place, or
part of a reference; and a value written as a formula literal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openpyxl.utils.cell import get_column_letter

from regrade.values import ExcelError


@dataclass(frozen=True)
class Formula:
    """A formula text that replaces a call as it is."""

    text: str


@dataclass(frozen=True)
class Slice:
    """Part of a reference: what XLOOKUP returns when its return array is a reference."""

    area: tuple[int, int, int, int, int]

    def render(self, copy: Any, with_sheet: bool = True) -> str:
        sheet, min_row, min_col, max_row, max_col = self.area
        name = copy.get_worksheets_properties()[sheet]["name"]
        start, end = f"${get_column_letter(min_col)}${min_row}", f"${get_column_letter(max_col)}${max_row}"
        quoted = "'" + name.replace("'", "''") + "'!" if with_sheet else ""
        return f"{quoted}{start}" + ("" if start == end else f":{end}")


def literal(value: object) -> str:
    if isinstance(value, list):
        return "{" + ";".join(",".join(literal(v) for v in row) for row in value) + "}"
    if isinstance(value, ExcelError):
        return value.code
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    if value is None:
        return '""'
    number = float(value)  # type: ignore[arg-type]
    text = repr(number)
    return f"({text})" if number < 0 else text
