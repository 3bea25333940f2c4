"""AGGREGATE for IronCalc, which lacks it: IronCalc computes the arguments, Python the function.

For each formula that calls AGGREGATE (innermost call first), the arguments are
evaluated by IronCalc itself on a throw-away copy of the model: a plain reference is
read cell by cell (with its hidden rows and nested SUBTOTAL/AGGREGATE formulas, which
the options may skip); any other expression is entered there as an array formula in
a scratch column of the same sheet and row (so ``ROW()`` still means the caller's row).
:func:`engines.functions.aggregate.aggregate` computes the result, which replaces the
call in the real model's formula as a literal. Passes repeat until no result changes,
so an AGGREGATE that reads another AGGREGATE's cell converges; a workbook that does
not settle keeps its original formulas (and IronCalc abstains on them as before).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.utils.cell import range_boundaries

from engines.base import ExcelError
from engines.functions.aggregate import Item, aggregate

MAX_PASSES = 6
MAX_ARRAY_CELLS = 200_000
_AGGREGATE = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?aggregate\(", re.IGNORECASE)
_REFERENCE = re.compile(
    r"^(?:(?P<sheet>'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?(?P<range>\$?[A-Z]{1,3}\$?\d*(?::\$?[A-Z]{1,3}\$?\d*)?)$"
)


@dataclass
class _Call:
    """One innermost AGGREGATE call of one cell's formula, and where its pieces go."""

    sheet: int
    row: int
    column: int
    tokens: list[Token]
    start: int
    end: int
    args: list[str]
    scratch: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> (row, column) on the copy


def compute_aggregates(model: Any) -> dict[tuple[int, int, int], str]:
    """Replace every AGGREGATE call by its value; returns each changed cell's original formula."""
    import ironcalc

    originals: dict[tuple[int, int, int], str] = {}
    for sheet, row, column in model.get_all_cells():
        formula = model.get_cell_formula(sheet, row, column)
        if formula and _AGGREGATE.search(formula):
            originals[(sheet, row, column)] = formula
    if not originals:
        return {}
    previous: dict[tuple[int, int, int], str] = {}
    for _ in range(MAX_PASSES):
        copy = ironcalc.load_from_bytes(model.to_bytes())
        copy.evaluate()
        try:
            current = {cell: _resolve(copy, cell, text) for cell, text in originals.items()}
        except Exception:  # a formula IronCalc will not take, no scratch room left...: abstain as before
            current = dict(originals)
        if current == previous:
            return originals
        for (sheet, row, column), text in current.items():
            model.update_cell_with_formula(sheet, row, column, text)
        model.evaluate()
        previous = current
    for (sheet, row, column), text in originals.items():  # did not settle: give up honestly
        model.update_cell_with_formula(sheet, row, column, text)
    model.evaluate()
    return {}


def _resolve(copy: Any, cell: tuple[int, int, int], formula: str) -> str:
    """The formula with all its AGGREGATE calls replaced, innermost first, on ``copy``."""
    for _ in range(20):
        call = _innermost(cell, formula)
        if call is None:
            return formula
        value = _evaluate_call(copy, call)
        if value is None:
            return formula
        rendered = "".join(t.value for t in call.tokens[: call.start]) + _literal(value) + "".join(
            t.value for t in call.tokens[call.end + 1 :]
        )
        formula = "=" + rendered
    return formula


def _innermost(cell: tuple[int, int, int], formula: str) -> _Call | None:
    try:
        tokens = Tokenizer(formula).items
    except Exception:
        return None
    stack: list[tuple[int, bool, list[list[Token]]]] = []
    for index, token in enumerate(tokens):
        opens = token.subtype == Token.OPEN and token.type in (Token.FUNC, Token.PAREN, Token.ARRAY)
        if opens:
            is_aggregate = token.type == Token.FUNC and _AGGREGATE.fullmatch(token.value) is not None
            stack.append((index, is_aggregate, [[]]))
            continue
        if token.subtype == Token.CLOSE and stack:
            start, is_aggregate, args = stack.pop()
            if is_aggregate:
                texts = ["".join(t.value for t in arg).strip() for arg in args]
                return _Call(*cell, tokens=tokens, start=start, end=index, args=texts)
            if stack:
                stack[-1][2][-1].extend(tokens[start : index + 1])
            continue
        if token.type == Token.SEP and token.subtype == Token.ARG and stack and tokens[stack[-1][0]].type == Token.FUNC:
            stack[-1][2].append([])
        elif stack:
            stack[-1][2][-1].append(token)
    return None


def _evaluate_call(copy: Any, call: _Call) -> float | ExcelError | None:
    if len(call.args) < 3:
        return ExcelError("#VALUE!")
    scratch = _Scratch(copy, call.sheet, call.row)
    function, options = scratch.scalar(call.args[0]), scratch.scalar(call.args[1])
    if isinstance(function, ExcelError) or isinstance(options, ExcelError):
        return function if isinstance(function, ExcelError) else options
    if not isinstance(function, float) or not isinstance(options, float):
        return ExcelError("#VALUE!")
    number = int(function)
    if number >= 14:
        if len(call.args) != 4:
            return ExcelError("#VALUE!")
        items = scratch.items(call.args[2], reference_only=False)
        k = scratch.scalar(call.args[3])
        if isinstance(k, ExcelError):
            return k
        if items is None or not isinstance(k, float):
            return None if items is None else ExcelError("#VALUE!")
        return aggregate(number, int(options), items, k)
    collected: list[Item] = []
    for arg in call.args[2:]:
        items = scratch.items(arg, reference_only=True)
        if items is None:
            return ExcelError("#VALUE!")  # functions 1-13 take references only
        collected.extend(items)
    return aggregate(number, int(options), collected)


class _Scratch:
    """Evaluates expressions on the copy, in free columns right of the sheet's used range."""

    def __init__(self, copy: Any, sheet: int, row: int):
        self.copy, self.sheet, self.row = copy, sheet, row
        self.names = [p["name"] for p in copy.get_worksheets_properties()]
        # the used range grows with every scratch formula, so no two calls share a column
        self.next_column = copy.get_sheet_dimensions(sheet)[3] + 2

    def _take_column(self) -> int:
        column = self.next_column
        self.next_column += 1
        if column > 16_384:
            raise OverflowError("no scratch column left")
        return column

    def scalar(self, text: str) -> object:
        try:
            return float(text)
        except ValueError:
            pass
        column = self._take_column()
        self.copy.update_cell_with_formula(self.sheet, self.row, column, f"={text}")
        self.copy.evaluate()
        return _read(self.copy, self.sheet, self.row, column)

    def items(self, text: str, reference_only: bool) -> list[Item] | None:
        reference = _REFERENCE.match(text.replace(" ", ""))
        if reference:
            return self._reference_items(reference)
        if reference_only:
            return None
        rows, columns = self.scalar(f"ROWS({text})"), self.scalar(f"COLUMNS({text})")
        if not isinstance(rows, float) or not isinstance(columns, float):
            value = self.scalar(text)
            return [Item(value)]
        if rows * columns > MAX_ARRAY_CELLS:
            return None
        column = self._take_column()
        self.next_column += int(columns)
        top = self.row if self.row + rows - 1 <= 1_048_576 else 1
        self.copy.set_user_array_formula(self.sheet, top, column, int(columns), int(rows), f"={text}")
        self.copy.evaluate()
        return [Item(_read(self.copy, self.sheet, r, c))
                for r in range(top, top + int(rows)) for c in range(column, column + int(columns))]

    def _reference_items(self, match: re.Match[str]) -> list[Item] | None:
        sheet = self.sheet
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
        min_row, max_row = min_row or 1, max_row or used_rows
        min_col, max_col = min_col or 1, max_col or used_columns
        items = []
        for r in range(min_row, max_row + 1):
            hidden = self.copy.is_row_hidden(sheet, r)
            for c in range(min_col, max_col + 1):
                formula = self.copy.get_cell_formula(sheet, r, c) or ""
                nested = "SUBTOTAL(" in formula.upper() or _AGGREGATE.search(formula) is not None
                items.append(Item(_read(self.copy, sheet, r, c), hidden=hidden, nested=nested))
        return items


def _read(model: Any, sheet: int, row: int, column: int) -> object:
    import ironcalc

    if model.is_empty_cell(sheet, row, column):
        return None
    kind = model.get_cell_type(sheet, row, column)
    value = model.get_cell_value(sheet, row, column)
    if kind == ironcalc.CellType.ErrorValue:
        return ExcelError(str(value))
    if kind == ironcalc.CellType.LogicalValue:
        return bool(value)
    return value


def _literal(value: float | ExcelError) -> str:
    if isinstance(value, ExcelError):
        return value.code
    text = repr(float(value))
    return f"({text})" if value < 0 else text
