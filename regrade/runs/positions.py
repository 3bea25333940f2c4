"""Reading ``answer_position``: the cells a benchmark grades.

SpreadsheetBench positions are written by hand and come in many shapes (docs/runs.md):
``A3:D32``, ``'Sheet1'!H3:H5``, several ranges joined by commas (commas may sit
inside quoted sheet names), a missing or misplaced quote (``Sheet3'!A:G``,
``'CS!'B1:B8``, ``'99250!A1:F9'``), whole columns (``A:G``), ``BD2:308`` (meaning
BD2:BD308), a full-width colon, a leading non-breaking space, a repeated sheet
prefix (``'Received'!'Received!A1:G16'``) and typographic quotes.

:func:`parse_answer_position` reads all of them and records each repair it made.
Text it cannot read raises :class:`PositionError`. Whole columns and rows stay open
(``None`` bounds) until :func:`box_spans` closes them against a sheet's extent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openpyxl.utils.cell import column_index_from_string
from regrade.workbook.formula import MAX_COLUMNS, MAX_ROWS


_QUOTES = "'\u2018\u2019\u201a\u201b`"
_RANGE = re.compile(
    r"^\$?(?P<c1>[A-Z]{1,3})?\$?(?P<r1>\d+)?(?::\$?(?P<c2>[A-Z]{1,3})?\$?(?P<r2>\d+)?)?$"
)


class PositionError(ValueError):
    """An ``answer_position`` that cannot be read."""


@dataclass(frozen=True)
class CellBox:
    """A rectangle of one sheet. A ``None`` bound is open (whole column or whole row).

    ``sheet`` is None when the position names no sheet.
    """

    sheet: str | None
    min_row: int | None
    min_col: int | None
    max_row: int | None
    max_col: int | None


@dataclass(frozen=True)
class AnswerPosition:
    text: str
    boxes: tuple[CellBox, ...]
    repairs: tuple[str, ...] = ()


def parse_answer_position(text: str) -> AnswerPosition:
    """Parse a SpreadsheetBench ``answer_position`` into boxes, noting every repair."""
    repairs: list[str] = []
    cleaned = _normalise(text, repairs)
    if not cleaned:
        raise PositionError(f"empty answer_position {text!r}")
    boxes: list[CellBox] = []
    for item in _split_items(cleaned, text):
        box = _parse_item(item, repairs)
        if box.sheet is None and boxes and boxes[-1].sheet is not None:
            repairs.append(f"read {item!r} on sheet {boxes[-1].sheet!r}, like the range before it")
            box = CellBox(boxes[-1].sheet, box.min_row, box.min_col, box.max_row, box.max_col)
        boxes.append(box)
    return AnswerPosition(text=text, boxes=tuple(boxes), repairs=tuple(dict.fromkeys(repairs)))


def box_spans(box: CellBox, max_row: int, max_col: int) -> tuple[range, range]:
    """The rows and the columns of ``box``, closing open bounds with the sheet's extent."""
    min_row = box.min_row or 1
    min_col = box.min_col or 1
    last_row = box.max_row if box.max_row is not None else max(max_row, min_row)
    last_col = box.max_col if box.max_col is not None else max(max_col, min_col)
    return range(min_row, last_row + 1), range(min_col, last_col + 1)


def _normalise(text: str, repairs: list[str]) -> str:
    cleaned = text.replace("\u00a0", " ").replace("\u3000", " ")
    if cleaned != text:
        repairs.append("removed non-breaking spaces")
    if "\uff1a" in cleaned:
        cleaned = cleaned.replace("\uff1a", ":")
        repairs.append("read full-width colon as ':'")
    if "\uff01" in cleaned:
        cleaned = cleaned.replace("\uff01", "!")
        repairs.append("read full-width '!' as '!'")
    if any(q in cleaned for q in _QUOTES[1:]):
        for q in _QUOTES[1:]:
            cleaned = cleaned.replace(q, "'")
        repairs.append("read typographic quotes as \"'\"")
    return cleaned.strip()


def _split_items(cleaned: str, original: str) -> list[str]:
    """Split on commas, re-joining pieces where the comma sat inside a sheet name."""
    pieces = cleaned.split(",")
    items: list[str] = []
    pending = ""
    for piece in pieces:
        candidate = f"{pending},{piece}" if pending else piece
        if _looks_complete(candidate):
            items.append(candidate.strip())
            pending = ""
        else:
            pending = candidate
    if pending:
        raise PositionError(f"cannot read {pending.strip()!r} in answer_position {original!r}")
    return items


def _looks_complete(item: str) -> bool:
    item = item.strip()
    if "!" not in item:
        return bool(_RANGE.match(item.strip(_QUOTES).upper())) and item.strip(_QUOTES) != ""
    _, _, cell_part = item.rpartition("!")
    return bool(_RANGE.match(cell_part.strip().strip(_QUOTES).upper()))


def _parse_item(item: str, repairs: list[str]) -> CellBox:
    sheet: str | None = None
    cell_part = item
    if "!" in item:
        sheet_part, _, cell_part = item.rpartition("!")
        sheet = _sheet_name(sheet_part, item, repairs)
        if cell_part.strip().startswith("'") or cell_part.strip().endswith("'"):
            repairs.append(f"moved a misplaced quote in {item!r}")
    bare = cell_part.strip().strip(_QUOTES).strip()
    if "!" not in item and bare != item.strip():
        repairs.append(f"removed stray quotes around {item!r}")
    match = _RANGE.match(bare.upper())
    if not match or not bare:
        raise PositionError(f"cannot read cell range {bare!r} in {item!r}")
    if bare != bare.upper():
        repairs.append(f"read lower-case {bare!r} as {bare.upper()!r}")
    return _box(sheet, match, item, repairs)


def _sheet_name(sheet_part: str, item: str, repairs: list[str]) -> str:
    raw = sheet_part.strip()
    if "!" in raw:
        names = {p.strip().strip(_QUOTES) for p in raw.split("!")}
        if len(names) != 1:
            raise PositionError(f"two different sheet names in {item!r}")
        repairs.append(f"dropped a repeated sheet prefix in {item!r}")
        raw = raw.split("!")[0].strip()
    name = raw.strip(_QUOTES)
    if not name:
        raise PositionError(f"empty sheet name in {item!r}")
    balanced = raw.startswith("'") and raw.endswith("'") and len(raw) >= 2
    if raw != name and not balanced:
        repairs.append(f"mended unbalanced quotes around sheet {name!r}")
    return name.replace("''", "'")


def _box(sheet: str | None, match: re.Match[str], item: str, repairs: list[str]) -> CellBox:
    c1, r1, c2, r2 = (match.group(g) for g in ("c1", "r1", "c2", "r2"))
    has_colon = ":" in match.group(0)
    col1 = _column(c1, item)
    col2 = _column(c2, item)
    row1 = _row(r1, item)
    row2 = _row(r2, item)
    if not has_colon:
        if col1 is None or row1 is None:
            raise PositionError(f"{item!r} is not a cell")
        return CellBox(sheet, row1, col1, row1, col1)
    if col1 is not None and row1 is not None and col2 is None and row2 is not None:
        repairs.append(f"read {match.group(0)!r} as ending in column {c1}")
        col2 = col1
    if col1 is not None and row1 is not None and col2 is not None and row2 is None:
        raise PositionError(f"cannot read {match.group(0)!r} in {item!r}: the range has no last row")
    if row1 is None and row2 is None and col1 is not None and col2 is not None:
        return CellBox(sheet, None, min(col1, col2), None, max(col1, col2))
    if col1 is None and col2 is None and row1 is not None and row2 is not None:
        return CellBox(sheet, min(row1, row2), None, max(row1, row2), None)
    if None in (col1, row1, col2, row2):
        raise PositionError(f"cannot read cell range {match.group(0)!r} in {item!r}")
    assert col1 is not None and col2 is not None and row1 is not None and row2 is not None
    return CellBox(sheet, min(row1, row2), min(col1, col2), max(row1, row2), max(col1, col2))


def _column(letters: str | None, item: str) -> int | None:
    if letters is None:
        return None
    index = column_index_from_string(letters)
    if index > MAX_COLUMNS:
        raise PositionError(f"column {letters} is beyond Excel's last column XFD in {item!r}")
    return index


def _row(digits: str | None, item: str) -> int | None:
    if digits is None:
        return None
    row = int(digits)
    if not 1 <= row <= MAX_ROWS:
        raise PositionError(f"row {row} is outside 1..{MAX_ROWS} in {item!r}")
    return row
