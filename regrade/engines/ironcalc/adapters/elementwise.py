"""Scalar functions applied element by element over arrays, as Excel does and IronCalc does not."""

from __future__ import annotations

import math
from typing import Callable

from regrade.engines.functions.values import as_number
from regrade.engines.ironcalc.arguments import VALUE, Argument, broadcast
from regrade.values import ExcelError


def elementwise(function: Callable[..., object]) -> Callable[[list[Argument]], object]:
    """A scalar function applied element by element, arguments broadcast as Excel does
    (a single value or a single row/column stretches; positions beyond a shorter array are #N/A)."""

    def compute(args: list[Argument]) -> object:
        grids = [a.rows for a in args]
        height, width = max(len(g) for g in grids), max(len(g[0]) for g in grids)

        result = [[function(*(broadcast(g, r, c) for g in grids)) for c in range(width)] for r in range(height)]
        return result[0][0] if height == width == 1 else result

    return compute


def mod(number: object, divisor: object) -> object:
    for value in (number, divisor):
        if isinstance(value, ExcelError):
            return value
    a, b = as_number(number), as_number(divisor)
    if a is None or b is None:
        return VALUE
    if b == 0:
        return ExcelError("#DIV/0!")
    return _significant(a - b * math.floor(a / b), a)


def _significant(result: float, operand: float) -> float:
    """``result`` to the 15 significant digits Excel keeps of ``operand``: the digits of a
    difference below that are floating-point noise (1.000003 is stored as 1.0000029999999999752,
    so 1.000003 - 1 is 2.9999999999752E-06 in IEEE arithmetic and 3E-06 in Excel)."""
    if operand == 0 or result == 0 or not math.isfinite(result):
        return result
    quantum = 10.0 ** (math.floor(math.log10(abs(operand))) - 14)
    return round(result / quantum) * quantum


def not_(value: object) -> object:
    if isinstance(value, ExcelError):
        return value
    number = as_number(value)
    return VALUE if number is None else number == 0


def n(value: object) -> object:
    if isinstance(value, ExcelError):
        return value
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    return float(value) if isinstance(value, (int, float)) else 0.0
