"""The arguments of a bridged call, evaluated by IronCalc on a throw-away copy of the model.

A plain reference is read cell by cell (with its hidden rows and nested SUBTOTAL/AGGREGATE
cells, which AGGREGATE's options may skip). Any other expression is entered in a scratch cell
right of the sheet's used range, in the caller's row (so ``ROW()`` still means the caller's
row): one evaluation sizes every expression with ``ROWS``/``COLUMNS``, a second computes them
as array formulas of that size. Identical expressions that do not depend on where they stand
are computed once, and an expression already computed on the same copy (in an earlier round of
the bridge) is taken from there: the copy's own cells have not changed since.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from openpyxl.utils.cell import range_boundaries

from regrade.engines.functions.aggregate import Item
from regrade.engines.functions.lookup import NA, NotImplementedMode
from regrade.engines.ironcalc.argument_texts import NUMBER, REFERENCE, offset_of_an_array, plainly_scalar, unspaced
from regrade.values import ExcelError
from regrade.workbook.formula import MAX_COLUMNS, MAX_ROWS, calls_function


MAX_ARRAY_CELLS = 200_000


VALUE = ExcelError("#VALUE!")


_POSITIONAL = re.compile(r"(?:ROW|COLUMN)\(\s*\)|\b(?:CELL|INDIRECT|OFFSET)\(", re.IGNORECASE)


ModelCell = tuple[int, int, int]  # a cell of an IronCalc model: sheet index, row, column


@dataclass
class Argument:
    """One evaluated argument: its values as rows, and where a reference came from."""

    rows: list[list[object]]
    hidden: list[bool] = field(default_factory=list)  # per row, references only
    filtered: list[bool] = field(default_factory=list)  # per row: hidden by a filter (references only)
    nested: list[list[bool]] = field(default_factory=list)  # per cell: a SUBTOTAL/AGGREGATE formula
    reference: tuple[int, int, int, int, int] | None = None  # sheet, min_row, min_col, max_row, max_col
    omitted: bool = False  # written as nothing, as in XLOOKUP(a, b, c, , 2)
    references: list[list[Argument | ExcelError]] | None = None  # OFFSET of an array: one reference per element

    @property
    def scalar(self) -> object:
        return self.rows[0][0] if len(self.rows) == 1 and len(self.rows[0]) == 1 else VALUE

    def items(self, filtered_only: bool = False) -> list[Item]:
        """Its values; with ``filtered_only``, only rows a filter hides are marked hidden (SUBTOTAL 1-11)."""
        flags = self.nested or [[False] * len(r) for r in self.rows]
        hidden = (self.filtered if filtered_only else self.hidden) or [False] * len(self.rows)
        return [Item(v, hidden=hidden[i], nested=flags[i][j]) for i, row in enumerate(self.rows) for j, v in enumerate(row)]


class Scratch:
    """Evaluates argument expressions on the copy, all at once, right of each sheet's used range."""

    def __init__(self, copy: Any, subtotal_cells: set[ModelCell], filtered_rows: Mapping[int, frozenset[int]],
                 known: dict[tuple, Argument | None]):
        self.copy = copy
        self.known = known  # expressions computed on this copy, in this round and earlier ones: key -> value
        self.subtotal_cells = subtotal_cells  # SUBTOTAL/AGGREGATE cells, whose formulas may already hold literals
        self.filtered_rows = filtered_rows  # per sheet index: the rows a filter hides
        self.names = [p["name"] for p in copy.get_worksheets_properties()]
        self.expressions: dict[tuple, dict] = {}  # key -> {"cell": ModelCell, "text": str, "rows", "columns", "at"}
        self.next_in_row: dict[tuple[int, int], int] = {}
        self.first_free = {s: copy.get_sheet_dimensions(s)[3] + 2 for s in range(len(self.names))}

    def plan(self, cell: ModelCell, text: str, function: str = "") -> tuple:
        """What the argument is: a literal, a reference, a key of an expression to evaluate, or
        (a SUBTOTAL's) an OFFSET of an array, with the plans of OFFSET's arguments."""
        if text == "":
            return ("omitted",)
        if function == "SUBTOTAL" and (offset := offset_of_an_array(text)) is not None:
            return ("offset", self.plan(cell, offset.args[0]), tuple(self.plan(cell, a) for a in offset.args[1:]))
        if NUMBER.match(text):
            return ("literal", float(text))
        if text.startswith('"') and text.endswith('"') and '"' not in text[1:-1].replace('""', ""):
            return ("literal", text[1:-1].replace('""', '"'))
        reference = REFERENCE.match(unspaced(text))
        if reference and (area := self._area(cell[0], reference)) is not None:
            return ("reference", area)
        key = (cell[0], text) if not _POSITIONAL.search(text) else (cell[0], text, cell[1], cell[2])
        if key not in self.expressions and key not in self.known:
            sheet, row, _ = cell
            self.expressions[key] = {"cell": cell, "text": text, "size": (self._take(sheet, row), self._take(sheet, row))}
        return ("expression", key)

    def evaluate(self) -> None:
        if not self.expressions:
            return
        for entry in self.expressions.values():
            entry["sized"] = not plainly_scalar(entry["text"])
        sized = [e for e in self.expressions.values() if e["sized"]]
        for entry in sized:
            sheet, row, _ = entry["cell"]
            rows_at, columns_at = entry["size"]
            self.copy.update_cell_with_formula(sheet, row, rows_at, f"=ROWS({entry['text']})")
            self.copy.update_cell_with_formula(sheet, row, columns_at, f"=COLUMNS({entry['text']})")
        if sized:  # an evaluation of the whole model: skipped when every expression is plainly one value
            self.copy.evaluate()
        for entry in self.expressions.values():
            sheet, row, _ = entry["cell"]
            rows, columns = (read_cell(self.copy, sheet, row, c) for c in entry["size"]) if entry["sized"] else (1.0, 1.0)
            if not isinstance(rows, float) or not isinstance(columns, float):
                rows = columns = 1.0  # a scalar expression
            entry["shape"] = (int(rows), int(columns))
        placed = [e for e in self.expressions.values() if e["shape"][0] * e["shape"][1] <= MAX_ARRAY_CELLS]
        for entry in placed:  # one-row results in their caller's row ...
            sheet, row, _ = entry["cell"]
            if entry["shape"][0] == 1:
                entry["at"] = (sheet, row, self._take(sheet, row, entry["shape"][1]), *entry["shape"])
        tall_from = dict(self.first_free)  # ... taller ones in columns of their own, right of all those
        for (sheet, _), column in self.next_in_row.items():
            tall_from[sheet] = max(tall_from[sheet], column)
        for entry in placed:
            sheet, row, _ = entry["cell"]
            rows, columns = entry["shape"]
            if rows > 1:
                top = row if row + rows - 1 <= MAX_ROWS else 1
                entry["at"] = (sheet, top, tall_from[sheet], rows, columns)
                tall_from[sheet] += columns
                if tall_from[sheet] - 1 > MAX_COLUMNS:
                    raise OverflowError("no scratch column left")
        for entry in placed:
            sheet, top, column, rows, columns = entry["at"]
            if rows == 1 and columns == 1:
                self.copy.update_cell_with_formula(sheet, top, column, f"={entry['text']}")
            else:
                self.copy.set_user_array_formula(sheet, top, column, columns, rows, f"={entry['text']}")
        self.copy.evaluate()
        for key in self.expressions:
            self.known[key] = self._computed(key)

    def argument(self, plan: tuple) -> Argument | None:
        kind = plan[0]
        if kind == "offset":
            return self._offset(self.argument(plan[1]), [self.argument(p) for p in plan[2]])
        if kind == "omitted":
            return Argument([[None]], omitted=True)
        if kind == "literal":
            return Argument([[plan[1]]])
        if kind == "reference":
            return self._reference(plan[1])
        known = self.known[plan[1]]
        return None if known is None else Argument([list(row) for row in known.rows])  # the caller's own copy

    def _computed(self, key: tuple) -> Argument | None:
        """The value of an evaluated expression; None where it was too large to place."""
        at = self.expressions[key].get("at")
        if at is None:
            return None
        sheet, top, column, rows, columns = at
        return Argument([[read_cell(self.copy, sheet, r, c) for c in range(column, column + columns)]
                         for r in range(top, top + rows)])

    def _take(self, sheet: int, row: int, width: int = 1) -> int:
        column = self.next_in_row.get((sheet, row), self.first_free[sheet])
        if column + width - 1 > MAX_COLUMNS:
            raise OverflowError("no scratch column left")
        self.next_in_row[(sheet, row)] = column + width
        return column

    def _area(self, home: int, match: re.Match[str]) -> tuple[int, int, int, int, int] | None:
        sheet = home
        if match.group("sheet"):
            name = match.group("sheet").strip("'").replace("''", "'")
            if name not in self.names:
                return None
            sheet = self.names.index(name)
        try:
            min_col, min_row, max_col, max_row = range_boundaries(match.group("range").replace("$", ""))
        except ValueError:
            return None
        _, used_rows, _, used_columns = self.copy.get_sheet_dimensions(sheet)
        whole_column, whole_row = min_row is None, min_col is None
        min_row, max_row = min_row or 1, max_row or MAX_ROWS
        min_col, max_col = min_col or 1, max_col or MAX_COLUMNS
        area = (sheet, min_row, min_col, max_row, max_col)
        # a whole column or row is read up to the used range (what lies beyond is empty)
        read_rows = min(max_row, used_rows) if whole_column else max_row
        read_cols = min(max_col, used_columns) if whole_row else max_col
        if (read_rows - min_row + 1) * (read_cols - min_col + 1) > MAX_ARRAY_CELLS:
            return None
        return area

    def _reference(self, area: tuple[int, int, int, int, int]) -> Argument:
        sheet, min_row, min_col, max_row, max_col = area
        _, used_rows, _, used_columns = self.copy.get_sheet_dimensions(sheet)
        if max_row == MAX_ROWS:  # a whole column: what lies below the used range is empty
            max_row = max(used_rows, min_row)
        if max_col == MAX_COLUMNS:
            max_col = max(used_columns, min_col)
        rows, hidden, nested, filtered = [], [], [], []
        by_filter = self.filtered_rows.get(sheet, frozenset())
        for r in range(min_row, max_row + 1):
            hidden.append(self.copy.is_row_hidden(sheet, r))
            filtered.append(r in by_filter)
            rows.append([read_cell(self.copy, sheet, r, c) for c in range(min_col, max_col + 1)])
            nested.append([(sheet, r, c) in self.subtotal_cells or _is_subtotal(self.copy.get_cell_formula(sheet, r, c))
                           for c in range(min_col, max_col + 1)])
        return Argument(rows, hidden, filtered, nested, reference=area)

    def _offset(self, base: Argument | None, parts: list[Argument | None]) -> Argument | None:
        """OFFSET(base, rows, columns, [height], [width]) over arrays: one reference per element, the
        arguments broadcast as in :func:`elementwise` (an error element is that error); None where
        regrade cannot take it (the base is not a reference, the areas are too large to read)."""
        if base is None or base.reference is None or any(p is None for p in parts):
            return None
        grids = [p.rows for p in parts if p is not None]
        omitted = [p.omitted for p in parts if p is not None]
        height, width = max(len(g) for g in grids), max(len(g[0]) for g in grids)
        references: list[list[Argument | ExcelError]] = []
        read = 0
        for r in range(height):
            references.append([])
            for c in range(width):
                area = offset_area(base.reference, [broadcast(g, r, c) for g in grids], omitted)
                if not isinstance(area, ExcelError):
                    read += (area[3] - area[1] + 1) * (area[4] - area[2] + 1)
                    if read > MAX_ARRAY_CELLS:
                        return None
                references[-1].append(area if isinstance(area, ExcelError) else self._reference(area))
        return Argument([[None]], references=references)


def broadcast(grid: list[list[object]], r: int, c: int) -> object:
    """Element (r, c) of an array stretched as Excel does: a single row or column repeats; past a
    shorter array's end, #N/A."""
    r, c = (0 if len(grid) == 1 else r), (0 if len(grid[0]) == 1 else c)
    return grid[r][c] if r < len(grid) and c < len(grid[r]) else NA


def offset_area(base: tuple[int, int, int, int, int], numbers: list[object],
                 omitted: list[bool]) -> tuple[int, int, int, int, int] | ExcelError:
    """The area OFFSET(base, rows, columns, [height], [width]) refers to: rows and columns moved (written
    as nothing or an empty cell: 0), height and width the base's when left out; past the sheet's
    edge or of size 0, #REF!. A number that is not a whole number, a negative size or a value that
    is not a number is left to IronCalc (regrade is unsure how Excel reads it)."""
    sheet, top, left, bottom, right = base
    whole: list[int | None] = []
    for position, value in enumerate(numbers):
        if isinstance(value, ExcelError):
            return value
        if position >= 2 and omitted[position]:
            whole.append(None)
        elif value is None:
            whole.append(0)
        elif isinstance(value, float) and value.is_integer():
            whole.append(int(value))
        else:
            raise NotImplementedMode("an OFFSET argument that is not a whole number")
    rows, columns = whole[0] or 0, whole[1] or 0
    height = whole[2] if len(whole) > 2 and whole[2] is not None else bottom - top + 1
    width = whole[3] if len(whole) > 3 and whole[3] is not None else right - left + 1
    if height < 0 or width < 0:
        raise NotImplementedMode("OFFSET of a negative size")
    first_row, first_column = top + rows, left + columns
    last_row, last_column = first_row + height - 1, first_column + width - 1
    if height == 0 or width == 0 or first_row < 1 or first_column < 1 or last_row > MAX_ROWS or last_column > MAX_COLUMNS:
        return ExcelError("#REF!")
    return (sheet, first_row, first_column, last_row, last_column)


def read_cell(model: Any, sheet: int, row: int, column: int) -> object:
    """A cell's value as the bridge computes with it. IronCalc gives a number as a float, a
    logical value as a bool and text and errors as str, and None for an empty cell (its type
    then says Number): a float is a number without asking its type, which the bridge's reading
    of large arrays spends most of its calls on."""
    value = model.get_cell_value(sheet, row, column)
    if type(value) is float:
        return value
    if value is None and model.is_empty_cell(sheet, row, column):
        return None
    import ironcalc

    kind = model.get_cell_type(sheet, row, column)
    if kind == ironcalc.CellType.ErrorValue:
        return ExcelError(str(value))
    if kind == ironcalc.CellType.LogicalValue:
        return bool(value)
    return value


def _is_subtotal(formula: str | None) -> bool:
    """A SUBTOTAL or AGGREGATE formula, whose cell an outer SUBTOTAL or AGGREGATE may skip."""
    return formula is not None and calls_function(formula, "SUBTOTAL", "AGGREGATE")
