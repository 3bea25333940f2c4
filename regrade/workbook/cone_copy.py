"""The cone copy: a heavy workbook without the formulas no graded cell depends on.

An engine computes every formula of a workbook, but regrade reads only the graded cells.
Formulas outside their cone (:mod:`regrade.workbook.cones`) cannot change those values, so
in a workbook whose formulas ask for much work (10,000 lookups and 350 array formulas over
whole columns beside an answer that reads a few hundred cells, SpreadsheetBench task 59932)
the engines compute a copy in which those formulas are left out: the cell keeps its style
and loses its formula, its cached value and their attributes. Addresses and sheets do not
change, and what the engines report of the graded cells is read as the file's.

A formula stays when:

- the cone holds it;
- it holds the text of a shared formula a kept cell shares (the group's first cell);
- it could spill into a cell the cone reads or a graded cell: a dynamic array spills right
  and down from its cell, so a formula above and left of the far corner of such an area stays.

No copy is made (the engines compute the file itself) when the workbook asks for little
work (the cells its formulas reference, a count read from their text: ``CONE_WORK``), when
the cone is open (``INDIRECT``, ``OFFSET``, a name that is not defined: it may read any cell),
when the workbook has a data table (``TABLE()`` recomputes its sheet for each input), or
when a sheet part is unusual (over ``MAX_SHEET_BYTES``, namespace-prefixed elements).
"""

from __future__ import annotations

import bisect
import contextlib
import re
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Iterator, Sequence

from openpyxl.utils.cell import column_index_from_string

from regrade.values import CellRef
from regrade.workbook.cones import Area, Cone, FormulaGraph
from regrade.workbook.formula import boundaries, referenced_cells
from regrade.workbook.rewrite import READ_ERRORS, write_copy
from regrade.workbook.sheets import MAX_SHEET_BYTES, resolve_sheet, sheet_parts

# cells the formulas reference (whole columns counted whole) worth narrowing: the copy costs the
# formula graph and a rewritten package. 20 million until 2026-12-04; at 1 million the 37 tasks of
# the shared split between the two (218 cases) took 403 s instead of 468 s, the same verdicts
# (docs/benchmarks.md)
CONE_WORK = 1_000_000
_CELL = re.compile(rb"<c\b((?:[^>/]|/(?!>))*)>(.*?)</c>", re.DOTALL)
_REFERENCE = re.compile(rb'\br="\$?([A-Z]{1,3})\$?(\d+)"')
_VALUE_ATTRIBUTES = re.compile(rb'\s+(?:t|cm|vm)="[^"]*"')  # the value's type, array and value metadata
_FORMULA_ELEMENT = re.compile(rb"<f\b([^>]*)(?:/>|>(.*?)</f>)", re.DOTALL)
_SHARED_INDEX = re.compile(rb'\bsi="(\d+)"')
_FORMULA_TEXT = re.compile(rb"<f\b[^>]*>([^<]*)</f>")
_ARRAY_RANGE = re.compile(rb'\bref="([A-Z]+\d+:[A-Z]+\d+)"')
_PREFIXED = re.compile(rb"<\w+:(?:c|f|row|sheetData)\b")


def asks_much_work(path: Path, work: int = CONE_WORK) -> bool:
    """Whether the formula texts written in the file reference more than ``work`` cells
    (:func:`regrade.workbook.formula.referenced_cells`; a shared formula's text counts once).
    Never raises."""
    total = 0
    try:
        with zipfile.ZipFile(path) as archive:
            for _, part in sheet_parts(archive):
                if archive.getinfo(part).file_size > MAX_SHEET_BYTES:
                    return False
                for match in _FORMULA_TEXT.finditer(archive.read(part)):
                    total += referenced_cells(match.group(1).decode("utf-8", "replace"))
                    if total > work:
                        return True
    except MemoryError:
        raise  # a limit, not a broken file: the isolating worker reports it
    except READ_ERRORS:
        return False
    return False


def cone_parts(archive: zipfile.ZipFile, graph: FormulaGraph, cone: Cone,
               targets: Sequence[CellRef]) -> dict[str, bytes] | None:
    """{sheet part: its content without the formulas the cone of ``targets`` does not need},
    for the parts that change; None when no copy may be made (see the module's text)."""
    parts: dict[str, bytes] = {}
    for name, part in sheet_parts(archive):
        if archive.getinfo(part).file_size > MAX_SHEET_BYTES:
            return None
        data = archive.read(part)
        if _PREFIXED.search(data, 0, _cells_end(data)) or b't="dataTable"' in data:
            return None
        if name not in graph.sheets:  # openpyxl read the sheets otherwise
            return None
        new = _without_unneeded_formulas(data, name, cone, targets)
        if new != data:
            parts[part] = new
    return parts


def _cells_end(data: bytes) -> int:
    """Where a sheet part's cells end: past ``</sheetData>``, or the part's end where there is
    none. What follows (an extension list's conditional formats and validations, whose
    ``<xm:f>`` no engine computes into a cell) holds no cell the copy edits."""
    end = data.find(b"</sheetData>")
    return len(data) if end < 0 else end + len(b"</sheetData>")


def write_cone_copy(path: Path, copy: Path, graph: FormulaGraph, cells: Sequence[CellRef]) -> bool:
    """Write the cone copy of ``path`` for ``cells`` to ``copy``; False (nothing written) when
    none may be made or it would leave every formula in."""
    targets = [CellRef(sheet, ref.row, ref.column) for ref in cells
               if (sheet := resolve_sheet(ref.sheet, graph.sheets)) is not None]
    cone = graph.cone(targets)
    if cone.open:
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            parts = cone_parts(archive, graph, cone, targets)
            if not parts:
                return False
            write_copy(archive, copy, parts, {})
    except MemoryError:
        raise
    except READ_ERRORS:
        return False
    return True


@contextlib.contextmanager
def cone_workbook(path: Path, graph: Callable[[], FormulaGraph | None], cells: Sequence[CellRef]) -> Iterator[Path]:
    """The cone copy of ``path`` for ``cells``, in a temporary folder while the block runs;
    ``path`` itself when the workbook asks for little work or no copy may be made. ``graph``
    gives the file's formula graph; it is asked only for a heavy workbook."""
    if not asks_much_work(path) or (built := graph()) is None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="regrade-cone-") as folder:
        copy = Path(folder) / path.name
        yield copy if write_cone_copy(path, copy, built, cells) else path


class _Reach:
    """Whether a cell of a sheet lies above and left of the far corner of one of some areas
    (a formula there could spill into it)."""

    def __init__(self, areas: list[Area]):
        corners = sorted((area.max_row, area.max_col) for area in areas)
        self._rows = [row for row, _ in corners]
        self._widest_below = [0] * len(corners)  # the widest column among the areas reaching row >= rows[i]
        running = 0
        for index in range(len(corners) - 1, -1, -1):
            running = max(running, corners[index][1])
            self._widest_below[index] = running

    def covers(self, row: int, column: int) -> bool:
        index = bisect.bisect_left(self._rows, row)
        return index < len(self._rows) and self._widest_below[index] >= column


def _without_unneeded_formulas(data: bytes, sheet: str, cone: Cone, targets: Sequence[CellRef]) -> bytes:
    """The sheet part with each formula cell the cone of ``targets`` does not need emptied."""
    found = []  # (where the cell starts, row, column, its <f> element) of each formula cell
    for match in _CELL.finditer(data):
        formula = _FORMULA_ELEMENT.search(match.group(2))
        reference = _REFERENCE.search(match.group(1))
        if formula is not None and reference is not None:
            found.append((match.start(), int(reference.group(2)),
                          column_index_from_string(reference.group(1).decode()), formula))
    own = {(row, column) for _, row, column, _ in found}
    # where a formula left out could spill: the areas the cone reads and the graded cells, but
    # not a cell holding a formula of its own (a spill cannot land there)
    landing = [a for a in cone.areas if a.sheet == sheet and not (a.min_row == a.max_row and a.min_col == a.max_col
                                                                  and (a.min_row, a.min_col) in own)]
    landing += [Area(sheet, t.row, t.column, t.row, t.column) for t in targets
                if t.sheet == sheet and (t.row, t.column) not in own]
    reach = _Reach(landing)
    needed = {(c.row, c.column) for c in cone.cells if c.sheet == sheet} | {(t.row, t.column) for t in targets
                                                                             if t.sheet == sheet}
    needed_groups: set[bytes] = set()
    candidates = []  # (where the cell starts, its shared group or None, whether it holds the group's text)
    for start, row, column, formula in found:
        shared = _SHARED_INDEX.search(formula.group(1))
        group = shared.group(1) if shared else None
        if (row, column) in needed or reach.covers(row, column) or _holds_needed(formula.group(1), needed):
            if group is not None:
                needed_groups.add(group)
        else:
            candidates.append((start, group, bool(formula.group(2))))
    # a left-out cell that holds the text of a group a kept cell shares stays
    unneeded = {start for start, group, holds_text in candidates if not (holds_text and group in needed_groups)}

    def empty(match: re.Match[bytes]) -> bytes:
        if match.start() not in unneeded:
            return match.group(0)
        return b"<c" + _VALUE_ATTRIBUTES.sub(b"", match.group(1)) + b"/>"

    return _CELL.sub(empty, data) if unneeded else data


def _holds_needed(attributes: bytes, needed: set[tuple[int, int]]) -> bool:
    """Whether an array formula's range (``<f t="array" ref="D1:D3">``) holds a needed cell."""
    area = _ARRAY_RANGE.search(attributes) if b'"array"' in attributes else None
    if area is None:
        return False
    min_col, min_row, max_col, max_row = boundaries(area.group(1).decode())
    return any(min_row <= row <= max_row and min_col <= column <= max_col for row, column in needed)
