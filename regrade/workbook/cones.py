"""Dependency cones: which formulas a cell's value can depend on.

The cone of a cell is the set of formula cells it reads, directly or through other
formulas, together with the functions those formulas call. Regrade needs it to
decide two things honestly:

- a golden cell whose cone calls ``TODAY()`` or ``RAND()`` holds the value of the
  day (or the draw) it was saved on; no recomputation can be expected to match it;
- an engine that lacks a function abstains only on the cells whose cone calls it,
  not on every erroring cell of the workbook.

References are read with openpyxl's formula tokenizer: A1 cells and ranges (whole
rows and columns too), sheet-qualified, defined names (followed), structured
references (resolved from the table parts by :mod:`regrade.workbook.structured`). A reference
the tokenizer cannot place (``INDIRECT``, ``OFFSET``, a 3-D reference, a name that is
not defined) makes the cone *open*: it may read any cell, so questions about it are
answered for the whole workbook. A cone that reads another workbook (``[1]Data!A1``) is
*external*: no engine can recompute it, and every engine abstains on its cells
(:mod:`regrade.engines.unrepeatable`). It is not open: the other workbook's cells are not
this one's, so such a reference adds no cell of this workbook to the cone.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import openpyxl
from openpyxl.formula.tokenizer import Token

from regrade.workbook.openpyxl_reading import formula_cells_of, load_formula_book
from regrade.workbook.sheets import HiddenRows, formula_text, hidden_rows, resolve_sheet
from regrade.workbook.structured import TablePart, resolve_structured, table_parts
from regrade.values import CellRef
from regrade.workbook.formula import MAX_COLUMNS, MAX_ROWS, boundaries, function_of, tokens as formula_tokens

VOLATILE_FUNCTIONS = frozenset({"TODAY", "NOW", "RAND", "RANDBETWEEN", "RANDARRAY"})
DYNAMIC_REFERENCE_FUNCTIONS = frozenset({"INDIRECT", "OFFSET"})
MAX_SPILL_CELLS = 100_000
MAX_INPUT_CELLS = 200_000  # FormulaGraph.inputs reads no more cells than this
_QUALIFIED = re.compile(r"^(?:(?P<sheet>'(?:[^']|'')+'|[^!'\[\]:]+)!)?(?P<area>[^!]+)$")
_CELL_OR_RANGE = re.compile(r"^\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?$")
_COLUMNS = re.compile(r"^\$?([A-Za-z]{1,3}):\$?([A-Za-z]{1,3})$")
_ROWS = re.compile(r"^\$?(\d+):\$?(\d+)$")
_EXTERNAL = re.compile(r"^'?\[\d+\]")  # [1]Data!A1, '[1]Order Data'!A:B

Cell = CellRef  # the one cell reference (regrade.values)


@dataclass(frozen=True)
class Area:
    sheet: str
    min_row: int
    min_col: int
    max_row: int
    max_col: int


@dataclass
class Precedents:
    """What one formula reads directly."""

    areas: list[Area] = field(default_factory=list)
    functions: set[str] = field(default_factory=set)
    open: bool = False
    external: bool = False  # reads another workbook: [1]Data!A1
    computed_names: set[str] = field(default_factory=set)  # defined names that are not one plain reference


@dataclass
class Cone:
    """Everything a set of cells may depend on."""

    cells: set[Cell] = field(default_factory=set)  # formula cells, the targets included
    functions: set[str] = field(default_factory=set)
    open: bool = False  # some reference could not be placed: it may read anything
    external: bool = False  # some formula reads another workbook
    computed_names: set[str] = field(default_factory=set)  # defined names that are a formula or a constant
    areas: set[Area] = field(default_factory=set)  # every area its formulas read


class FormulaGraph:
    """Every formula of a workbook, its defined names and tables, indexed for cone walks."""

    def __init__(self, book: openpyxl.Workbook):
        self.book = book
        self.sheets = [ws.title for ws in book.worksheets]
        self._sheet_by_lower = {name.lower(): name for name in self.sheets}
        self.formulas: dict[Cell, str] = {}
        for found in formula_cells_of(book):
            self.formulas[CellRef(found.sheet, found.row, found.column)] = found.text
            self._spill(found.sheet, getattr(found.cell.value, "ref", None), found.text)
        self.tables: dict[str, TablePart] = table_parts(book)
        self.hidden_rows: dict[str, HiddenRows] = hidden_rows(book)
        self.names = _defined_names(book)
        self._rows_by_column: dict[tuple[str, int], list[int]] = defaultdict(list)
        for formula_cell in sorted(self.formulas):
            self._rows_by_column[(formula_cell[0], formula_cell[2])].append(formula_cell[1])
        self._columns_by_sheet: dict[str, list[int]] = defaultdict(list)
        for sheet, column in sorted(self._rows_by_column):
            self._columns_by_sheet[sheet].append(column)
        self._precedents: dict[Cell, Precedents] = {}
        self._dimensions: dict[str, tuple[int, int]] = {}
        self._all_functions: frozenset[str] | None = None
        self._all_cells: list[Cell] | None = None

    def _spill(self, sheet: str, ref: str | None, text: str) -> None:
        """The other cells of an array formula's range hold its results: they read what it reads."""
        if not ref or ":" not in ref:
            return
        min_col, min_row, max_col, max_row = boundaries(ref)
        if (max_row - min_row + 1) * (max_col - min_col + 1) > MAX_SPILL_CELLS:
            return
        for row in range(min_row, max_row + 1):
            for column in range(min_col, max_col + 1):
                self.formulas.setdefault(CellRef(sheet, row, column), text)

    def all_functions(self) -> frozenset[str]:
        """Every function the workbook's formulas call, worked out once: an open cone asks
        for it, and one question per graded cell must not walk every formula again."""
        if self._all_functions is None:
            found: set[str] = set()
            for cell in self.formulas:
                found |= self.precedents(cell).functions
            self._all_functions = frozenset(found)
        return self._all_functions

    def precedents(self, cell: Cell) -> Precedents:
        if cell not in self._precedents:
            sheet, row, column = cell
            text = resolve_structured(self.formulas[cell], sheet, row, column, self.tables) if self.tables else self.formulas[cell]
            self._precedents[cell] = self._read(text, sheet, depth=0)
        return self._precedents[cell]

    def cone(self, targets: Iterable[Cell]) -> Cone:
        cone = Cone()
        pending = [t for t in targets if t in self.formulas]
        walked = cone.areas  # an area many formulas read (a whole column) is walked once
        while pending:
            cell = pending.pop()
            if cell in cone.cells:
                continue
            cone.cells.add(cell)
            found = self.precedents(cell)
            cone.functions |= found.functions
            cone.open |= found.open
            cone.external |= found.external
            cone.computed_names |= found.computed_names
            for area in found.areas:
                if area not in walked:
                    walked.add(area)
                    pending.extend(c for c in self._formulas_in(area) if c not in cone.cells)
        return cone

    def external_cells(self, targets: Iterable[Cell]) -> set[Cell]:
        """Those of ``targets`` whose own cone is external (``self.cone([t]).external`` for each),
        from one walk of their cones together: the formula cells that read another workbook,
        then every cell that reads them, directly or through other formulas. A cone per cell
        walks the same overlapping formulas again for each (3,388 graded cells reading whole
        columns: a second of a heavy workbook's pipeline, in every engine)."""
        wanted = [t for t in targets if t in self.formulas]
        walked: set[Cell] = set()
        readers: dict[Area, list[Cell]] = defaultdict(list)  # an area -> the walked formulas that read it
        inside: dict[Area, list[Cell]] = {}  # an area -> the formula cells it holds
        pending = list(wanted)
        while pending:
            cell = pending.pop()
            if cell in walked:
                continue
            walked.add(cell)
            for area in self.precedents(cell).areas:
                readers[area].append(cell)
                if area not in inside:
                    inside[area] = list(self._formulas_in(area))
                    pending.extend(inside[area])
        holding: dict[Cell, list[Area]] = defaultdict(list)  # a formula cell -> the walked areas that hold it
        for area, cells in inside.items():
            for cell in cells:
                holding[cell].append(area)
        external = {cell for cell in walked if self.precedents(cell).external}
        spreading, spread = list(external), set()
        while spreading:
            for area in holding.get(spreading.pop(), ()):
                if area not in spread:
                    spread.add(area)
                    fresh = [r for r in readers[area] if r not in external]
                    external.update(fresh)
                    spreading.extend(fresh)
        return {t for t in wanted if t in external}

    def calls_in_cone(self, targets: Iterable[Cell], functions: Iterable[str]) -> set[str]:
        """Which of ``functions`` the cone of ``targets`` may call (the whole workbook's, if the cone is open)."""
        wanted = {f.upper() for f in functions}
        cone = self.cone(targets)
        called = self.all_functions() if cone.open else cone.functions
        return wanted & called

    def cells_in_cone(self, targets: Iterable[Cell]) -> list[Cell]:
        """The formula cells the cone of ``targets`` holds (every formula cell, if the cone is open)."""
        cone = self.cone(targets)
        if not cone.open:
            return sorted(cone.cells)
        if self._all_cells is None:  # sorted once: an open cone is asked of many graded cells
            self._all_cells = sorted(self.formulas)
        return list(self._all_cells)

    def formulas_in_cone(self, targets: Iterable[Cell]) -> list[str]:
        """The formula texts the cone of ``targets`` reads (the whole workbook's, if the cone is open)."""
        return [self.formulas[c] for c in self.cells_in_cone(targets)]

    def reads_a_call(self, cell: Cell, functions: Iterable[str]) -> bool:
        """Whether ``cell`` reads, directly or through other formulas, a formula that calls
        one of ``functions`` (any formula of the workbook, if what it reads is open)."""
        found = self.precedents(cell)
        read = [c for area in found.areas for c in self._formulas_in(area)]
        return found.open or bool(self.calls_in_cone(read, functions))

    def inputs(self, target: Cell) -> tuple | None:
        """Everything the value of ``target`` is computed from, in a form two workbooks can
        compare: the formulas of its cone, the contents of every area they read, the hidden
        rows of those sheets and the defined names. Where the inputs are equal, so must the
        values be. None when the inputs are not known: an open or external cone, or areas of
        more than MAX_INPUT_CELLS cells."""
        cone = self.cone([target])
        if cone.open or cone.external:
            return None
        areas = sorted({a for cell in cone.cells for a in self.precedents(cell).areas},
                       key=lambda a: (a.sheet, a.min_row, a.min_col, a.max_row, a.max_col))
        budget = MAX_INPUT_CELLS
        contents = []
        for area in areas:
            size, rows = self.stored(area)
            budget -= size
            if budget < 0:
                return None
            contents.append((area, tuple(tuple(_content(v) for v in row) for row in rows)))
        hidden = tuple((sheet, self.hidden_rows.get(sheet)) for sheet in sorted({a.sheet for a in areas}))
        formulas = tuple(sorted((cell, self.formulas[cell]) for cell in cone.cells))
        return formulas, tuple(contents), hidden, tuple(sorted(self.names.items(), key=repr))

    def stored(self, area: Area) -> tuple[int, Iterable[tuple]]:
        """What the file stores in ``area``, cut at its sheet's last used row and column: how
        many cells that is, and their values row by row (read as they are iterated)."""
        ws = self.book[area.sheet]
        last_row, last_column = self.dimensions(area.sheet)
        max_row, max_col = min(area.max_row, last_row), min(area.max_col, last_column)
        size = max(0, max_row - area.min_row + 1) * max(0, max_col - area.min_col + 1)
        if not size:
            return 0, ()
        return size, ws.iter_rows(min_row=area.min_row, max_row=max_row, min_col=area.min_col, max_col=max_col,
                                  values_only=True)

    def dimensions(self, sheet: str) -> tuple[int, int]:
        """The sheet's last used row and column, measured once: openpyxl's ``max_row`` and
        ``max_column`` walk every stored cell on each call."""
        if sheet not in self._dimensions:
            ws = self.book[sheet]
            self._dimensions[sheet] = (ws.max_row, ws.max_column)
        return self._dimensions[sheet]

    def dependency_levels(self, cells: Iterable[Cell]) -> list[list[Cell]] | None:
        """``cells`` in levels: each cell after every cell of the set its value depends on
        (through any formula). None when the order is not known: an open cone, or a cycle."""
        wanted = set(cells)
        reads: dict[Cell, set[Cell]] = {}
        for cell in wanted:
            if cell not in self.formulas:
                return None
            found = self.precedents(cell)
            cone = self.cone([c for area in found.areas for c in self._formulas_in(area)])
            if found.open or cone.open or cell in cone.cells:
                return None
            reads[cell] = (cone.cells & wanted) - {cell}
        level: dict[Cell, int] = {}
        while len(level) < len(wanted):  # no cycle among them (checked above), so each round places one more level
            for cell in sorted(wanted - set(level)):
                if all(p in level for p in reads[cell]):
                    level[cell] = 1 + max((level[p] for p in reads[cell]), default=-1)
        return [sorted(c for c in wanted if level[c] == n) for n in range(max(level.values(), default=-1) + 1)]

    def read_apart(self, cells: Iterable[Cell], steady: frozenset[str] = frozenset()) -> bool:
        """True when the values ``cells`` read do not depend on what ``cells`` hold: none of them
        reads, directly or through other formulas, a cell of the set (itself included), and what
        they read is placed (no open cone) and not volatile. Their formulas may then be changed
        one by one without changing what the others read. ``steady``: volatile functions the
        caller holds to one value over its computations (``TODAY`` within one day), which then
        do not count as volatile."""
        wanted = set(cells)
        if not wanted <= self.formulas.keys():
            return False
        own = [self.precedents(cell) for cell in wanted]
        areas = {area for found in own for area in found.areas}
        cone = self.cone({c for area in areas for c in self._formulas_in(area)})
        functions = cone.functions.union(*(found.functions for found in own))
        return not (cone.open or any(found.open for found in own) or cone.cells & wanted
                    or functions & (VOLATILE_FUNCTIONS - steady))

    def _formulas_in(self, area: Area) -> Iterable[Cell]:
        columns = self._columns_by_sheet.get(area.sheet, [])
        for column in columns[bisect.bisect_left(columns, area.min_col):bisect.bisect_right(columns, area.max_col)]:
            rows = self._rows_by_column[(area.sheet, column)]
            for row in rows[bisect.bisect_left(rows, area.min_row):bisect.bisect_right(rows, area.max_row)]:
                yield CellRef(area.sheet, row, column)

    def _read(self, text: str, home: str, depth: int) -> Precedents:
        found = Precedents()
        tokens = formula_tokens(text)
        if tokens is None:  # a formula the tokenizer cannot split: it may read anything
            found.open = True
            return found
        for token in tokens:
            name = function_of(token)
            if name is not None:
                found.functions.add(name)
                found.open |= name in DYNAMIC_REFERENCE_FUNCTIONS
            elif token.type == Token.OPERAND and token.subtype == Token.RANGE:
                self._place(token.value, home, depth, found)
        return found

    def _place(self, reference: str, home: str, depth: int, found: Precedents) -> None:
        if reference.upper() in ("TRUE", "FALSE"):
            return
        if _EXTERNAL.match(reference):
            found.external = True  # reads no cell of this workbook
            return
        match = _QUALIFIED.match(reference)
        if match is None or "[" in reference:  # an unresolved structured reference
            found.open = True
            return
        area_text = match.group("area")
        sheet = home
        if match.group("sheet"):
            quoted = match.group("sheet")
            named = quoted[1:-1].replace("''", "'") if quoted.startswith("'") else quoted
            known = self._sheet_by_lower.get(named.lower())
            if known is None:  # 3-D reference or unknown sheet
                found.open = True
                return
            sheet = known
        area = _area(sheet, area_text)
        if area is not None:
            found.areas.append(area)
            return
        definition = self.names.get((sheet.lower(), area_text.lower())) or self.names.get((None, area_text.lower()))
        if definition is None:
            if not area_text.lower().startswith("_xlpm."):  # LET/LAMBDA parameters read nothing
                found.open = True
            return
        if depth > 20:
            found.open = True
            return
        if plain_area(definition.removeprefix("="), sheet, self.sheets) is None:
            found.computed_names.add(area_text)
        inner = self._read(definition, sheet, depth + 1)
        found.areas.extend(inner.areas)
        found.functions |= inner.functions
        found.open |= inner.open
        found.external |= inner.external
        found.computed_names |= inner.computed_names


def load_graph(path: Path) -> FormulaGraph | None:
    """The formula graph of a workbook, or None when openpyxl cannot read it."""
    try:
        return FormulaGraph(load_formula_book(path))
    except Exception:
        return None


def _content(value: object) -> object:
    """A cell's content as FormulaGraph.inputs compares it: a formula by its text."""
    text = formula_text(value)
    return value if text is None else ("=", text)


def plain_area(reference: str, home: str, sheets: list[str]) -> Area | None:
    """The area of a plain reference (``B2``, ``'My sheet'!$B:$C``, ``3:5``) in a formula on
    sheet ``home``; None for anything else (a name, an expression, an unknown sheet)."""
    match = _QUALIFIED.match(reference.strip())
    if match is None or "[" in reference:
        return None
    sheet: str | None = home
    if match.group("sheet"):
        quoted = match.group("sheet")
        sheet = resolve_sheet(quoted[1:-1].replace("''", "'") if quoted.startswith("'") else quoted, sheets)
    return _area(sheet, match.group("area")) if sheet is not None else None


def _area(sheet: str, text: str) -> Area | None:
    plain = text.replace("$", "")
    if _CELL_OR_RANGE.match(text):
        min_col, min_row, max_col, max_row = boundaries(plain)
        return Area(sheet, min_row, min_col, max_row, max_col)
    if match := _COLUMNS.match(text):
        min_col, _, max_col, _ = boundaries(f"{match.group(1)}1:{match.group(2)}1")
        return Area(sheet, 1, min_col, MAX_ROWS, max_col)
    if match := _ROWS.match(text):
        return Area(sheet, int(match.group(1)), 1, int(match.group(2)), MAX_COLUMNS)
    return None


def _defined_names(book: openpyxl.Workbook) -> dict[tuple[str | None, str], str]:
    """(lower-cased sheet or None for workbook scope, lower-cased name) -> what it refers to."""
    names: dict[tuple[str | None, str], str] = {}
    for name, definition in book.defined_names.items():
        if definition.value:
            names[(None, name.lower())] = definition.value
    for ws in book.worksheets:
        for name, definition in ws.defined_names.items():
            if definition.value:
                names[(ws.title.lower(), name.lower())] = definition.value
    return names
