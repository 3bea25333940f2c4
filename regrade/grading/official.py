"""Which cells the official SpreadsheetBench grader reads, bug for bug.

The official ``evaluation.py`` (``compare_workbooks``) splits ``answer_position`` on
every comma and on ``!``, strips quotes, uses the golden's first sheet when no
sheet is named, and turns each range into cell names with its own column
arithmetic. Its quirks decide grades, so regrade reproduces them here (this is an
independent re-implementation of the documented behaviour, checked against the
official decisions in ``tests/test_official_parity.py``):

- ``A:G`` and other whole-column ranges raise (``int('')``) and the case fails;
- ``BD2:308`` has no end column, becomes an empty range and passes vacuously;
- a leading space or non-breaking space shifts the column arithmetic;
- a name that is not a single cell for openpyxl (``"11"``, ``"A0"``) raises;
- several ``!`` in one item raise; so does a sheet missing from the golden.

Any raise makes the official loop count the case as a fail.
"""

from __future__ import annotations

from openpyxl.utils.cell import range_boundaries

from regrade.values import CellRef, cell_refs


class OfficialGraderError(Exception):
    """The official grader would raise here; the official loop counts a fail."""


def official_targets(position: str, golden_sheets: list[str]) -> list[CellRef]:
    """Every cell the official grader compares, in its order; raises where it raises."""
    targets: list[CellRef] = []
    for item in position.split(","):
        if "!" in item:
            parts = item.split("!")
            if len(parts) != 2:
                raise OfficialGraderError(f"{item!r} holds {len(parts) - 1} '!' (too many values to unpack)")
            sheet, cell_range = parts[0].strip("'"), parts[1]
        else:
            if not golden_sheets:
                raise OfficialGraderError("the golden workbook has no sheet")
            sheet, cell_range = golden_sheets[0], item
        cell_range = cell_range.strip("'")
        if sheet not in golden_sheets:
            raise OfficialGraderError(f"sheet {sheet!r} is not in the golden workbook (KeyError)")
        targets.extend(cell_refs(sheet, _lookups(_cell_names(cell_range))))
    return targets


def _cell_names(cell_range: str) -> list[str]:
    if ":" not in cell_range:
        return [cell_range]
    parts = cell_range.split(":")
    if len(parts) != 2:
        raise OfficialGraderError(f"{cell_range!r} holds {len(parts) - 1} ':'")
    (first_col, first_row), (last_col, last_row) = (_split_cell(p) for p in parts)
    columns = [_column_name(n) for n in range(first_col, last_col + 1)]
    return [f"{col}{row}" for col in columns for row in range(first_row, last_row + 1)]


def _split_cell(cell: str) -> tuple[int, int]:
    letters = "".join(ch for ch in cell if not ch.isdigit())
    digits = "".join(ch for ch in cell if ch.isdigit())
    try:
        row = int(digits)
    except ValueError as exc:
        raise OfficialGraderError(f"no row number in {cell!r} ({exc})") from exc
    column = 0
    for ch in letters:
        column = column * 26 + (ord(ch) - ord("A") + 1)
    return column, row


def _column_name(number: int) -> str:
    name = ""
    while number > 0:
        number, remainder = divmod(number - 1, 26)
        name = chr(65 + remainder) + name
    return name


def _lookups(names: list[str]) -> list[tuple[int, int]]:
    """openpyxl's ``ws[name]`` for each name: a single cell, or the grader raises."""
    cells = []
    for name in names:
        try:
            min_col, min_row, _, _ = range_boundaries(name)
        except (ValueError, TypeError) as exc:
            raise OfficialGraderError(f"openpyxl cannot read cell name {name!r}") from exc
        if min_col is None or min_row is None:
            raise OfficialGraderError(f"{name!r} is a whole row or column, not a cell (AttributeError)")
        if not 0 < min_row < 1_048_577:
            raise OfficialGraderError(f"row {min_row} of {name!r} is out of range")
        cells.append((min_row, min_col))
    return cells
