"""Structured references engines misread, rewritten from the workbook's table parts.

Excel saves ``[@Qty]`` as ``Sales[[#This Row],[Qty]]``, and IronCalc and LibreOffice
read that form. A formula typed by an agent and saved by openpyxl keeps the short
form, which IronCalc truncates (``=Sales[@Qty]*2`` becomes ``=Sales``) and LibreOffice
rejects. :func:`this_row_rewrites` finds those formulas in the file and gives each in
Excel's saved form, naming the table an unqualified ``[@Col]`` sits in.
"""

from __future__ import annotations

import re
import warnings
import zipfile
from pathlib import Path

import openpyxl
from openpyxl.utils.cell import range_boundaries

_QUALIFIED = re.compile(r"([A-Za-z_\\][\w.\\]*)\[@(\[[^\]]*\]|[^\[\]]+)\]")
_UNQUALIFIED = re.compile(r"(?<![\w\]\\.])\[@(\[[^\]]*\]|[^\[\]]+)\]")
_STRING = re.compile(r'("(?:[^"]|"")*")')


MAX_SHEET_BYTES = 64 * 1024 * 1024


def this_row_rewrites(path: Path) -> dict[tuple[str, int, int], str]:
    """(sheet, row, column) -> the formula with every ``[@Col]`` in Excel's saved form.

    Never raises: a file it cannot read has no rewrites (the engine then abstains as it would).
    """
    try:
        return _rewrites(path) if _mentions_this_row_shorthand(path) else {}
    except Exception:
        return {}


def _rewrites(path: Path) -> dict[tuple[str, int, int], str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        book = openpyxl.load_workbook(path, data_only=False)
    rewrites = {}
    for sheet in book.worksheets:
        tables = [(name, range_boundaries(ref)) for name, ref in sheet.tables.items()]
        for row in sheet.iter_rows():
            for cell in row:
                formula = cell.value
                if isinstance(formula, str) and formula.startswith("=") and "[@" in formula:
                    home = next((name for name, (c1, r1, c2, r2) in tables
                                 if r1 <= cell.row <= r2 and c1 <= cell.column <= c2), None)
                    rewritten = rewrite_this_row(formula, home)
                    if rewritten != formula:
                        rewrites[(sheet.title, cell.row, cell.column)] = rewritten
    return rewrites


def rewrite_this_row(formula: str, home_table: str | None) -> str:
    """``Sales[@Qty]`` and, inside table ``home_table``, ``[@Qty]`` as ``Sales[[#This Row],[Qty]]``."""
    parts = _STRING.split(formula)
    for index in range(0, len(parts), 2):  # even parts are outside string literals
        text = _QUALIFIED.sub(lambda m: f"{m.group(1)}[[#This Row],{_column(m.group(2))}]", parts[index])
        if home_table is not None:
            text = _UNQUALIFIED.sub(lambda m: f"{home_table}[[#This Row],{_column(m.group(1))}]", text)
        parts[index] = text
    return "".join(parts)


def _column(name: str) -> str:
    return name if name.startswith("[") else f"[{name}]"


def _mentions_this_row_shorthand(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if info.filename.startswith("xl/worksheets/") and info.file_size < MAX_SHEET_BYTES:
                    if b"[@" in archive.read(info.filename):
                        return True
    except (zipfile.BadZipFile, OSError, KeyError):
        return False
    return False
