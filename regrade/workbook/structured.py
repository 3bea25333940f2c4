"""Structured references resolved to A1 ranges from the workbook's table parts.

Engines read structured references unevenly: IronCalc truncates a typed ``Sales[@Qty]``
to ``=Sales``, LibreOffice 7.4 rejects ``[@Qty]``, ``Sales[#All]`` and ``Sales[#Data]``,
gnumeric reads none. Every table is described in the file (its range, header and
totals rows, column names), so :func:`structured_rewrites` gives each formula that
uses one with every structured reference replaced by the absolute range it means:

============================  =====================================================
``Sales[Qty]``                the Qty column's data rows
``Sales[#All]``               the whole table; ``#Data`` (the default), ``#Headers``,
                              ``#Totals`` its parts; several combine (``[#Headers],[#Data]``)
``Sales[[#This Row],[Qty]]``  the Qty cell in the formula's own row, as do ``Sales[@Qty]``,
                              ``Sales[@[Unit Price]]`` and, inside the table, ``[@Qty]``
``Sales[[Qty]:[Price]]``      the columns from Qty to Price
============================  =====================================================

A reference to an unknown table, or one this module cannot read, is left as written
(the engine then reads or refuses it as before).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import openpyxl
from openpyxl.utils.cell import get_column_letter

from regrade.values import CellRef
from regrade.workbook.formula import boundaries
from regrade.workbook.openpyxl_reading import formula_cells_of, load_formula_book

MAX_SHEET_BYTES = 64 * 1024 * 1024
_STRING = re.compile(r'("(?:[^"]|"")*")')
_START = re.compile(r"(?<![\w.\]\\!'])([A-Za-z_\\][\w.\\]*)?\[")
_SPECIALS = {"#all", "#data", "#headers", "#totals", "#this row"}


@dataclass(frozen=True)
class TablePart:
    name: str
    sheet: str
    min_col: int
    min_row: int
    max_col: int
    max_row: int
    header_rows: int
    totals_rows: int
    columns: tuple[str, ...]

    def contains(self, sheet: str, row: int, column: int) -> bool:
        return sheet == self.sheet and self.min_row <= row <= self.max_row and self.min_col <= column <= self.max_col


def structured_rewrites(path: Path, array_formulas: bool = False,
                        loaded: Callable[[], openpyxl.Workbook | None] | None = None) -> dict[CellRef, str]:
    """(sheet, row, column) -> the formula with its structured references as A1 ranges.

    Array formulas are included only on request: an engine that enters a rewrite as a
    plain formula would lose their array evaluation (IronCalc does not keep it anyway).
    ``loaded`` gives the workbook as :func:`load_formula_book` reads it, where the caller has it
    (the formula graph's), asked for only when the file has tables. Never raises: a file it
    cannot read has no rewrites.
    """
    try:
        return _rewrites(path, array_formulas, loaded) if _has_tables(path) else {}
    except Exception:
        return {}


def _rewrites(path: Path, array_formulas: bool, loaded: Callable[[], openpyxl.Workbook | None] | None) -> dict[CellRef, str]:
    book = (loaded() if loaded is not None else None) or load_formula_book(path)
    tables = table_parts(book)
    if not tables:
        return {}
    rewrites = {}
    for found in formula_cells_of(book):
        if (isinstance(found.cell.value, str) or array_formulas) and "[" in found.text:
            resolved = resolve_structured(found.text, found.sheet, found.row, found.column, tables)
            if resolved != found.text:
                rewrites[CellRef(found.sheet, found.row, found.column)] = resolved
    return rewrites


def table_parts(book: openpyxl.Workbook) -> dict[str, TablePart]:
    """Every table of the workbook by lower-cased name."""
    parts = {}
    for sheet in book.worksheets:
        for table in sheet.tables.values():
            min_col, min_row, max_col, max_row = boundaries(table.ref)
            headers = 0 if table.headerRowCount == 0 else 1
            totals = table.totalsRowCount or 0
            columns = tuple(str(c.name) for c in table.tableColumns) or tuple(
                str(sheet.cell(min_row, c).value) for c in range(min_col, max_col + 1))
            parts[table.displayName.lower()] = TablePart(
                table.displayName, sheet.title, min_col, min_row, max_col, max_row, headers, totals, columns)
    return parts


def resolve_structured(formula: str, sheet: str, row: int, column: int, tables: dict[str, TablePart]) -> str:
    """``formula`` (in ``sheet`` at ``row``, ``column``) with its structured references as A1 ranges."""
    home = next((t for t in tables.values() if t.contains(sheet, row, column)), None)
    parts = _STRING.split(formula)
    for index in range(0, len(parts), 2):  # even parts lie outside string literals
        parts[index] = _resolve_text(parts[index], row, tables, home)
    return "".join(parts)


def _resolve_text(text: str, row: int, tables: dict[str, TablePart], home: TablePart | None) -> str:
    out, position = [], 0
    while True:
        match = _START.search(text, position)
        if match is None:
            out.append(text[position:])
            return "".join(out)
        end = _closing_bracket(text, match.end() - 1)
        table = tables.get(match.group(1).lower()) if match.group(1) else home
        resolved = _range(table, text[match.end():end], row) if end is not None and table is not None else None
        if resolved is None or end is None:
            out.append(text[position:match.end()])
            position = match.end()
            continue
        out.append(text[position:match.start()] + resolved)
        position = end + 1


def _closing_bracket(text: str, opening: int) -> int | None:
    depth = 0
    index = opening
    while index < len(text):
        char = text[index]
        if char == "'":  # escapes the next character in a column name
            index += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return None


def _range(table: TablePart, inner: str, row: int) -> str | None:
    specials, columns = _specifiers(inner.strip())
    if specials is None:
        return None
    first_data = table.min_row + table.header_rows
    last_data = table.max_row - table.totals_rows
    spans = []
    for special in specials or ["#data"]:
        spans.append({"#all": (table.min_row, table.max_row), "#data": (first_data, last_data),
                      "#headers": (table.min_row, table.min_row) if table.header_rows else None,
                      "#totals": (table.max_row, table.max_row) if table.totals_rows else None,
                      "#this row": (row, row)}[special])
    if any(span is None for span in spans):
        return None
    top, bottom = min(s[0] for s in spans), max(s[1] for s in spans)  # type: ignore[index]
    names = [c.lower() for c in table.columns]
    if columns:
        try:
            picked = [names.index(c.lower()) for c in columns]
        except ValueError:
            return None
        left, right = table.min_col + min(picked), table.min_col + max(picked)
    else:
        left, right = table.min_col, table.max_col
    sheet = "'" + table.sheet.replace("'", "''") + "'"
    start = f"${get_column_letter(left)}${top}"
    stop = f"${get_column_letter(right)}${bottom}"
    return f"{sheet}!{start}" if start == stop else f"{sheet}!{start}:{stop}"


def _specifiers(inner: str) -> tuple[list[str] | None, list[str]]:
    """The special items and column names inside a reference, or (None, []) if unreadable.

    ``@Qty``, ``@[Unit Price]``, ``#All``, ``Qty``, ``[#This Row],[Qty]``, ``[Qty]:[Price]``.
    """
    if inner.startswith("@"):
        rest = inner[1:].strip()
        groups = _groups(rest) if rest.startswith("[") else [_unescape(rest)] if rest else []
        return (["#this row"], groups) if groups is not None else (None, [])
    if not inner.startswith("["):
        return ([inner.lower()], []) if inner.lower() in _SPECIALS else ([], [_unescape(inner)] if inner else [])
    groups = _groups(inner)
    if groups is None:
        return None, []
    return [g.lower() for g in groups if g.lower() in _SPECIALS], [g for g in groups if g.lower() not in _SPECIALS]


def _groups(inner: str) -> list[str] | None:
    """``[#This Row],[Qty]`` -> ``#This Row``, ``Qty``; separators (``,`` ``:``) only sit between."""
    groups, index = [], 0
    while index < len(inner):
        char = inner[index]
        if char == "[":
            end = _closing_bracket(inner, index)
            if end is None:
                return None
            groups.append(_unescape(inner[index + 1:end]).strip())
            index = end + 1
        elif char in ",: ":
            index += 1
        else:
            return None
    return groups


def _unescape(name: str) -> str:
    return re.sub(r"'(.)", r"\1", name)


def _has_tables(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return any(info.filename.startswith("xl/tables/") for info in archive.infolist())
    except (zipfile.BadZipFile, OSError):
        return False
