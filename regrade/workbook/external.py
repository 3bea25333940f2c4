"""Values of other workbooks as Excel cached them in this one, so that engines can compute with them.

A formula that reads another workbook (``[1]Data!B2``, ``'[1]Order Data'!A:C``) is saved
with the values Excel last read from it: each external link part
(``xl/externalLinks/externalLinkN.xml``, ECMA-376 Part 1, 18.14) holds, per sheet of the other
workbook, every referenced cell's value (``sheetDataSet``). When that workbook is not there,
Excel computes the formulas from these values; no engine here reads them. A *linked copy*
puts them where every engine can: one very hidden sheet per cached sheet, appended after
the workbook's own, and each external reference to a cached sheet rewritten to that sheet
(``'[1]Data'!B2`` becomes ``'xl1 Data'!B2``). The engines compute the copy; its cells have
the original's addresses.

What stays external (and so abstains, rule ``external-link``):

- a sheet whose cache is missing or marked ``refreshError`` (Excel failed to read it: its
  values may not be the ones the formulas used);
- a defined name of the other workbook (``[1]!Rate``) or a 3-D reference;
- a formula that passes anything to a function whose argument must be a reference
  (SUMIF, COUNTIF, OFFSET, INDIRECT, ...): with the other workbook closed Excel holds its
  cells as values, and such a function then gives ``#VALUE!`` (Microsoft's "#VALUE! error
  when formulas refer to a closed workbook"), while a cache saved with it open holds the
  real value; which of the two the cache holds, the file does not say.

No copy is made of a workbook that calls SHEET, SHEETS or FORMULATEXT, whose values the added
sheets or the rewritten references would change.
"""

from __future__ import annotations

import re
import tempfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator
from xml.etree import ElementTree

from regrade.workbook.formula import call_pattern, outside_quotes, rewritten_outside_quotes
from regrade.workbook.rewrite import READ_ERRORS, WORKBOOK, escape, rewritten_parts, write_copy
from regrade.workbook.sheets import MAX_SHEET_BYTES, sheet_parts, workbook_parts

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
WORKSHEET_TYPE = RELATIONSHIPS + "/worksheet"
WORKSHEET_CONTENT = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
MAX_CACHED_CELLS = 2_000_000  # cached cells written to a copy at most

# A function whose argument must be a reference, which a closed workbook's cells are not
NEEDS_A_REFERENCE = frozenset({
    "SUMIF", "SUMIFS", "COUNTIF", "COUNTIFS", "AVERAGEIF", "AVERAGEIFS", "MAXIFS", "MINIFS",
    "COUNTBLANK", "OFFSET", "INDIRECT", "CELL", "SUBTOTAL", "AGGREGATE", "ISREF", "AREAS",
})
# What the added sheets or the rewritten references would change
_CHANGED_BY_A_COPY = re.compile(call_pattern("SHEETS?", "FORMULATEXT").pattern.encode(), re.IGNORECASE)  # in a sheet's bytes
_NEEDS_A_REFERENCE = call_pattern(*sorted(NEEDS_A_REFERENCE))
# A reference to one sheet of another workbook: a cell, a range, whole columns or rows
_LINKED = re.compile(
    r"(?:'\[(?P<quoted_link>\d+)\](?P<quoted_sheet>(?:[^']|'')+)'|(?<![A-Za-z0-9_.'\]])\[(?P<link>\d+)\]"
    r"(?P<sheet>[A-Za-z0-9_.]+))!(?P<area>"
    r"\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?(?![A-Za-z0-9_(:])"
    r"|\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}(?![A-Za-z0-9_(])"
    r"|\$?\d+:\$?\d+(?![\d.]))"
)
_EXTERNAL_REFERENCE = re.compile(r'<externalReference\b[^>]*?\b(?:\w+:)?id="([^"]+)"')
_SHEET_ID = re.compile(r'<sheet\b[^>]*\bsheetId="(\d+)"')
_RELATIONSHIP_PREFIX = re.compile(r'xmlns:(\w+)="' + re.escape(RELATIONSHIPS) + '"')

Cached = tuple[str, str]  # a cell's type (n, str, b, e) and its text


@dataclass
class CachedSheet:
    """One sheet of another workbook, as this workbook cached it."""

    link: int  # the [n] of its references
    name: str
    cells: dict[tuple[int, int], Cached] = field(default_factory=dict)  # (row, column) -> value


def cached_sheets(archive: zipfile.ZipFile) -> dict[tuple[int, str], CachedSheet]:
    """{(link, lower-cased sheet name): its cache} for every sheet whose values Excel cached
    without a refresh error. Empty for a workbook without external links or one this cannot
    read."""
    try:
        workbook = archive.read(WORKBOOK).decode("utf-8", "replace")
        parts = workbook_parts(archive)
    except KeyError:
        return {}
    found: dict[tuple[int, str], CachedSheet] = {}
    for link, relation in enumerate(_EXTERNAL_REFERENCE.findall(workbook), start=1):
        part = parts.get(relation, "xl/")
        try:
            if archive.getinfo(part).file_size > MAX_SHEET_BYTES:
                continue
            xml = archive.read(part)
        except KeyError:
            continue
        if b"<!" in xml:  # a DTD: Excel never writes one
            continue
        for sheet in _read_external_book(xml, link):
            found[(link, sheet.name.lower())] = sheet
    return found


def _read_external_book(xml: bytes, link: int) -> list[CachedSheet]:
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError:
        return []
    book = root.find(f"{{{MAIN}}}externalBook")
    if book is None:
        return []
    names = [element.get("val", "") for element in book.iterfind(f"{{{MAIN}}}sheetNames/{{{MAIN}}}sheetName")]
    sheets = []
    for data in book.iterfind(f"{{{MAIN}}}sheetDataSet/{{{MAIN}}}sheetData"):
        index = int(data.get("sheetId", "-1"))
        if data.get("refreshError") in ("1", "true") or not 0 <= index < len(names):
            continue
        sheet = CachedSheet(link, names[index])
        for cell in data.iterfind(f"{{{MAIN}}}row/{{{MAIN}}}cell"):
            value = cell.find(f"{{{MAIN}}}v")
            position = _position(cell.get("r", ""))
            if value is not None and position is not None:
                sheet.cells[position] = (cell.get("t", "n"), value.text or "")
        sheets.append(sheet)
    return sheets


def _position(reference: str) -> tuple[int, int] | None:
    match = re.fullmatch(r"([A-Z]{1,3})(\d+)", reference)
    if match is None:
        return None
    column = 0
    for letter in match.group(1):
        column = column * 26 + ord(letter) - 64
    return int(match.group(2)), column


class Linker:
    """Points one workbook's formulas at the sheets of its linked copy, naming each sheet on its first use."""

    def __init__(self, sheets: dict[tuple[int, str], CachedSheet], taken: set[str]):
        self.sheets = sheets
        self.taken = {name.lower() for name in taken}  # the workbook's own sheets
        self.used: dict[tuple[int, str], str] = {}  # (link, lower-cased sheet) -> the sheet holding it

    def formula(self, formula: str) -> str:
        """``formula`` with each reference to a cached sheet of another workbook pointing at
        the sheet that holds it; unchanged when it reads no such sheet or passes something to
        a function that needs a reference. Text in quotes is left alone."""
        if "[" not in formula:
            return formula
        if any(_NEEDS_A_REFERENCE.search(piece) for piece in outside_quotes(formula)):
            return formula
        return rewritten_outside_quotes(formula, lambda piece: _LINKED.sub(self._local, piece))

    def _local(self, match: re.Match[str]) -> str:
        link = int(match.group("quoted_link") or match.group("link"))
        name = match.group("quoted_sheet").replace("''", "'") if match.group("quoted_link") else match.group("sheet")
        key = (link, name.lower())
        if key not in self.sheets:
            return match.group(0)
        if key not in self.used:
            self.used[key] = _unique_name(f"xl{link} {self.sheets[key].name}", self.taken)
            self.taken.add(self.used[key].lower())
        return "'" + self.used[key].replace("'", "''") + "'!" + match.group("area")


def write_linked_copy(path: Path, copy: Path) -> bool:
    """Write ``path``'s linked copy to ``copy``; False (and nothing written) when there is
    nothing to link, or the workbook is one a copy would change (see the module's doc).
    Never raises for a bad file."""
    try:
        with zipfile.ZipFile(path) as archive:
            return _write(archive, copy)
    except READ_ERRORS:
        return False


def _write(archive: zipfile.ZipFile, copy: Path) -> bool:
    sheets = cached_sheets(archive)
    if not sheets or sum(len(s.cells) for s in sheets.values()) > MAX_CACHED_CELLS:
        return False
    workbook = archive.read(WORKBOOK)
    prefix = _RELATIONSHIP_PREFIX.search(workbook.decode("utf-8", "replace"))
    if prefix is None or b"</sheets>" not in workbook:
        return False
    parts = sheet_parts(archive)
    if any(_CHANGED_BY_A_COPY.search(archive.read(part)) for _, part in parts
           if archive.getinfo(part).file_size <= MAX_SHEET_BYTES):
        return False
    linker = Linker(sheets, {name for name, _ in parts})
    replaced = rewritten_parts(archive, linker.formula, b"[")
    if replaced is None or not linker.used:
        return False
    added = {f"xl/worksheets/regradeLinked{index}.xml": (sheets[key], local)
             for index, (key, local) in enumerate(linker.used.items(), start=1)}
    replaced[WORKBOOK] = _added_sheets(replaced.get(WORKBOOK, workbook), added, prefix.group(1))
    replaced["xl/_rels/workbook.xml.rels"] = _added_relations(archive.read("xl/_rels/workbook.xml.rels"), added)
    replaced["[Content_Types].xml"] = _added_content_types(archive.read("[Content_Types].xml"), added)
    write_copy(archive, copy, replaced, {part: _sheet_xml(sheet) for part, (sheet, _) in added.items()})
    return True


def _unique_name(wanted: str, taken: set[str]) -> str:
    name = re.sub(r"[\[\]:*?/\\']", "_", wanted)[:31]
    number = 1
    while name.lower() in taken:
        suffix = f" ({number})"
        name, number = name[: 31 - len(suffix)] + suffix, number + 1
    return name


def _relation_id(index: int) -> str:
    return f"rIdRegradeLinked{index}"


Added = dict[str, tuple[CachedSheet, str]]  # part -> the cached sheet and the name of the sheet holding it


def _added_sheets(workbook: bytes, added: Added, prefix: str) -> bytes:
    next_id = max((int(n) for n in _SHEET_ID.findall(workbook.decode("utf-8", "replace"))), default=0) + 1
    elements = "".join(
        f'<sheet name="{escape(local)}" sheetId="{next_id + index}" state="veryHidden" '
        f'{prefix}:id="{_relation_id(index)}"/>' for index, (_, local) in enumerate(added.values()))
    return workbook.replace(b"</sheets>", elements.encode("utf-8") + b"</sheets>", 1)


def _added_relations(relations: bytes, added: Added) -> bytes:
    elements = "".join(
        f'<Relationship Id="{_relation_id(index)}" Type="{WORKSHEET_TYPE}" Target="{part.removeprefix("xl/")}"/>'
        for index, part in enumerate(added))
    return relations.replace(b"</Relationships>", elements.encode("utf-8") + b"</Relationships>", 1)


def _added_content_types(types: bytes, added: Added) -> bytes:
    elements = "".join(f'<Override PartName="/{part}" ContentType="{WORKSHEET_CONTENT}"/>' for part in added)
    return types.replace(b"</Types>", elements.encode("utf-8") + b"</Types>", 1)


def _sheet_xml(sheet: CachedSheet) -> bytes:
    rows: dict[int, list[str]] = {}
    for (row, column), (kind, text) in sorted(sheet.cells.items()):
        reference = f"{_column_letters(column)}{row}"
        if kind == "str" or kind == "s":
            cell = f'<c r="{reference}" t="inlineStr"><is><t xml:space="preserve">{escape(text)}</t></is></c>'
        elif kind in ("b", "e"):
            cell = f'<c r="{reference}" t="{kind}"><v>{escape(text)}</v></c>'
        else:
            cell = f'<c r="{reference}"><v>{escape(text)}</v></c>'
        rows.setdefault(row, []).append(cell)
    body = "".join(f'<row r="{row}">{"".join(cells)}</row>' for row, cells in rows.items())
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="{MAIN}">'
            f"<sheetData>{body}</sheetData></worksheet>").encode("utf-8")


def _column_letters(column: int) -> str:
    letters = ""
    while column:
        column, rest = divmod(column - 1, 26)
        letters = chr(65 + rest) + letters
    return letters




@contextmanager
def linked_workbook(path: Path) -> Iterator[Path]:
    """The linked copy of ``path``, in a temporary folder while the block runs; ``path``
    itself when there is nothing to link."""
    if not links_other_workbooks(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="regrade-linked-") as folder:
        copy = Path(folder) / path.name
        yield copy if write_linked_copy(path, copy) else path


def links_other_workbooks(path: Path) -> bool:
    """Whether the file holds an external link part (a quick look at the archive's names)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name.startswith("xl/externalLinks/") for name in archive.namelist())
    except READ_ERRORS:
        return False
