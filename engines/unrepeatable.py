"""Cells no engine can recompute as the Excel that saved the file did; every engine abstains on them.

- A value that comes from another workbook (an external link, ``[1]Data!A1``): the
  other workbook is not there.
- A value computed by a formula that reads a date typed as text, with its day and month
  in numbers (``"01/09/2020 15:02:40"``, ``"PAID ON 16.02.24"``), and may turn it into a
  number (arithmetic, ``VALUE``, ``INT``, a date function): Excel reads such text by the
  locale of the machine it runs on (day first in much of the world), which the file does
  not record; every engine here reads it the American way, month first (SpreadsheetBench
  59643, 30709 and 33157 were saved by a day-first Excel). A formula that only compares or
  matches the text (``MATCH(TEXT(d, "dd-mm-yyyy"), headers, 0)``) reads it the same
  everywhere, as do year-first dates (``2024-02-16``).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Callable

from engines.base import CannotEvaluate, WorkbookValues
from engines.calls import QUOTED
from engines.cones import Area, FormulaGraph, load_graph
from engines.sheets import MAX_SHEET_BYTES, mentions, resolve_sheet

# Day and month in one or two digits, then the year, separated by / . or -, and no digit around
_NUMBERS_DATE = re.compile(r"(?<![\d.])(\d{1,2})([/.\-])(\d{1,2})\2(\d{4}|\d{2})(?!\d)")
MAX_CELLS_READ = 2_000_000  # constants read per workbook in search of text dates
# What may turn a text into a number: arithmetic, or a function that reads a number or a date
_COERCION = re.compile(
    r"[-+*/^]|\b(?:VALUE|DATEVALUE|TIMEVALUE|INT|N|YEAR|MONTH|DAY|HOUR|MINUTE|SECOND|WEEKDAY|WEEKNUM|EOMONTH|EDATE"
    r"|DATEDIF|DAYS|NETWORKDAYS|WORKDAY|YEARFRAC|ROUND|ROUNDUP|ROUNDDOWN)\(",
    re.IGNORECASE,
)
# What takes a date out of a longer text ("PAID ON 16.02.24--96072")
_EXTRACTION = re.compile(r"\b(?:MID|LEFT|RIGHT|SUBSTITUTE|REPLACE|TEXTBEFORE|TEXTAFTER|TEXTSPLIT|FILTERXML)\(", re.IGNORECASE)
_TIME = r"(?:\s+\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s*[AaPp][Mm])?)?"


def abstain_where_no_engine_can(path: Path, values: WorkbookValues) -> WorkbookValues:
    """The engine's values, with the cells described above turned into abstentions."""
    if values.failure is not None or not values.cells:
        return values
    external, text_dates = _has_external_links(path), _may_hold_text_dates(path)
    if not (external or text_dates):
        return values
    graph = load_graph(path)
    if graph is None:
        return values
    dated = _TextDates(graph) if text_dates else None
    for ref in list(values.cells):
        sheet = resolve_sheet(ref.sheet, graph.sheets)
        if sheet is None:
            continue
        cell = (sheet, ref.row, ref.column)
        if external and graph.cone([cell]).external:
            values.cells[ref] = CannotEvaluate("external-link", "the value comes from another workbook (an external link)")
        elif dated is not None and dated.read_by(cell):
            values.cells[ref] = CannotEvaluate(
                "locale-date", "the value turns a date typed as text (01/09/2020) into a number, which Excel does "
                               "by its locale, day or month first; the file does not record it")
    return values


def text_date(text: str) -> bool:
    """Whether the text holds a date with day and month in numbers (one of them 12 or less)."""
    for match in _NUMBERS_DATE.finditer(text):
        first, second = int(match.group(1)), int(match.group(3))
        if 1 <= min(first, second) <= 12 and max(first, second) <= 31:
            return True
    return False


def whole_text_date(text: str) -> bool:
    """Whether the whole text is such a date, with a time of day or not ("01/09/2020 15:02:40")."""
    match = _NUMBERS_DATE.search(text)
    return match is not None and text_date(text) and re.fullmatch(r"\s*" + re.escape(match.group(0)) + _TIME + r"\s*", text) is not None


class _TextDates:
    """The text constants that hold a date with day and month in numbers, found area by area."""

    def __init__(self, graph: FormulaGraph):
        self.graph = graph
        self.found: dict[tuple[Area, bool], str | None] = {}
        self.budget = MAX_CELLS_READ

    def read_by(self, cell: tuple[str, int, int]) -> str | None:
        """An example of such a text a formula of the cell's cone reads and may turn into a number, or None."""
        for formula_cell in self.graph.cells_in_cone([cell]):
            code = QUOTED.sub("", self.graph.formulas[formula_cell])
            if not _COERCION.search(code):
                continue
            whole = _EXTRACTION.search(code) is None  # without one, only a text that is a date whole is read as one
            for area in self.graph.precedents(formula_cell).areas:
                if (area, whole) not in self.found:
                    self.found[(area, whole)] = self._search(area, whole_text_date if whole else text_date)
                if self.found[(area, whole)] is not None:
                    return self.found[(area, whole)]
        return None

    def _search(self, area: Area, is_date: Callable[[str], bool]) -> str | None:
        sheet = self.graph.book[area.sheet]
        max_row, max_col = min(area.max_row, sheet.max_row), min(area.max_col, sheet.max_column)
        cells = max(0, max_row - area.min_row + 1) * max(0, max_col - area.min_col + 1)
        if cells > self.budget:
            return None  # too large to read: left to the engine
        self.budget -= cells
        for row in sheet.iter_rows(min_row=area.min_row, max_row=max_row, min_col=area.min_col, max_col=max_col,
                                   values_only=True):
            for value in row:
                if isinstance(value, str) and not value.startswith("=") and is_date(value):
                    return value
        return None


def _has_external_links(path: Path) -> bool:
    return _any_part(path, lambda archive: any(n.startswith("xl/externalLinks/") for n in archive.namelist()))


def _may_hold_text_dates(path: Path) -> bool:
    """Whether the shared strings (or, in a file that writes strings inline, a sheet) may hold
    such a date: a quick look before the formula graph."""
    def look(archive: zipfile.ZipFile) -> bool:
        for info in archive.infolist():
            if info.filename == "xl/sharedStrings.xml" and info.file_size <= MAX_SHEET_BYTES:
                if text_date(archive.read(info).decode("utf-8", "replace")):
                    return True
        return False

    return _any_part(path, look) or (b"inlineStr" in mentions(path, (b"inlineStr",)) and _any_part(path, _inline_look))


def _inline_look(archive: zipfile.ZipFile) -> bool:
    return any(text_date(archive.read(info).decode("utf-8", "replace")) for info in archive.infolist()
               if info.filename.startswith("xl/worksheets/") and info.file_size <= MAX_SHEET_BYTES)


def _any_part(path: Path, look: Callable[[zipfile.ZipFile], bool]) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return look(archive)
    except MemoryError:
        raise
    except Exception:  # a broken archive: the engines report it
        return False
