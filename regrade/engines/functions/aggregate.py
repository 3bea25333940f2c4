"""Excel's AGGREGATE, for engines that lack it.

``AGGREGATE(function, options, ref1, [ref2, ...])`` (reference form, functions 1-13)
and ``AGGREGATE(function, options, array, k)`` (functions 14-19). Options:

====== ============================================================
0      ignore nested SUBTOTAL and AGGREGATE
1      0, and hidden rows
2      0, and error values
3      0, hidden rows and error values
4      ignore nothing
5      hidden rows
6      error values
7      hidden rows and error values
====== ============================================================

The caller supplies the argument values as :class:`Item` s, each saying whether it
came from a hidden row or from a nested SUBTOTAL/AGGREGATE; this module does the
arithmetic only. Errors are returned as :class:`ExcelError`.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

from regrade.values import ExcelError

NUM, DIV0, VALUE, NA = ExcelError("#NUM!"), ExcelError("#DIV/0!"), ExcelError("#VALUE!"), ExcelError("#N/A")


@dataclass(frozen=True)
class Item:
    """One value of an argument: a number, text, bool, None (empty) or an ExcelError."""

    value: object
    hidden: bool = False
    nested: bool = False


def aggregate(function: int, options: int, items: Sequence[Item], k: float | None = None) -> float | ExcelError:
    if not 1 <= function <= 19 or not 0 <= options <= 7:
        return VALUE
    skip_nested = options in (0, 1, 2, 3)
    skip_hidden = options in (1, 3, 5, 7)
    skip_errors = options in (2, 3, 6, 7)
    kept = [i for i in items if not (skip_nested and i.nested) and not (skip_hidden and i.hidden)]
    for item in kept:
        if isinstance(item.value, ExcelError) and not skip_errors:
            return item.value
    values = [i.value for i in kept if not isinstance(i.value, ExcelError)]
    if function == 3:
        return float(sum(1 for v in values if v is not None))
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if function <= 13:
        return _REFERENCE_FORM[function](numbers)
    if k is None:
        return VALUE
    return _ARRAY_FORM[function](sorted(numbers), float(k))


def _guard(compute: Callable[[list[float]], float], minimum: int, error: ExcelError) -> Callable[[list[float]], float | ExcelError]:
    def run(numbers: list[float]) -> float | ExcelError:
        return compute(numbers) if len(numbers) >= minimum else error

    return run


def _mode(numbers: list[float]) -> float | ExcelError:
    counts: dict[float, int] = {}
    for n in numbers:
        counts[n] = counts.get(n, 0) + 1
    best = max(counts.values(), default=0)
    if best < 2:
        return NA
    return next(n for n in numbers if counts[n] == best)  # the first to reach the top count, as Excel


_REFERENCE_FORM: dict[int, Callable[[list[float]], float | ExcelError]] = {
    1: _guard(statistics.fmean, 1, DIV0),
    2: lambda ns: float(len(ns)),
    4: lambda ns: max(ns, default=0.0),
    5: lambda ns: min(ns, default=0.0),
    6: lambda ns: math.prod(ns) if ns else 0.0,
    7: _guard(statistics.stdev, 2, DIV0),
    8: _guard(statistics.pstdev, 1, DIV0),
    9: lambda ns: math.fsum(ns),
    10: _guard(statistics.variance, 2, DIV0),
    11: _guard(statistics.pvariance, 1, DIV0),
    12: _guard(statistics.median, 1, NUM),
    13: _mode,
}


def _large(ns: list[float], k: float) -> float | ExcelError:
    rank = math.ceil(k)
    return ns[-rank] if 1 <= rank <= len(ns) else NUM


def _small(ns: list[float], k: float) -> float | ExcelError:
    rank = math.ceil(k)
    return ns[rank - 1] if 1 <= rank <= len(ns) else NUM


def _interpolate(ns: list[float], position: float) -> float:
    """The value at a 0-based fractional position of sorted ``ns``."""
    low = math.floor(position)
    if low + 1 >= len(ns):
        return ns[low]
    return ns[low] + (position - low) * (ns[low + 1] - ns[low])


def _percentile_inc(ns: list[float], k: float) -> float | ExcelError:
    if not ns or not 0 <= k <= 1:
        return NUM
    return _interpolate(ns, k * (len(ns) - 1))


def _percentile_exc(ns: list[float], k: float) -> float | ExcelError:
    rank = k * (len(ns) + 1)  # 1-based
    if not ns or not 1 <= rank <= len(ns):
        return NUM
    return _interpolate(ns, rank - 1)


def _quartile(percentile: Callable[[list[float], float], float | ExcelError], lowest: int, highest: int):
    def run(ns: list[float], quart: float) -> float | ExcelError:
        q = math.floor(quart)
        return percentile(ns, q / 4) if lowest <= q <= highest else NUM

    return run


_ARRAY_FORM: dict[int, Callable[[list[float], float], float | ExcelError]] = {
    14: _large,
    15: _small,
    16: _percentile_inc,
    17: _quartile(_percentile_inc, 0, 4),
    18: _percentile_exc,
    19: _quartile(_percentile_exc, 1, 3),
}
