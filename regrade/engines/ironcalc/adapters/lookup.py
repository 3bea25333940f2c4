"""INDEX at one end of a range, XLOOKUP, XMATCH, LOOKUP and MATCH over arrays, computed by
:mod:`regrade.engines.functions.lookup`."""

from __future__ import annotations

from regrade.engines.functions.lookup import NA, NotImplementedMode, Vector, lookup, lookup_in, xlookup, xmatch
from regrade.engines.ironcalc.adapters.elementwise import elementwise
from regrade.engines.ironcalc.adapters.results import Slice
from regrade.engines.ironcalc.arguments import VALUE, Argument
from regrade.values import ExcelError
from regrade.workbook.formula import MAX_COLUMNS, MAX_ROWS


def index_reference(args: list[Argument]) -> object:
    """INDEX(reference, row, [column]) as a reference (row or column 0: the whole column or row)."""
    area = args[0].reference
    if area is None:
        return None
    sheet, min_row, min_col, max_row, max_col = area
    height, width = max_row - min_row + 1, max_col - min_col + 1
    numbers: list[int] = []
    for arg in args[1:]:
        number = 0.0 if arg.scalar is None else arg.scalar  # written as nothing, or an empty cell
        if isinstance(number, ExcelError):
            return number
        if not isinstance(number, float) or number < 0:
            return VALUE
        numbers.append(int(number))
    if len(numbers) == 1:  # INDEX(A1:A9, 3) is a row, INDEX(A1:E1, 3) a column; of a block, regrade is unsure
        if height > 1 and width > 1:
            return None
        row, column = (numbers[0], 1) if width == 1 else (1, numbers[0])
    else:
        row, column = numbers
    if row > height or column > width:
        return ExcelError("#REF!")
    top, bottom = (min_row, max_row) if row == 0 else (min_row + row - 1, min_row + row - 1)
    left, right = (min_col, max_col) if column == 0 else (min_col + column - 1, min_col + column - 1)
    return Slice((sheet, top, left, bottom, right))


def mode_of(arg: Argument | None, default: int) -> int:
    if arg is None or arg.omitted:
        return default
    value = arg.scalar
    if not isinstance(value, float):
        raise NotImplementedMode("a mode that is not a number")
    return int(value)


def xlookup_call(args: list[Argument]) -> object:
    if not 3 <= len(args) <= 6:
        return VALUE
    value, lookup, result = args[0], args[1], args[2]
    if len(value.rows) != 1 or len(value.rows[0]) != 1:
        raise NotImplementedMode("an array of lookup values")
    if isinstance(value.scalar, ExcelError):
        return value.scalar
    lookup, result = _same_length(lookup, result)
    if_not_found = NA if len(args) < 4 or args[3].omitted else args[3].scalar
    match_mode = mode_of(args[4] if len(args) > 4 else None, 0)
    search_mode = mode_of(args[5] if len(args) > 5 else None, 1)
    position = xmatch(value.scalar, lookup.rows, match_mode, search_mode)
    if isinstance(position, ExcelError):
        return if_not_found if position == NA else position
    found = xlookup(value.scalar, lookup.rows, result.rows, if_not_found, match_mode, search_mode)
    if isinstance(found, ExcelError) or result.reference is None:
        return found
    sheet, min_row, min_col, max_row, max_col = result.reference
    index = int(position) - 1
    by_rows = len(lookup.rows[0]) == 1
    if by_rows:
        return Slice((sheet, min_row + index, min_col, min_row + index, max_col))
    return Slice((sheet, min_row, min_col + index, max_row, min_col + index))


def _same_length(lookup: Argument, result: Argument) -> tuple[Argument, Argument]:
    """Whole columns (rows) are read up to the used range of their sheet: pad the shorter with blanks."""
    if lookup.reference is None or result.reference is None:
        return lookup, result
    if len(lookup.rows[0]) == 1 and lookup.reference[3] == result.reference[3] == MAX_ROWS:
        height = max(len(lookup.rows), len(result.rows))
        return _pad(lookup, height, None), _pad(result, height, None)
    if len(lookup.rows) == 1 and lookup.reference[4] == result.reference[4] == MAX_COLUMNS:
        width = max(len(lookup.rows[0]), len(result.rows[0]))
        return _pad(lookup, None, width), _pad(result, None, width)
    return lookup, result


def _pad(arg: Argument, height: int | None, width: int | None) -> Argument:
    rows = [row + [None] * ((width or len(row)) - len(row)) for row in arg.rows]
    rows += [[None] * len(rows[0]) for _ in range((height or len(rows)) - len(rows))]
    return Argument(rows, reference=arg.reference)


def xmatch_call(args: list[Argument]) -> object:
    if not 2 <= len(args) <= 4:
        return VALUE
    match_mode = mode_of(args[2] if len(args) > 2 else None, 0)
    search_mode = mode_of(args[3] if len(args) > 3 else None, 1)
    vector = Vector.of(args[1].rows)  # its keys once, for every lookup value
    found = [[xmatch(value, vector if vector is not None else args[1].rows, match_mode, search_mode)
              for value in row] for row in args[0].rows]
    return found[0][0] if len(found) == 1 and len(found[0]) == 1 else found  # over an array of lookup values, an array


def lookup_call(args: list[Argument]) -> object:
    if not 2 <= len(args) <= 3:
        return VALUE
    if len(args[0].rows) != 1 or len(args[0].rows[0]) != 1:
        raise NotImplementedMode("an array of lookup values")
    found = lookup(args[0].scalar, args[1].rows, args[2].rows if len(args) == 3 else None)
    if isinstance(found, ExcelError):
        return found
    position, answer = found
    result = args[2] if len(args) == 3 else None
    if result is not None and result.reference is not None:
        sheet, min_row, min_col, max_row, max_col = result.reference
        if min_col == max_col:
            return Slice((sheet, min_row + position, min_col, min_row + position, min_col))
        return Slice((sheet, min_row, min_col + position, min_row, min_col + position))
    return answer


def match_call(args: list[Argument]) -> object:
    """MATCH over each of an array of lookup values: exact (0, wildcards for text) and sorted (1, -1)."""
    if not 2 <= len(args) <= 3:
        return VALUE
    # an argument written as nothing is 0 (exact) in MATCH(x, range, ); only a missing one means 1
    mode = 0 if len(args) == 3 and args[2].omitted else mode_of(args[2] if len(args) == 3 else None, 1)
    if mode not in (0, 1, -1):
        return VALUE
    table = args[1].rows
    vector = Vector.of(table)  # its keys once, for every lookup value

    def one(value: object) -> object:
        if isinstance(value, ExcelError):
            return value
        if mode == 0:
            wildcard = isinstance(value, str) and any(ch in value for ch in "*?~")
            return xmatch(value, vector or table, 2 if wildcard else 0)
        if mode == -1:
            raise NotImplementedMode("MATCH type -1 over an array")
        if vector is None:
            found = lookup(value, table, table)  # #VALUE! (an empty value: abstain)
        else:
            found = lookup_in(value, vector, vector.values)
        return found if isinstance(found, ExcelError) else float(found[0] + 1)

    return elementwise(one)([args[0]])
