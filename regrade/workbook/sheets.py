"""Matching a requested sheet name to a workbook's sheets; which cells hold formulas and
array formulas; the formula openpyxl read into a cell; which rows are hidden, and which of
those a filter hides."""

from __future__ import annotations

import html
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import openpyxl
from openpyxl.cell.cell import Cell
from openpyxl.utils.cell import column_index_from_string

from regrade.workbook.formula import boundaries
from regrade.workbook.screening import screen

MAX_SHEET_BYTES = 64 * 1024 * 1024
_ARRAY_CELL = re.compile(r'<c r="([A-Z]{1,3})(\d+)"[^>]*>\s*<f\b(?=[^>]*\bt="array")(?:[^>]*\bref="([A-Z0-9:]+)")?')
_SHEET = re.compile(r'<sheet\b[^>]*>')
_SHEET_ID = re.compile(r'\b(?:\w+:)?id="([^"]+)"')
_SHEET_NAME = re.compile(r'\bname="([^"]*)"')
# a constant logical cell: t="b" and a value, no formula (``<c r="A2" s="1" t="b"><v>1</v></c>``)
_LOGICAL_CONSTANT = re.compile(r'<c r="([A-Z]{1,3})(\d+)"(?=[^>]*\bt="b")[^>]*>\s*<v>')
_FORMULA_CELL = re.compile(r'<c r="([A-Z]{1,3})(\d+)"[^>]*>\s*<f\b')
_PREFIXED = re.compile(r"<\w+:(?:c|f|sheetData)\b")
_RELATIONSHIP = re.compile(r'<Relationship\b(?=[^>]*\bId="(?P<id>[^"]+)")(?=[^>]*\bTarget="(?P<target>[^"]+)")[^>]*>')


def resolve_sheet(requested: str, sheet_names: list[str]) -> str | None:
    """The workbook's sheet for ``requested``: exact match first, then case-insensitive
    (Excel treats sheet names case-insensitively). None when there is none."""
    if requested in sheet_names:
        return requested
    folded = requested.strip().casefold()
    return next((name for name in sheet_names if name.strip().casefold() == folded), None)


def array_formula_cells(path: Path) -> set[tuple[int, int, int]]:
    """(sheet index, row, column) of every array (CSE or dynamic) formula's anchor cell.

    Read from the sheet XML (``<f t="array">``), in workbook order, which is the sheet
    order engines use. Never raises: an unreadable file, or a sheet part over
    ``MAX_SHEET_BYTES``, has none.
    """
    return {(sheet, row, column) for sheet, row, column, _ in _array_formulas(path)}


def array_formula_ranges(path: Path) -> list[tuple[int, str]]:
    """(sheet index, range such as ``D1:D3``) of every array formula, the spill range of a dynamic one."""
    return [(sheet, area) for sheet, _, _, area in _array_formulas(path)]


def _array_formulas(path: Path) -> list[tuple[int, int, int, str]]:
    found: list[tuple[int, int, int, str]] = []
    screening = screen(path)  # kept from the screening every reader makes first; it saw every part
    if screening.failure is None and not screening.array_formulas:
        return found
    try:
        with zipfile.ZipFile(path) as archive:
            for index, (_, xml) in enumerate(sheet_xmls(archive)):
                found += [(index, row, column, area) for row, column, area in array_formulas_in(xml)]
    except Exception:  # zipfile and zlib raise many kinds on a broken archive; the engines report it
        return []
    return found


def logical_constants(path: Path) -> dict[str, set[tuple[int, int]]]:
    """(row, column) of every cell holding a TRUE or FALSE constant, by sheet name, read from the
    sheet XML. Never raises: an unreadable file, or a sheet part over ``MAX_SHEET_BYTES``, has none."""
    found: dict[str, set[tuple[int, int]]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for name, xml in sheet_xmls(archive):
                if 't="b"' in xml:
                    cells = {(int(m.group(2)), column_index_from_string(m.group(1)))
                             for m in _LOGICAL_CONSTANT.finditer(xml)}
                    if cells:
                        found[name] = cells
    except MemoryError:
        raise  # a limit, not a broken file: the isolating worker reports it
    except Exception:  # a broken archive: the engines report it
        return {}
    return found


def array_formulas_in(xml: str) -> list[tuple[int, int, str]]:
    """(row, column, range) of each array formula's anchor cell in a sheet's XML; the range is
    the anchor's own cell where the formula names none."""
    found: list[tuple[int, int, str]] = []
    if 't="array"' not in xml:  # what the search requires: most sheets hold none, found 9x faster so
        return found
    for match in _ARRAY_CELL.finditer(xml):
        column, row = match.group(1), int(match.group(2))
        found.append((row, column_index_from_string(column), match.group(3) or f"{column}{row}"))
    return found


def formula_cells(path: Path) -> dict[str, set[tuple[int, int]]] | None:
    """{sheet name: (row, column) of every cell holding a formula}, read from the sheet XML
    without a spreadsheet parser (shared-formula cells included), or None when unsure (a
    sheet part over ``MAX_SHEET_BYTES``, namespace-prefixed elements, an unreadable file):
    the caller then asks openpyxl."""
    found: dict[str, set[tuple[int, int]]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for name, part in sheet_parts(archive):
                if archive.getinfo(part).file_size > MAX_SHEET_BYTES:
                    return None
                xml = archive.read(part).decode("utf-8", "replace")
                if _PREFIXED.search(xml):
                    return None
                found[name] = {(int(m.group(2)), column_index_from_string(m.group(1))) for m in _FORMULA_CELL.finditer(xml)} \
                    if "<f" in xml else set()  # what the search requires
    except Exception:  # zipfile and zlib raise many kinds on a broken archive
        return None
    return found


_FORMULA_OR_NAME_TEXT = re.compile(rb"<(f|definedName)\b[^>]*?(?<!/)>(.*?)</\1>", re.S)  # a formula's or a name's text
_PREFIXED_FORMULA = re.compile(rb"<\w+:(?:f|definedName)\b")


def formulas_may_mention(path: Path, pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` may occur in a formula of the workbook: False only when a search of
    the text of every formula (``<f>``) of every sheet part and of every defined name finds it
    nowhere and nothing could hide it from a text search: a character reference such as
    ``&#84;`` for T, a comment or CDATA section splitting a name, namespace-prefixed elements,
    UTF-16, a part over ``MAX_SHEET_BYTES``, an unreadable archive. Then True, so the caller
    asks openpyxl."""
    try:
        with zipfile.ZipFile(path) as archive:
            for part in ("xl/workbook.xml", *(part for _, part in sheet_parts(archive))):
                if archive.getinfo(part).file_size > MAX_SHEET_BYTES:
                    return True
                data = archive.read(part)
                if b"\x00" in data or _PREFIXED_FORMULA.search(data):
                    return True
                for match in _FORMULA_OR_NAME_TEXT.finditer(data):
                    text = match.group(2)
                    if b"&#" in text or b"<" in text or pattern.search(text.decode("utf-8")):
                        return True
    except Exception:  # zipfile, zlib and the decoding raise many kinds on a broken archive
        return True
    return False


def workbook_parts(archive: zipfile.ZipFile) -> dict[str, str]:
    """{relationship id: the part it names in the package} for the workbook part's
    relationships (sheets, external links ...)."""
    relations = archive.read("xl/_rels/workbook.xml.rels").decode("utf-8", "replace")
    parts = {}
    for match in _RELATIONSHIP.finditer(relations):
        target = match.group("target")
        parts[match.group("id")] = target.lstrip("/") if target.startswith("/") else "xl/" + target
    return parts


def sheet_parts(archive: zipfile.ZipFile) -> list[tuple[str, str]]:
    """(name, part) of each sheet, in workbook order, which is the order engines use."""
    workbook = archive.read("xl/workbook.xml").decode("utf-8", "replace")
    parts = workbook_parts(archive)
    sheets = []
    for element in _SHEET.finditer(workbook):
        relation, name = _SHEET_ID.search(element.group(0)), _SHEET_NAME.search(element.group(0))
        part = parts.get(relation.group(1), "xl/") if relation else "xl/"
        sheets.append((html.unescape(name.group(1)) if name else "", part))
    return sheets


def sheet_xmls(archive: zipfile.ZipFile) -> Iterator[tuple[str, str]]:
    """(name, XML text) of each sheet, in workbook order; a part over ``MAX_SHEET_BYTES`` is empty
    text, so that indices stay the engines' sheet order."""
    for name, part in sheet_parts(archive):
        too_large = archive.getinfo(part).file_size > MAX_SHEET_BYTES
        yield name, "" if too_large else archive.read(part).decode("utf-8", "replace")


def formula_text(content: object) -> str | None:
    """The formula openpyxl read into a cell, or None for a constant."""
    if isinstance(content, str) and content.startswith("=") and len(content) > 1:
        return content
    text = getattr(content, "text", None)  # ArrayFormula
    if isinstance(text, str) and text:
        return text if text.startswith("=") else "=" + text
    return None


def cell_formula(cell: object) -> str | None:
    """The formula of a cell openpyxl read with formulas, or None: a text constant that begins
    with "=" (a criterion such as ``=Apple`` typed as text) is a constant, which openpyxl marks
    by its data type (``s``, where a formula's is ``f``)."""
    return formula_text(getattr(cell, "value", None)) if getattr(cell, "data_type", None) == "f" else None


@dataclass(frozen=True)
class FormulaCell:
    """One formula cell of a loaded workbook: where it is, its text, and the openpyxl cell."""

    sheet: str
    row: int
    column: int
    text: str
    cell: Cell


@dataclass(frozen=True)
class HiddenRows:
    """A sheet's hidden rows, and those of them a filter hides (SUBTOTAL skips the latter
    whatever its function number, the others only for 101-111)."""

    hidden: frozenset[int] = frozenset()
    filtered: frozenset[int] = frozenset()


def hidden_rows(book: openpyxl.Workbook) -> dict[str, HiddenRows]:
    """{sheet name: its hidden rows} for the sheets that hide any. A hidden row counts as
    filtered when it lies under the header of an AutoFilter (the sheet's, or a table's)
    that has a criterion: the file keeps no other trace of why a row is hidden."""
    found = {}
    for ws in book.worksheets:
        hidden = frozenset(row for row, dimension in ws.row_dimensions.items() if dimension.hidden)
        if not hidden:
            continue
        filters = [ws.auto_filter, *(table.autoFilter for table in ws.tables.values() if table.autoFilter is not None)]
        filtered = set()
        for autofilter in filters:
            if autofilter.ref and autofilter.filterColumn:
                try:
                    _, first, _, last = boundaries(autofilter.ref)
                except (ValueError, TypeError):
                    continue
                filtered |= {row for row in hidden if first < row <= last}
        found[ws.title] = HiddenRows(hidden, frozenset(filtered))
    return found


def mentions(path: Path, needles: tuple[bytes, ...]) -> set[bytes]:
    """Which of ``needles`` (case-insensitive) some sheet or table part of the file holds: a
    quick look before a full read. Never raises; an unreadable file holds none, a part
    over ``MAX_SHEET_BYTES`` all."""
    pattern = re.compile(b"|".join(re.escape(n) for n in needles), re.IGNORECASE)
    longest = max(len(n) for n in needles)
    found: set[bytes] = set()
    by_lower = {n.lower(): n for n in needles}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.filename.startswith(("xl/worksheets/", "xl/tables/")):
                    continue
                if info.file_size > MAX_SHEET_BYTES:
                    return set(needles)
                with archive.open(info) as part:  # in chunks: a sheet part can be tens of MB
                    tail = b""
                    while chunk := part.read(1 << 20):
                        found |= {by_lower[m.group(0).lower()] for m in pattern.finditer(tail + chunk)}
                        tail = chunk[-longest:]
    except MemoryError:
        raise  # a limit, not a broken file: the isolating worker reports it
    except Exception:  # a broken archive: the engines report it
        return set()
    return found


_FORMULA_TEXT = re.compile(r"<(?:\w+:)?f\b[^>]*>([^<]*)</(?:\w+:)?f>")


def formula_texts(path: Path, needles: tuple[str, ...]) -> list[str]:
    """The formulas written in the sheet XML (a shared formula once) that contain one of
    ``needles`` (case-insensitive): a quick look before a full read. Never raises; an
    unreadable file has none, a sheet part over ``MAX_SHEET_BYTES`` is skipped."""
    wanted, found = [n.lower() for n in needles], []
    try:
        with zipfile.ZipFile(path) as archive:
            for _, xml in sheet_xmls(archive):
                lowered = xml.lower()
                if any(n in lowered for n in wanted):
                    found += [html.unescape(m.group(1)) for m in _FORMULA_TEXT.finditer(xml)
                              if any(n in m.group(1).lower() for n in wanted)]
    except MemoryError:
        raise  # a limit, not a broken file: the isolating worker reports it
    except Exception:  # a broken archive: the engines report it
        return []
    return found
