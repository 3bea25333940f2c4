"""Excel's XLOOKUP and XMATCH, for engines that lack them or get them wrong.

``XLOOKUP(value, lookup_array, return_array, [if_not_found], [match_mode], [search_mode])``
and ``XMATCH(value, lookup_array, [match_mode], [search_mode])``.

=========== ===============================================================
match_mode  0 exact (default); -1 exact or next smaller; 1 exact or next
            larger; 2 wildcard (``*``, ``?``, ``~`` escapes)
search_mode 1 first to last (default); -1 last to first; 2 and -2 binary
            search (not implemented: the caller abstains, as it does
            for an empty lookup value)
=========== ===============================================================

Text compares without regard to case; a number never equals text; error cells
match nothing. Values are plain Python values (float, str, bool, None) or
:class:`ExcelError`, laid out as a list of rows.
"""

from __future__ import annotations

import re
from typing import Sequence

from regrade.values import ExcelError

NA, VALUE = ExcelError("#N/A"), ExcelError("#VALUE!")

Grid = Sequence[Sequence[object]]


class NotImplementedMode(Exception):
    """A mode regrade does not compute (binary search): the caller abstains."""


def xmatch(value: object, lookup: Grid, match_mode: int = 0, search_mode: int = 1) -> float | ExcelError:
    vector = _vector(lookup)
    if isinstance(value, ExcelError) or vector is None:
        return value if isinstance(value, ExcelError) else VALUE
    position = _find(value, vector[0], match_mode, search_mode)
    return NA if position is None else float(position + 1)


def xlookup(value: object, lookup: Grid, result: Grid, if_not_found: object = NA,
            match_mode: int = 0, search_mode: int = 1) -> object | list[list[object]]:
    """A single value, or a row/column (list of rows) when ``result`` is two-dimensional."""
    vector = _vector(lookup)
    if isinstance(value, ExcelError) or vector is None:
        return value if isinstance(value, ExcelError) else VALUE
    values, by_rows = vector
    rows, columns = len(result), len(result[0]) if result else 0
    if (rows if by_rows else columns) != len(values):
        return VALUE
    position = _find(value, values, match_mode, search_mode)
    if position is None:
        return if_not_found
    picked = [list(result[position])] if by_rows else [[row[position]] for row in result]
    return picked[0][0] if len(picked) == 1 and len(picked[0]) == 1 else picked


def _vector(grid: Grid) -> tuple[list[object], bool] | None:
    """The values of a one-row or one-column grid, and whether it runs down rows."""
    if not grid or not grid[0]:
        return None
    if len(grid[0]) == 1:
        return [row[0] for row in grid], True
    if len(grid) == 1:
        return list(grid[0]), False
    return None


def _find(value: object, values: list[object], match_mode: int, search_mode: int) -> int | None:
    if search_mode in (2, -2):
        raise NotImplementedMode("binary search")
    if value is None:
        raise NotImplementedMode("an empty lookup value")
    if search_mode not in (1, -1) or match_mode not in (0, -1, 1, 2):
        raise ValueError(f"match_mode {match_mode}, search_mode {search_mode}")
    order = range(len(values)) if search_mode == 1 else range(len(values) - 1, -1, -1)
    if match_mode == 2 and isinstance(value, str):
        pattern = wildcard_pattern(value)
        return next((i for i in order if isinstance(found := values[i], str) and pattern.fullmatch(found)), None)
    key = _key(value)
    exact = next((i for i in order if _key(values[i]) == key), None)
    if exact is not None or match_mode in (0, 2):
        return exact
    candidates = [i for i in order if _key(values[i])[0] == key[0]]
    if match_mode == -1:
        smaller = [i for i in candidates if _key(values[i]) < key]
        return max(smaller, key=lambda i: _key(values[i]), default=None)  # max keeps the first in search order
    larger = [i for i in candidates if _key(values[i]) > key]
    return min(larger, key=lambda i: _key(values[i]), default=None)


def _key(value: object) -> tuple[int, object]:
    """A comparable key: numbers, then text (case-folded), then booleans; errors and blanks apart."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, float(value))
    if isinstance(value, str):
        return (1, value.casefold())
    if isinstance(value, ExcelError):
        return (9, value.code)
    return (3, 0)  # empty


def wildcard_pattern(text: str) -> re.Pattern[str]:
    """Excel's wildcards as a case-insensitive pattern for ``fullmatch``: ``*``, ``?``, ``~`` escaping."""
    out, escaped = [], False
    for char in text:
        if escaped:
            out.append(re.escape(char))
            escaped = False
        elif char == "~":
            escaped = True
        elif char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        else:
            out.append(re.escape(char))
    return re.compile("".join(out), re.IGNORECASE | re.DOTALL)


def lookup(value: object, vector: Grid, result: Grid | None = None) -> tuple[int, object] | ExcelError:
    """LOOKUP's vector form (the array form when ``result`` is None): (position, value).

    Excel searches by bisection, which on an unsorted vector gives answers that depend on
    its layout. Regrade answers only where bisection's answer does not depend on it: the
    values of the lookup value's type (errors and blanks skipped) are sorted ascending, or
    the lookup value exceeds them all (the idiom ``LOOKUP(2, 1/(condition), result)``:
    the last match). Anything else raises :class:`NotImplementedMode`.
    """
    if isinstance(value, ExcelError):
        return value
    if value is None:
        raise NotImplementedMode("an empty lookup value")
    if result is None:  # array form: search the first row or column, answer from the last
        wide = len(vector[0]) > len(vector)
        values = list(vector[0]) if wide else [row[0] for row in vector]
        answers = list(vector[-1]) if wide else [row[-1] for row in vector]
    else:
        found = _vector(vector)
        answers_vector = _vector(result)
        if found is None or answers_vector is None:
            return VALUE
        values, answers = found[0], answers_vector[0]
    key = _key(value)
    typed = [(i, _key(v)) for i, v in enumerate(values) if _key(v)[0] == key[0]]
    if not typed:
        return NA
    keys = [k for _, k in typed]
    if all(k < key for k in keys):
        position = typed[-1][0]
    elif all(a <= b for a, b in zip(keys, keys[1:])):
        below = [i for i, k in typed if k <= key]
        if not below:
            return NA
        position = below[-1]
    else:
        raise NotImplementedMode("an unsorted lookup vector")
    if position >= len(answers):
        raise NotImplementedMode("a result vector shorter than the lookup vector")
    return position, answers[position]
