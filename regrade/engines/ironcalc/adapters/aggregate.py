"""AGGREGATE, SUBTOTAL and the aggregates over one computed array (SUM, AVERAGE, MIN, MAX,
COUNT, SMALL, LARGE), computed by :mod:`regrade.engines.functions.aggregate`."""

from __future__ import annotations

import re
from typing import Callable

from regrade.engines.functions.aggregate import Item, aggregate
from regrade.engines.functions.lookup import NotImplementedMode
from regrade.engines.ironcalc.adapters.elementwise import elementwise
from regrade.engines.ironcalc.arguments import VALUE, Argument
from regrade.values import ExcelError


SUBTOTAL_BY_IRONCALC = re.compile(r"\s*(?:10[1-9]|[1-9]|1[01])\s*")  # IronCalc's own are right (1-11: unfiltered)


def aggregate_call(args: list[Argument]) -> object:
    if len(args) < 3:
        return VALUE
    function, options = args[0].scalar, args[1].scalar
    for value in (function, options):
        if isinstance(value, ExcelError):
            return value
        if not isinstance(value, float):
            return VALUE
    assert isinstance(function, float) and isinstance(options, float)
    number = int(function)
    if number >= 14:
        if len(args) != 4:
            return VALUE
        k = args[3].scalar
        if isinstance(k, ExcelError):
            return k
        return aggregate(number, int(options), args[2].items(), k) if isinstance(k, float) else VALUE
    if any(a.reference is None for a in args[2:]):
        return VALUE  # functions 1-13 take references only
    return aggregate(number, int(options), [i for a in args[2:] for i in a.items()])


def subtotal_call(args: list[Argument]) -> object:
    """SUBTOTAL(n, ref, ...) is AGGREGATE(n, 0, ref, ...) for n in 1-11, AGGREGATE(n - 100, 1, ...) for 101-111."""
    if len(args) < 2:
        return VALUE
    function = args[0].scalar
    if isinstance(function, ExcelError):
        return function
    if not isinstance(function, float) or int(function) not in (*range(1, 12), *range(101, 112)):
        return VALUE
    if any(a.references is not None for a in args[1:]):  # OFFSET of an array: one value per reference
        if len(args) != 2:
            raise NotImplementedMode("OFFSET of an array among other references")
        grid = args[1].references or []
        result = [[e if isinstance(e, ExcelError) else subtotal_call([args[0], e]) for e in row] for row in grid]
        return result[0][0] if len(result) == 1 and len(result[0]) == 1 else result
    if any(a.reference is None for a in args[1:]):
        return VALUE  # SUBTOTAL takes references only
    number = int(function)
    # every SUBTOTAL skips the rows a filter hides and the cells that are subtotals themselves;
    # 101-111 also skip rows hidden by hand (support.microsoft.com: SUBTOTAL function)
    return aggregate(number % 100, 1, [i for a in args[1:] for i in a.items(filtered_only=number < 100)])


def over_array(number: int) -> Callable[[list[Argument]], object]:
    """SUM, AVERAGE ... of one array argument (SMALL and LARGE: and k, element by element over an
    array of k), as AGGREGATE ignoring nothing; COUNT, which counts numbers, ignores errors
    (COUNT(1/FREQUENCY(...)) counts the distinct values, task 57090)."""
    options = 6 if number == 2 else 4

    def compute(args: list[Argument]) -> object:
        items = [Item(v) for row in args[0].rows for v in row]
        if number >= 14:
            def one(k: object) -> object:
                return k if isinstance(k, ExcelError) else aggregate(number, options, items, k) if isinstance(k, float) else VALUE

            return elementwise(one)([args[1]])
        return aggregate(number, options, items)

    return compute
