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

import bisect
import re
from typing import Sequence

from regrade.values import ExcelError

NA, VALUE = ExcelError("#N/A"), ExcelError("#VALUE!")

Grid = Sequence[Sequence[object]]


class NotImplementedMode(Exception):
    """A mode regrade does not compute (binary search): the caller abstains."""


def xmatch(value: object, lookup: Grid | Vector, match_mode: int = 0, search_mode: int = 1) -> float | ExcelError:
    """``lookup`` a grid, or a :class:`Vector` prepared once for many lookup values."""
    vector = lookup if isinstance(lookup, Vector) else Vector.of(lookup)
    if isinstance(value, ExcelError) or vector is None:
        return value if isinstance(value, ExcelError) else VALUE
    position = vector.find(value, match_mode, search_mode)
    return NA if position is None else float(position + 1)


def xlookup(value: object, lookup: Grid, result: Grid, if_not_found: object = NA,
            match_mode: int = 0, search_mode: int = 1) -> object | list[list[object]]:
    """A single value, or a row/column (list of rows) when ``result`` is two-dimensional."""
    vector = Vector.of(lookup)
    if isinstance(value, ExcelError) or vector is None:
        return value if isinstance(value, ExcelError) else VALUE
    rows, columns = len(result), len(result[0]) if result else 0
    if (rows if vector.by_rows else columns) != len(vector.values):
        return VALUE
    position = vector.find(value, match_mode, search_mode)
    if position is None:
        return if_not_found
    picked = [list(result[position])] if vector.by_rows else [[row[position]] for row in result]
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


class Vector:
    """The values of a one-row or one-column grid with their comparison keys, computed once:
    a MATCH or XMATCH over an array of lookup values searches one vector many times."""

    def __init__(self, values: list[object], by_rows: bool) -> None:
        self.values, self.by_rows = values, by_rows
        self.keys = [_key(v) for v in values]
        self._first: dict[tuple[int, object], int] = {}
        self._last: dict[tuple[int, object], int] = {}
        # per type of key, its positions and keys in order (LOOKUP searches among one type)
        self._typed: dict[int, tuple[list[int], list[tuple[int, object]]]] = {}
        for i, k in enumerate(self.keys):
            self._first.setdefault(k, i)
            self._last[k] = i
            positions, keys = self._typed.setdefault(k[0], ([], []))
            positions.append(i)
            keys.append(k)
        self._ascending = {t: all(a <= b for a, b in zip(keys, keys[1:])) for t, (_, keys) in self._typed.items()}
        self._greatest = {t: max(keys) for t, (_, keys) in self._typed.items()}

    @classmethod
    def of(cls, grid: Grid) -> Vector | None:
        """The grid as a vector, or None when it is neither one row nor one column."""
        found = _vector(grid)
        return None if found is None else cls(*found)

    def find(self, value: object, match_mode: int, search_mode: int) -> int | None:
        """XMATCH's position (0-based) of ``value``, or None."""
        if search_mode in (2, -2):
            raise NotImplementedMode("binary search")
        if value is None:
            raise NotImplementedMode("an empty lookup value")
        if search_mode not in (1, -1) or match_mode not in (0, -1, 1, 2):
            raise ValueError(f"match_mode {match_mode}, search_mode {search_mode}")
        order = range(len(self.values)) if search_mode == 1 else range(len(self.values) - 1, -1, -1)
        if match_mode == 2 and isinstance(value, str):
            pattern = wildcard_pattern(value)
            return next((i for i in order if isinstance(found := self.values[i], str) and pattern.fullmatch(found)), None)
        key = _key(value)
        exact = (self._first if search_mode == 1 else self._last).get(key)
        if exact is not None or match_mode in (0, 2):
            return exact
        keys = self.keys
        candidates = [i for i in order if keys[i][0] == key[0]]
        if match_mode == -1:
            smaller = [i for i in candidates if keys[i] < key]
            return max(smaller, key=lambda i: keys[i], default=None)  # max keeps the first in search order
        larger = [i for i in candidates if keys[i] > key]
        return min(larger, key=lambda i: keys[i], default=None)

    def bisected(self, value: object) -> int | ExcelError:
        """LOOKUP's position (0-based) of ``value`` (see :func:`lookup`)."""
        if value is None:
            raise NotImplementedMode("an empty lookup value")
        key = _key(value)
        if key[0] not in self._typed:
            return NA
        positions, keys = self._typed[key[0]]
        if self._greatest[key[0]] < key:
            return positions[-1]
        if not self._ascending[key[0]]:
            raise NotImplementedMode("an unsorted lookup vector")
        below = bisect.bisect_right(keys, key)  # keys[:below] are those <= key
        return NA if below == 0 else positions[below - 1]


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
        found = Vector(list(vector[0]) if wide else [row[0] for row in vector], not wide)
        answers = list(vector[-1]) if wide else [row[-1] for row in vector]
    else:
        searched, answers_vector = Vector.of(vector), _vector(result)
        if searched is None or answers_vector is None:
            return VALUE
        found, answers = searched, answers_vector[0]
    return lookup_in(value, found, answers)


def lookup_in(value: object, vector: Vector, answers: Sequence[object]) -> tuple[int, object] | ExcelError:
    """:func:`lookup` in a prepared vector: many lookup values, one vector's keys."""
    if isinstance(value, ExcelError):
        return value
    position = vector.bisected(value)
    if isinstance(position, ExcelError):
        return position
    if position >= len(answers):
        raise NotImplementedMode("a result vector shorter than the lookup vector")
    return position, answers[position]
