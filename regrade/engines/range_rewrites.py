"""Formula rewrites that work around IronCalc 0.9.1 defects, each shown by a probe or a test,
and the cuts of whole columns every engine can use.

- The criteria functions (COUNTIF, SUMIF, AVERAGEIF, COUNTIFS, SUMIFS, AVERAGEIFS,
  MAXIFS, MINIFS) give ``#VALUE!`` when a range argument is a single cell
  (``=COUNTIF(A1,"a*")``), which Excel accepts; ``A1:A1`` works, so single cells in
  range positions are widened to that.
- They read every row of a range written to the sheet's end (``COUNTIF(H$7:H$1048576, x)``):
  134 such formulas take IronCalc 10 s (SpreadsheetBench task 68-47). Ranges reaching
  far below the sheet's last used row are cut at that row. The rows cut off are blank:
  they add nothing to a sum, an average, a maximum or a minimum, and COUNTIF/COUNTIFS
  count them with one term, the number of rows cut times the count of one blank cell
  (``$XFD$1048576``) under the same criteria, so IronCalc's value does not change.
  formulas 1.3.4 counts nothing in such ranges (``COUNTIF(A$1:A$1048576, 5)`` is 0), so
  :mod:`regrade.engines.formulas` cuts them the same way.
- An exact-match VLOOKUP or MATCH (``VLOOKUP(x, Data!$B:$Z, 9, FALSE)``, ``MATCH(x, B:B, 0)``)
  reads every row of a whole column: about 0.25 s each here, so the 10,000 of SpreadsheetBench
  task 59932 take IronCalc some 40 minutes, where LibreOffice takes seconds (XLOOKUP and the
  criteria functions are quick on whole columns). Their table is cut the same way. In Excel
  an exact match never finds a blank cell (a wildcard matches text only; where IronCalc's
  lookup of an empty cell finds one, rule ``ironcalc-lookup-of-empty`` abstains, as its probe
  shows), so the first match lies in the rows kept and the value does not change.
  Approximate matches (a binary search over the whole range) are left alone: where the
  search lands depends on the range's size.
- UNIQUE of an expression computed element by element over whole columns
  (``UNIQUE(IF(A2=Data!A:A, Data!C:C, ""))``): IronCalc builds million-row arrays, a minute
  for ten such formulas (SpreadsheetBench task 45896). Where the expression holds only tall
  ranges of the same rows, single cells, constants, operators and functions that work one
  element at a time (:data:`ELEMENTWISE`: no ROW, INDEX, OFFSET or aggregate, nothing that
  depends on where an element stands), every row past the sheets' last used row is blank in
  every range, so each gives the same element. UNIQUE keeps each distinct value once, in the
  order it first appears (https://support.microsoft.com/office/unique-function-c5ab87fd-30a3-4ce9-9d1a-40204fb85e1e),
  so a run of equal elements at the end gives what one of them gives: the ranges are cut one
  row past the last used row, and UNIQUE's value, hence its caller's, does not change. Only
  UNIQUE with its one argument (``by_col`` and ``exactly_once`` left out: ``exactly_once``
  counts repeats).
- MAX or MIN of an expression computed element by element over whole columns, in an array
  formula (``{=MAX(IF(F:F=A2,G:G,""))}``, the idiom before MAXIFS): IronCalc and LibreOffice
  each spent their 60 s limit on the 405 such formulas of SpreadsheetBench task 17049's inputs.
  As for UNIQUE, every row past the sheets' last used row gives the same element, and a
  maximum or a minimum does not change when an element it already holds is repeated or left
  out, so the ranges are cut one row past the last used row (that row stands for all the blank
  ones: where ``A2`` is blank and no row of data is, ``MAX(IF(F:F=A2,1,0))`` is 1 because of
  them alone). Only in an array
  formula (``t="array"``: CSE, or a dynamic formula of Excel 365), where Excel computes the
  argument element by element; in a plain formula Excel before 365 takes the one element of
  the formula's own row (implicit intersection), which a cut range may no longer hold. Only
  MAX and MIN of one argument: MAXA and MINA count text and logical values. LibreOffice
  computes the same cut (:func:`value_keeping_cuts`, :mod:`regrade.engines.libreoffice.rewrites`).
- SUMPRODUCT of arrays computed by operators alone (``SUMPRODUCT((Data!I:I=A3)*(Data!Q:Q=L3))``)
  from tall one-column ranges of the same rows: IronCalc took 150 s for 22 of them
  (SpreadsheetBench task 51090). Every row past the last used one gives the same product, that
  of blank elements, so the ranges are cut at the last used row and the product of one blank
  cell (:data:`BLANK`) times the number of rows cut off is added, as for the counts above.
  SUMPRODUCT multiplies its arrays element by element and sums the products
  (https://support.microsoft.com/office/sumproduct-function-16753e75-9f68-4874-94ac-4d2145a2fd2e).
  Functions inside are left alone: IF in a formula saved by Excel before 365 is not computed
  element by element unless it is an array formula; a range of several columns gives several
  elements a row. LibreOffice computes the same cut (:func:`value_keeping_cuts`): it took
  30 s for those 22 formulas.

The cuts keep Excel's value whatever the engine; the widening of single cells works around
IronCalc alone. Formulon reads every row of a range written with rows to the sheet's end
(100 ``COUNTIF(A$1:A$1048576,A1)`` over 200 rows of data: 2.0 s; ``SUMIF``, 3.8 s;
``SUMPRODUCT``, 9.3 s; task 68-47's 134 COUNTIF: 1.7 s, 0.01 s cut), but not of a whole column
(``COUNTIF(A:A,A1)``: 0.002 s), so it gets the cuts of plain formulas of such ranges alone
(:func:`plain_formula_cuts`: the criteria functions', the exact lookups' and SUMPRODUCT's).
"""

from __future__ import annotations

import re
from typing import Callable

from openpyxl.formula.tokenizer import Token
from openpyxl.utils import column_index_from_string
from regrade.workbook.formula import bare_name, MAX_ROWS, tokens as formula_tokens

# function -> which arguments (0-based) are ranges; None: every even one (COUNTIFS pairs)
_RANGE_ARGUMENTS: dict[str, set[int] | None] = {
    "COUNTIF": {0}, "SUMIF": {0, 2}, "AVERAGEIF": {0, 2}, "COUNTIFS": None,
    "SUMIFS": {0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29},
    "AVERAGEIFS": {0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29},
    "MAXIFS": {0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29},
    "MINIFS": {0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29},
}
# function -> (its table argument, the argument that says an exact match), both 0-based
_EXACT_LOOKUPS: dict[str, tuple[int, int]] = {"VLOOKUP": (1, 3), "MATCH": (1, 2)}
_EXACT = frozenset({"FALSE", "0"})
_COUNTS = frozenset({"COUNTIF", "COUNTIFS"})
_MENTIONS = re.compile(r"(?:COUNT|SUM|AVERAGE|MAX|MIN)IFS?\(|VLOOKUP\(|MATCH\(|UNIQUE\(|SUMPRODUCT\(|MAX\(|MIN\(",
                       re.IGNORECASE)
_EXTREMA = frozenset({"MAX", "MIN"})  # idempotent: an element repeated or left out changes nothing
# functions that give one element of an array from the same element of their array arguments
# alone (scalar arguments broadcast), wherever that element stands: safe inside a cut UNIQUE
ELEMENTWISE = frozenset({
    "IF", "IFERROR", "IFNA", "NOT", "ISBLANK", "ISNUMBER", "ISTEXT", "ISNONTEXT", "ISLOGICAL", "ISERROR",
    "ISERR", "ISNA", "LEFT", "RIGHT", "MID", "LEN", "TRIM", "UPPER", "LOWER", "PROPER", "SUBSTITUTE",
    "TEXT", "VALUE", "N", "T", "ABS", "INT", "ROUND", "ROUNDUP", "ROUNDDOWN", "YEAR", "MONTH", "DAY",
})
_ELEMENTWISE_OPERATORS = frozenset({"+", "-", "*", "/", "^", "&", "=", "<>", "<", ">", "<=", ">=", "%"})
_SINGLE_CELL = re.compile(r"^(?P<prefix>(?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?(?P<cell>\$?[A-Z]{1,3}\$?\d+)$")
_RANGE = re.compile(
    r"^(?P<prefix>(?:(?P<sheet>'(?:[^']|'')+'|[A-Za-z0-9_.]+))!)?"
    r"(?:(?P<left>\$?[A-Z]{1,3}\$?)(?P<top>\d+):(?P<right>\$?[A-Z]{1,3}\$?)(?P<bottom>\d+)"
    r"|(?P<left_column>\$?[A-Z]{1,3}):(?P<right_column>\$?[A-Z]{1,3}))$"  # or whole columns: B:Z
)
BLANK = "$XFD$1048576:$XFD$1048576"  # a cell no workbook here uses (checked by the caller)
CLIP_BEYOND = 10_000  # rows past the last used one worth cutting

LastRow = Callable[[str | None], int | None]  # a sheet name (None: the formula's own) -> its last used row


def last_row_readers(last_rows: dict[str, int]) -> Callable[[str], LastRow | None]:
    """For a formula on sheet ``home``, the ``last_row`` to cut its ranges with: the last used
    row of the sheet a reference names (``last_rows`` keyed by lower-cased sheet name). None
    for every sheet when some sheet reaches the grid's last row: then ``$XFD$1048576``, the
    blank cell the cut counts with, may not be blank."""
    if MAX_ROWS in last_rows.values():
        return lambda home: None
    return lambda home: (lambda sheet: last_rows.get((sheet or home).lower()))


def rewrite_range_arguments(formula: str, last_row: LastRow | None = None, array: bool = False) -> str:
    """Single cells in the criteria functions' range positions widened (``=COUNTIF(A1,"a")`` as
    ``=COUNTIF(A1:A1,"a")``) and, with ``last_row``, their ranges and an exact lookup's table
    cut at the sheet's last used row where they reach far past it, and the other cuts of the
    module's text (those of MAX and MIN only where ``array``: the cell holds an array formula);
    other formulas unchanged."""
    return _rewritten(formula, last_row, array, widen=True, cuts=_EVERY_CUT, whole_columns=True)


def value_keeping_cuts(formula: str, last_row: LastRow, array: bool) -> str:
    """The cuts of whole columns that keep Excel's value in any engine (see the module's text):
    SUMPRODUCT's, and MAX's and MIN's where ``array`` (the cell holds an array formula). What
    LibreOffice needs of this module, whose other rewrites work around IronCalc's defects."""
    return _rewritten(formula, last_row, array, widen=False, cuts=frozenset({"sumproduct", "extremum"}),
                      whole_columns=True)


def plain_formula_cuts(formula: str, last_row: LastRow) -> str:
    """The cuts that keep Excel's value in a formula saved plain (not an array formula), of ranges
    written with rows (``H$7:H$1048576``; a whole column ``H:H`` is left as it is): the criteria
    functions' ranges and an exact lookup's table (the blank rows cut off counted back for
    COUNTIF and COUNTIFS), and SUMPRODUCT's arrays (see the module's text). No single cell is
    widened. What Formulon needs of this module (:mod:`regrade.engines.formulon`)."""
    return _rewritten(formula, last_row, False, widen=False, cuts=frozenset({"clip", "sumproduct"}), whole_columns=False)


_EVERY_CUT = frozenset({"clip", "unique", "sumproduct", "extremum"})


def _rewritten(formula: str, last_row: LastRow | None, array: bool, widen: bool, cuts: frozenset[str],
               whole_columns: bool) -> str:
    if not _MENTIONS.search(formula):
        return formula
    tokens = formula_tokens(formula)
    if tokens is None:
        return formula
    stack: list[_Frame] = []
    changed = False
    for index, token in enumerate(tokens):
        if token.subtype == Token.OPEN and token.type in (Token.FUNC, Token.PAREN, Token.ARRAY):
            name = bare_name(token.value[:-1]) if token.type == Token.FUNC else None
            stack.append(_Frame(name, tokens, index, whole_columns))
        elif token.subtype == Token.CLOSE and stack:
            frame = stack.pop()
            frame.bounds.append(index)
            if widen:
                changed |= frame.widen()
            if last_row is not None:
                changed |= frame.cut(last_row, array, cuts)
        elif token.type == Token.SEP and token.subtype == Token.ARG and stack and stack[-1].name is not None:
            stack[-1].bounds.append(index)
            changed |= widen and stack[-1].widen()
    return "=" + "".join(t.value for t in tokens) if changed else formula


class _Frame:
    """One open call or parenthesis: its name (None for a parenthesis) and where its arguments lie;
    ``whole_columns``: whether a whole column (``B:Z``) may be cut, not only a range written with rows."""

    def __init__(self, name: str | None, tokens: list[Token], opener: int, whole_columns: bool = True):
        self.name = name
        self.whole_columns = whole_columns
        self.tokens = tokens
        self.bounds = [opener]  # the opener, each separator, then the closer
        self.widened: set[int] = set()

    def argument(self, index: int) -> list[Token]:
        return self.tokens[self.bounds[index] + 1 : self.bounds[index + 1]]

    def range_positions(self, count: int) -> list[int]:
        if self.name not in _RANGE_ARGUMENTS:
            return []
        positions = _RANGE_ARGUMENTS[self.name]
        return [i for i in range(count) if (i % 2 == 0 if positions is None else i in positions)]

    def widen(self) -> bool:
        """The argument just closed (up to the last bound), if it is a single cell in a range position."""
        index = len(self.bounds) - 2
        if index in self.widened or index not in self.range_positions(index + 1):
            return False
        self.widened.add(index)
        operand = _sole_range(self.argument(index))
        match = _SINGLE_CELL.match(operand.value) if operand is not None else None
        if operand is None or not match:
            return False
        operand.value = f"{match.group('prefix') or ''}{match.group('cell')}:{match.group('cell')}"
        return True

    def cut(self, last_row: LastRow, array: bool, cuts: frozenset[str]) -> bool:
        """The first of ``cuts`` that applies to this call, made: ``clip``, ``unique``,
        ``sumproduct``, and ``extremum`` where ``array``."""
        return (("clip" in cuts and self.clip(last_row)) or ("unique" in cuts and self.clip_unique(last_row))
                or ("sumproduct" in cuts and self.clip_sumproduct(last_row))
                or (array and "extremum" in cuts and self.clip_extremum(last_row)))

    def clip_positions(self, count: int) -> list[int]:
        """The arguments :meth:`clip` may cut: the criteria functions' ranges, an exact lookup's table."""
        if self.name not in _EXACT_LOOKUPS:
            return self.range_positions(count)
        table, mode = _EXACT_LOOKUPS[self.name]
        exact = mode < count and "".join(t.value for t in self.argument(mode)).strip().upper() in _EXACT
        return [table] if exact else []

    def clip(self, last_row: LastRow) -> bool:
        """Cut the range arguments at their sheets' last used row when all span the same rows far past it."""
        count = len(self.bounds) - 1
        operands = [_sole_range(self.argument(i)) for i in self.clip_positions(count)]
        whole_columns = self.whole_columns and self.name in _EXACT_LOOKUPS  # B:Z too; the criteria functions' are quick
        pairs = [(o, m) for o in operands if o is not None and (m := _RANGE.match(o.value)) is not None
                 and (whole_columns or m["top"] is not None)]
        if not pairs or len(pairs) != len(operands):
            return False
        cut = _cut(pairs, last_row)
        if cut is None:
            return False
        bottom, new_bottom = cut
        if self.name in _COUNTS:  # the blank rows cut off, counted as one blank cell times their number
            criteria = ["".join(t.value for t in self.argument(i)) for i in range(1, count, 2)]
            blank = ",".join(f"{BLANK},{criterion}" for criterion in criteria)
            opener, closer = self.tokens[self.bounds[0]], self.tokens[self.bounds[-1]]
            opener.value = "(" + opener.value
            closer.value = f"{closer.value}+{bottom - new_bottom}*{self.name}({blank}))"
        return True

    def clip_unique(self, last_row: LastRow) -> bool:
        """Cut the tall ranges of UNIQUE's one argument one row past their sheets' last used
        row, where that argument is computed element by element (see the module's text)."""
        if self.name != "UNIQUE" or len(self.bounds) != 2:
            return False
        tall = _elementwise_ranges(self.argument(0), ELEMENTWISE)
        return tall is not None and _cut(tall, last_row, blank_rows_kept=1) is not None

    def clip_extremum(self, last_row: LastRow) -> bool:
        """Cut the tall ranges of MAX's or MIN's one argument one row past their sheets' last
        used row, where that argument is computed element by element (see the module's text;
        the caller knows the formula is an array formula)."""
        if self.name not in _EXTREMA or len(self.bounds) != 2:
            return False
        tall = _elementwise_ranges(self.argument(0), ELEMENTWISE)
        if not tall:
            return False  # a name, a position, an aggregate inside, or no tall range at all
        return _cut(tall, last_row, blank_rows_kept=1) is not None

    def clip_sumproduct(self, last_row: LastRow) -> bool:
        """Cut SUMPRODUCT's arrays, computed by operators alone from tall one-column ranges of
        the same rows, at their sheets' last used row, and add the rows cut off as the product
        of blank elements times their number (see the module's text)."""
        if self.name != "SUMPRODUCT":
            return False
        arguments = [self.argument(i) for i in range(len(self.bounds) - 1)]
        found = [_elementwise_ranges(argument, frozenset()) for argument in arguments]
        tall = [pair for ranges in found if ranges for pair in ranges]
        if not self.whole_columns and any(match["top"] is None for _, match in tall):
            return False
        if not all(found) or any(_columns(match) != 1 for _, match in tall):
            return False  # an argument with no tall range, or a function in one; a range of several columns
        cut_off = {id(token) for token, _ in tall}
        blank = ",".join("".join(BLANK if id(t) in cut_off else t.value for t in argument) for argument in arguments)
        cut = _cut(tall, last_row)
        if cut is None:
            return False
        bottom, new_bottom = cut
        opener, closer = self.tokens[self.bounds[0]], self.tokens[self.bounds[-1]]
        opener.value = "(" + opener.value
        closer.value = f"{closer.value}+{bottom - new_bottom}*SUMPRODUCT({blank}))"
        return True


def _elementwise_ranges(argument: list[Token], functions: frozenset[str]) -> list[tuple[Token, re.Match[str]]] | None:
    """The tall ranges of an argument computed element by element from them: single cells,
    constants, the operators of :data:`_ELEMENTWISE_OPERATORS` and calls of ``functions``, nothing
    else; None when it holds anything else (a name, a reference operator, an array constant)."""
    tall: list[tuple[Token, re.Match[str]]] = []
    for token in argument:
        if token.type == Token.OPERAND and token.subtype == Token.RANGE:
            if _SINGLE_CELL.match(token.value):
                continue
            match = _RANGE.match(token.value)
            if match is None:
                return None  # a name, a structured reference, a 3-D reference
            tall.append((token, match))
        elif token.type == Token.FUNC and token.subtype == Token.OPEN:
            if bare_name(token.value[:-1]) not in functions:
                return None
        elif token.type in (Token.OP_IN, Token.OP_PRE, Token.OP_POST):
            if token.value not in _ELEMENTWISE_OPERATORS:
                return None  # ":" or " " make a reference; "#" reads a spill
        elif not (token.type in (Token.FUNC, Token.PAREN, Token.WSPACE, Token.SEP)
                  or (token.type == Token.OPERAND and token.subtype != Token.RANGE)):
            return None  # an array constant
    return tall


def _columns(match: re.Match[str]) -> int:
    """How many columns a matched range spans."""
    left, right = ((match["left"], match["right"]) if match["top"] is not None
                   else (match["left_column"], match["right_column"]))
    return column_index_from_string(right.strip("$")) - column_index_from_string(left.strip("$")) + 1


def _cut(ranges: list[tuple[Token, re.Match[str]]], last_row: LastRow,
         blank_rows_kept: int = 0) -> tuple[int, int] | None:
    """Cut ``ranges``, which must all span the same rows, at their sheets' last used row (and
    ``blank_rows_kept`` more) where they reach far past it; the old and new last row, or None."""
    spans = {_rows(m) for _, m in ranges}
    lasts = [last_row(_sheet_name(m["sheet"])) for _, m in ranges]
    known = [last for last in lasts if last is not None]
    if len(spans) != 1 or len(known) != len(lasts):
        return None
    top, bottom = spans.pop()
    new_bottom = max(top, *known) + blank_rows_kept
    if bottom - new_bottom <= CLIP_BEYOND:
        return None
    for operand, match in ranges:
        left, right = ((match["left"], match["right"]) if match["top"] is not None
                       else (match["left_column"] + "$", match["right_column"] + "$"))
        operand.value = f"{match['prefix'] or ''}{left}{top}:{right}{new_bottom}"
    return bottom, new_bottom


def _rows(match: re.Match[str]) -> tuple[int, int]:
    """The first and last row a matched range spans (a whole column: all of them)."""
    return (int(match["top"]), int(match["bottom"])) if match["top"] is not None else (1, MAX_ROWS)


def _sole_range(argument: list[Token]) -> Token | None:
    operands = [t for t in argument if t.type != Token.WSPACE]
    if len(operands) == 1 and operands[0].type == Token.OPERAND and operands[0].subtype == Token.RANGE:
        return operands[0]
    return None


def _sheet_name(quoted: str | None) -> str | None:
    if quoted is None:
        return None
    return quoted[1:-1].replace("''", "'") if quoted.startswith("'") else quoted
