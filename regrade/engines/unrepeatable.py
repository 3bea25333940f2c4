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
- A value computed by a plain formula (not an array formula) whose ``MATCH`` looks up an
  array computed from ranges (``MATCH(k, A1:A9&B1:B9, 0)``): Excel evaluates a formula
  saved plain as a legacy one, meeting such ranges by implicit intersection (SpreadsheetBench
  39931 caches ``#VALUE!``); every engine here computes the whole array (23.56 there). The
  same formula saved as an array formula is computed. A function around the ranges
  (``MATCH(TRUE, INDEX(A1:Z1<>0,), 0)``) computes the array in Excel too.
- A value computed by an approximate ``XLOOKUP`` or ``XMATCH`` (match_mode 1 or -1) over a
  lookup array that holds empty cells: Excel ranks the empty elements apart from the numbers
  (SpreadsheetBench 57448: the next larger value after 0.5 in a row whose numbers are all
  smaller is the first empty cell, where every engine here finds none). Excel's rule is not
  documented, so no engine is trusted with it.
"""

from __future__ import annotations

import html
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from openpyxl.formula.tokenizer import Token

from regrade.engines.rules import abstention
from regrade.values import CannotEvaluate, CellRef, WorkbookValues
from regrade.workbook.analysis import WorkbookAnalysis
from regrade.workbook.calls import QUOTED, array_from_ranges, calls
from regrade.workbook.cones import Area, FormulaGraph, plain_area
from regrade.workbook.sheets import MAX_SHEET_BYTES, resolve_sheet
from regrade.workbook.formula import tokens as formula_tokens

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
# In a sheet's XML: the text of a plain (not array) formula calling MATCH; an XLOOKUP or XMATCH call
_PLAIN_MATCH = re.compile(rb"<f(?![^>]*\bt=\"array\")[^>]*>([^<]*MATCH\([^<]*)</f>", re.IGNORECASE)
_APPROXIMATE_CALL = re.compile(rb"X(?:LOOKUP|MATCH)\(", re.IGNORECASE)
_TIME = r"(?:\s+\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s*[AaPp][Mm])?)?"


def abstain_where_no_engine_can(analysis: WorkbookAnalysis, values: WorkbookValues) -> WorkbookValues:
    """The engine's values, with the cells described above turned into abstentions."""
    if values.failure is None and values.cells:
        values.cells.update(shared_abstentions(analysis, list(values.cells)))
    return values


def shared_abstentions(analysis: WorkbookAnalysis, cells: Sequence[CellRef]) -> dict[CellRef, CannotEvaluate]:
    """{cell: its abstention} for those of ``cells`` described above. The checks read the
    workbook's formulas, never an engine's values, so this can be worked out before any
    engine computes (:mod:`regrade.engines.pipeline` does, once per workbook)."""
    found: dict[CellRef, CannotEvaluate] = {}
    if not cells:
        return found
    look = quick_look(analysis.path)
    if not (look.external or look.text_dates or look.intersected or look.approximate):
        return found
    graph = analysis.graph()
    if graph is None:
        return found
    dated = _TextDates(graph) if look.text_dates else None
    intersected = _Intersected(graph) if look.intersected else None
    over_empty = _ApproximateOverEmpty(graph) if look.approximate else None
    # one walk over the cones of all the cells first: a check that finds nothing there finds
    # nothing in any one cone, and the walks cell by cell (cones overlap) are left out
    placed = [CellRef(s, ref.row, ref.column) for ref in cells if (s := resolve_sheet(ref.sheet, graph.sheets)) is not None]
    together = graph.cells_in_cone(placed)
    dated = dated if dated is not None and dated.read_by(together) else None
    intersected = intersected if intersected is not None and intersected.read_by(together) else None
    over_empty = over_empty if over_empty is not None and over_empty.read_by(together) else None
    if not (look.external or dated or intersected or over_empty):
        return found
    external = graph.external_cells(placed) if look.external else set()
    for ref in cells:
        sheet = resolve_sheet(ref.sheet, graph.sheets)
        if sheet is None:
            continue
        cell = CellRef(sheet, ref.row, ref.column)
        if cell in external:
            found[ref] = abstention("external-link")
            continue
        if not (dated or intersected or over_empty):
            continue
        cone = graph.cells_in_cone([cell])  # one walk for the three checks below
        if dated is not None and (text := dated.read_by(cone)):
            found[ref] = abstention("locale-date", f"the value turns a date typed as text ({text!r}) into a "
                                                   "number, which Excel does by its locale, day or month first")
        elif intersected is not None and intersected.read_by(cone):
            found[ref] = abstention("implicit-intersection")
        elif over_empty is not None and (function := over_empty.read_by(cone)):
            found[ref] = abstention("approximate-lookup-over-empty",
                                    f"{function} with match_mode 1 or -1 over a lookup array that holds empty "
                                    "cells: Excel ranks empty elements apart from numbers, by a rule no engine "
                                    "here follows")
    return found


def intersects_implicitly(formula: str) -> bool:
    """Whether ``formula``, saved plain, has MATCH or XMATCH look up an array computed from
    multi-cell ranges by an operator, with no function around them (see the module's doc)."""
    for call in calls(formula):
        if call.name in ("MATCH", "XMATCH") and len(call.args) > 1:
            if array_from_ranges(call.args[1]):
                return True
    return False


class _FormulaCellCheck:
    """A check made of each formula cell once (cones overlap): what it finds, or None."""

    def __init__(self, graph: FormulaGraph):
        self.graph = graph
        self.by_cell: dict[CellRef, str | None] = {}

    def read_by(self, cone: list[CellRef]) -> str | None:
        """What the check finds in the first formula cell of a cone where it finds something, or None."""
        for cell in cone:
            if cell not in self.by_cell:
                self.by_cell[cell] = self.check(cell)
            if self.by_cell[cell] is not None:
                return self.by_cell[cell]
        return None

    def check(self, cell: CellRef) -> str | None:
        raise NotImplementedError


class _Intersected(_FormulaCellCheck):
    """The plain formulas of a workbook whose lookup array Excel meets by implicit intersection."""

    def check(self, cell: CellRef) -> str | None:
        sheet, row, column = cell
        value = self.graph.book[sheet].cell(row, column).value  # an array formula is no str
        return value if isinstance(value, str) and intersects_implicitly(value) else None


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


class _TextDates(_FormulaCellCheck):
    """The text constants that hold a date with day and month in numbers, found area by area:
    an example of such a text a formula cell reads and may turn into a number."""

    def __init__(self, graph: FormulaGraph):
        super().__init__(graph)
        self.found: dict[tuple[Area, bool], str | None] = {}
        self.budget = MAX_CELLS_READ

    def check(self, formula_cell: CellRef) -> str | None:
        code = QUOTED.sub("", self.graph.formulas[formula_cell])
        if not _COERCION.search(code):
            return None
        whole = _EXTRACTION.search(code) is None  # without one, only a text that is a date whole is read as one
        for area in self.graph.precedents(formula_cell).areas:
            if (area, whole) not in self.found:
                self.found[(area, whole)] = self._search(area, whole_text_date if whole else text_date)
            if self.found[(area, whole)] is not None:
                return self.found[(area, whole)]
        return None

    def _search(self, area: Area, is_date: Callable[[str], bool]) -> str | None:
        cells, rows = self.graph.stored(area)
        if cells > self.budget:
            return None  # too large to read: left to the engine
        self.budget -= cells
        for row in rows:
            for value in row:
                if isinstance(value, str) and not value.startswith("=") and is_date(value):
                    return value
        return None


@dataclass
class _Look:
    """What a quick look at the file's parts finds possible, before the formula graph is read."""

    external: bool = False  # an external link part
    text_dates: bool = False  # a shared (or inline) string holding a date with day and month in numbers
    intersected: bool = False  # a plain formula whose MATCH Excel intersects implicitly
    approximate: bool = False  # an XLOOKUP or XMATCH call


def quick_look(path: Path) -> _Look:
    """One pass over the archive: the part names, the shared strings, each sheet once. Never raises."""
    look = _Look()
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                name = info.filename
                look.external |= name.startswith("xl/externalLinks/")
                if info.file_size > MAX_SHEET_BYTES:
                    continue
                if name == "xl/sharedStrings.xml" and not look.text_dates:
                    look.text_dates = text_date(archive.read(info).decode("utf-8", "replace"))
                elif name.startswith("xl/worksheets/") and name.endswith(".xml"):
                    sheet = archive.read(info)
                    look.approximate |= _APPROXIMATE_CALL.search(sheet) is not None
                    look.intersected = look.intersected or any(intersects_implicitly(text) for text in {
                        html.unescape(m.group(1).decode("utf-8", "replace")) for m in _PLAIN_MATCH.finditer(sheet)})
                    if not look.text_dates and b"inlineStr" in sheet:
                        look.text_dates = text_date(sheet.decode("utf-8", "replace"))
    except MemoryError:
        raise
    except Exception:  # a broken archive: the engines report it
        pass
    return look


class _ApproximateOverEmpty(_FormulaCellCheck):
    """Approximate XLOOKUP and XMATCH calls over lookup arrays that hold empty cells: the function."""

    def __init__(self, graph: FormulaGraph):
        super().__init__(graph)
        self.empty: dict[Area, bool] = {}
        self.budget = MAX_CELLS_READ

    def check(self, cell: CellRef) -> str | None:
        for call in calls(self.graph.formulas[cell]):
            mode = {"XLOOKUP": 4, "XMATCH": 2}.get(call.name)
            if mode is not None and len(call.args) > mode and call.args[mode] in ("1", "-1", "+1"):
                if any(self._holds_empty(area) for area in self._areas(call.args[1], cell[0])):
                    return call.name
        return None

    def _areas(self, text: str, home: str) -> list[Area]:
        tokens = formula_tokens(text)
        if tokens is None:
            return []
        found = (plain_area(t.value, home, self.graph.sheets) for t in tokens
                 if t.type == Token.OPERAND and t.subtype == Token.RANGE)
        return [a for a in found if a is not None and (a.min_row, a.min_col) != (a.max_row, a.max_col)]

    def _holds_empty(self, area: Area) -> bool:
        if area not in self.empty:
            cells, rows = self.graph.stored(area)
            self.budget -= cells
            if cells < (area.max_row - area.min_row + 1) * (area.max_col - area.min_col + 1):
                self.empty[area] = True  # the area reaches past the sheet's last cell
            elif self.budget < 0:
                self.empty[area] = False  # too large to read: left to the engine
            else:
                self.empty[area] = any(value is None or value == "" for row in rows for value in row)
        return self.empty[area]
