"""Editing cells of a sheet's XML in place, and writing the edited package.

Labelled outputs and generated audit controls are an answer file Excel saved with some of
its cells edited: every other part and every other cell stays Excel's own, byte for byte.
A cell is ``<c r="A1" ...>...</c>`` (or self-closing ``<c r="A1" .../>``); its formula is
``<f>`` (text XML-escaped), its cached value ``<v>``, its type the ``t`` attribute.

:func:`cells` indexes a sheet's cells in one pass; each edit (:func:`without_cache`,
:func:`as_constant`, ...) takes a cell and returns the element that replaces it; and
:func:`apply` writes a set of them in one more pass, so a range of 100,000 cells costs two
passes over the XML, not one per cell. :func:`read_sheets` reads the sheets an edit touches
and indexes their cells; its :meth:`SheetsXml.write_edited` writes the edited copy.
"""

from __future__ import annotations

import re
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable
from xml.sax.saxutils import escape

from defusedxml import ElementTree

from regrade.values import CellRef
from regrade.workbook.formula import boundaries
from regrade.workbook.sheets import array_formulas_in, sheet_parts

CELL = re.compile(r'<c r="(?P<r>[A-Z]{1,3}[0-9]{1,7})"(?P<attributes>(?:\s[^>]*?)?)(?:/>|>(?P<content>.*?)</c>)', re.S)
VALUE = re.compile(r"<v(?:\s[^>]*)?>.*?</v>|<v/>", re.S)  # also <v xml:space="preserve">, as Excel writes " 10 "
TYPE = re.compile(r'\st="[^"]*"')
FORMULA = re.compile(r"<f(?P<attributes>[^>]*)>(?P<text>[^<]+)</f>")  # one with its text: not a shared formula's follower
ANY_FORMULA = re.compile(r"<f(?:\s[^>]*)?/>|<f(?:\s[^>]*)?>.*?</f>", re.S)
_V_TEXT = re.compile(r"<v(?:\s[^>]*)?>(?P<text>.*?)</v>", re.S)
_SHARED_RANGE = re.compile(r'\bt="shared"[^>]*\bref="(?P<ref>[^"]+)"|\bref="(?P<ref2>[^"]+)"[^>]*\bt="shared"')
_SHARED_INDEX = re.compile(r'\bsi="(\d+)"')
_FORMULA_KIND = re.compile(r'\st="([^"]*)"')
_METADATA = re.compile(r'\s(?:cm|vm)="[^"]*"')  # a dynamic array's cell and value metadata: a formula's, not a constant's

Cell = re.Match[str]


def cells(xml: str) -> dict[str, Cell]:
    """Every cell of a sheet's XML by its coordinate ("B7")."""
    return {found.group("r"): found for found in CELL.finditer(xml)}


def find_cell(xml: str, ref: CellRef) -> Cell | None:
    return cells(xml).get(ref.coordinate)


def apply(xml: str, elements: dict[str, str]) -> str:
    """``xml`` with each cell named in ``elements`` replaced by its new element, in one pass."""
    if not elements:
        return xml
    return CELL.sub(lambda found: elements.get(found.group("r"), found.group(0)), xml)


def edited_parts(sheets: dict[str, str], parts: dict[str, str], elements: dict[CellRef, str]) -> dict[str, str]:
    """The sheet parts (``sheets``: part name -> XML; ``parts``: sheet name -> part name) that
    ``elements`` (a cell -> its new element) change, each rewritten in one pass."""
    by_part: dict[str, dict[str, str]] = {}
    for ref, element in elements.items():
        by_part.setdefault(parts[ref.sheet], {})[ref.coordinate] = element
    rewritten = {part: apply(sheets[part], changes) for part, changes in by_part.items()}
    return {part: xml for part, xml in rewritten.items() if xml != sheets[part]}


@dataclass(frozen=True)
class SheetsXml:
    """Some sheets of a package as XML text, their cells indexed once."""

    parts: dict[str, str]  # every sheet of the package: its name -> its part
    xml: dict[str, str]  # each sheet read: its part -> its XML
    index: dict[str, dict[str, Cell]]  # each sheet read: its part -> its cells by coordinate

    def cell(self, ref: CellRef) -> Cell | None:
        """The cell's element, or None (no such cell written, or its sheet not read)."""
        part = self.parts.get(ref.sheet)
        return self.index[part].get(ref.coordinate) if part in self.index else None

    def array_followers(self, sheet: str, among: Iterable[CellRef]) -> dict[CellRef, CellRef]:
        """Each of the cells ``among`` on ``sheet`` (a sheet read) that an array formula covers
        other than its anchor, with that anchor. Such a cell holds only the value the formula
        last gave it (a legacy CSE array or a dynamic array's spill, ECMA-376 Part 1, 18.3.1.40
        ``f``): no constant, as a recalculation gives it anew. Each array costs the smaller of
        its area and ``among``, so a sheet-wide array ref is no sheet-wide loop."""
        wanted = {ref for ref in among if ref.sheet == sheet}
        found: dict[CellRef, CellRef] = {}
        for row, column, area in array_formulas_in(self.xml.get(self.parts.get(sheet, ""), "")):
            if ":" not in area:
                continue
            left, top, right, bottom = boundaries(area)
            start = CellRef(sheet, row, column)
            if (right - left + 1) * (bottom - top + 1) <= len(wanted):
                inside = [CellRef(sheet, row, column) for row in range(top, bottom + 1)
                          for column in range(left, right + 1)]
            else:
                inside = [ref for ref in wanted if left <= ref.column <= right and top <= ref.row <= bottom]
            found.update({ref: start for ref in inside if ref in wanted and ref != start})
        return found

    def write_edited(self, source: Path, target: Path, elements: dict[CellRef, str]) -> None:
        """A copy of ``source`` (the package read) with each cell in ``elements`` replaced by its new element."""
        write_edited(source, target, edited_parts(self.xml, self.parts, elements))


def read_sheets(path: Path, sheets: Iterable[str], max_bytes: int | None = None) -> SheetsXml:
    """The named sheets of the package at ``path`` that it has. Raises what zipfile and UTF-8
    decoding raise on a broken package, and ValueError for a sheet part over ``max_bytes``."""
    with zipfile.ZipFile(path) as archive:
        parts = dict(sheet_parts(archive))
        wanted = {parts[sheet] for sheet in sheets if sheet in parts}
        if max_bytes is not None and any(archive.getinfo(part).file_size > max_bytes for part in wanted):
            raise ValueError(f"a sheet part over {max_bytes} bytes")
        xml = {part: archive.read(part).decode("utf-8") for part in wanted}
    return SheetsXml(parts, xml, {part: cells(text) for part, text in xml.items()})


# --- reading a cell ----------------------------------------------------------------------------


def has_formula(cell: Cell) -> bool:
    return holds_formula(cell.group("content") or "")


def holds_formula(xml: str) -> bool:
    """Whether a cell's XML (its content, or a whole written ``<c>`` element) holds a formula."""
    return "<f" in xml


def cell_type(cell: Cell) -> str:
    """The cell's ``t`` attribute ("n" when absent)."""
    found = re.search(r'\st="([^"]*)"', cell.group("attributes"))
    return found.group(1) if found else "n"


def cached_text(cell: Cell) -> str | None:
    """The text of the cell's ``<v>`` (XML-unescaped), None when it has none."""
    found = _V_TEXT.search(cell.group("content") or "")
    return None if found is None else xml_text(found.group("text"))


def formula_text(cell: Cell) -> str | None:
    found = FORMULA.search(cell.group("content") or "")
    return None if found is None else xml_text(found.group("text"))


def xml_text(escaped: str) -> str:
    """Element text as written in XML, unescaped: entities and character references (``&#10;``)."""
    return ElementTree.fromstring(f"<t>{escaped}</t>").text or ""


def shared_master_range(cell: Cell) -> str | None:
    """The ``ref`` of a shared formula this cell is the first of (its followers depend on its text)."""
    found = ANY_FORMULA.search(cell.group("content") or "")
    if found is None:
        return None
    shared = _SHARED_RANGE.search(found.group(0))
    return None if shared is None else (shared.group("ref") or shared.group("ref2"))


def is_shared(cell: Cell) -> bool:
    found = ANY_FORMULA.search(cell.group("content") or "")
    return found is not None and 't="shared"' in found.group(0)


def shared_index(cell: Cell) -> str | None:
    """The ``si`` of the shared formula the cell belongs to (its first cell or a follower), or None."""
    if (tag := _formula_tag(cell)) is None or _kind(tag) != "shared":
        return None
    index = _SHARED_INDEX.search(tag)
    return None if index is None else index.group(1)


def formula_kind(cell: Cell) -> str | None:
    """The ``t`` of the cell's ``<f>`` ("normal" when absent: ``array``, ``shared``, ``dataTable``), None without one."""
    tag = _formula_tag(cell)
    return None if tag is None else _kind(tag)


def _formula_tag(cell: Cell) -> str | None:
    """The start tag of the cell's ``<f>`` (its attributes, not its text), or None without one."""
    found = ANY_FORMULA.search(cell.group("content") or "")
    return None if found is None else found.group(0).split(">", 1)[0]


def _kind(tag: str) -> str:
    kind = _FORMULA_KIND.search(tag)
    return "normal" if kind is None else kind.group(1)


# --- the element that replaces a cell ----------------------------------------------------------


def _element(cell: Cell, attributes: str, content: str | None) -> str:
    coordinate = cell.group("r")
    return f'<c r="{coordinate}"{attributes}/>' if content is None else f'<c r="{coordinate}"{attributes}>{content}</c>'


def without_cache(cell: Cell) -> str:
    """The cell's formula kept, its cached value and type removed (as openpyxl writes a formula)."""
    if not has_formula(cell):
        return cell.group(0)
    return _element(cell, TYPE.sub("", cell.group("attributes")), VALUE.sub("", cell.group("content")))


def with_formula(cell: Cell, change: str, keep_cache: bool) -> str:
    """The cell's formula text ``F`` (XML as written) replaced by ``change.format(F)``; its cache kept or removed."""
    content = FORMULA.sub(lambda m: f"<f{m.group('attributes')}>{change.format(m.group('text'))}</f>",
                          cell.group("content") or "", count=1)
    attributes = cell.group("attributes")
    if not keep_cache:
        content, attributes = VALUE.sub("", content), TYPE.sub("", attributes)
    return _element(cell, attributes, content)


def respelled(cell: Cell, spelling: str) -> str:
    """The cell's formula replaced by ``spelling`` (plain text, escaped here); its cache kept."""
    content = FORMULA.sub(lambda m: f"<f{m.group('attributes')}>{escape(spelling)}</f>", cell.group("content") or "",
                          count=1)
    return _element(cell, cell.group("attributes"), content)


def with_own_formula(cell: Cell, spelling: str) -> str:
    """The cell with ``spelling`` as a formula of its own, where it had one of a shared formula
    (its first cell or a follower): no ``t``, ``ref`` or ``si``; its cache kept."""
    content = ANY_FORMULA.sub(lambda m: f"<f>{escape(spelling)}</f>", cell.group("content") or "", count=1)
    return _element(cell, cell.group("attributes"), content)


def as_constant(cell: Cell) -> str:
    """The cell's formula removed and its cached value kept as a constant of the same type
    (a formula's text result, type ``str``, becomes an inline string)."""
    if cell.group("content") is None:
        return cell.group(0)
    if cell_type(cell) == "str":
        return with_text(cell, cached_text(cell) or "")
    content = ANY_FORMULA.sub("", cell.group("content"))
    return _element(cell, _METADATA.sub("", cell.group("attributes")), content or None)


def with_number(cell: Cell, number: str) -> str:
    """The cell as the constant number ``number`` (its style kept)."""
    return _with_value(cell, "", f"<v>{number}</v>")


def with_boolean(cell: Cell, value: bool) -> str:
    return _with_value(cell, ' t="b"', f"<v>{int(value)}</v>")


def with_text(cell: Cell, text: str) -> str:
    """The cell as the constant text ``text``, an inline string (its style kept)."""
    return _with_value(cell, ' t="inlineStr"', f'<is><t xml:space="preserve">{escape(text)}</t></is>')


def emptied(cell: Cell) -> str:
    """The cell with no value and no formula (its style kept)."""
    return _element(cell, _METADATA.sub("", TYPE.sub("", cell.group("attributes"))), None)


def copied_from(cell: Cell, source: Cell | None) -> str:
    """The cell given ``source``'s value as a constant (None: empty); the cell's own style kept."""
    if source is None or source.group("content") is None:
        return emptied(cell)
    kind, text = cell_type(source), cached_text(source)
    if text is None and kind != "inlineStr":
        return emptied(cell)
    if kind in ("n", "d"):
        return with_number(cell, escape(text or "0"))
    if kind in ("s", "e", "b"):
        return _with_value(cell, f' t="{kind}"', f"<v>{escape(text or '')}</v>")
    if kind == "inlineStr":
        inline = re.search(r"<is>.*?</is>", source.group("content"), re.S)
        return _with_value(cell, ' t="inlineStr"', inline.group(0) if inline else "<is><t></t></is>")
    return with_text(cell, text or "")  # str: a formula's text result


def _with_value(cell: Cell, type_attribute: str, content: str) -> str:
    return _element(cell, _METADATA.sub("", TYPE.sub("", cell.group("attributes"))) + type_attribute, content)


def write_edited(source: Path, target: Path, replaced: dict[str, str]) -> None:
    """A copy of ``source`` with the parts in ``replaced`` rewritten; every other part byte for byte."""
    if not replaced:
        shutil.copyfile(source, target)
        return
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in original.infolist():
            data = replaced[info.filename].encode("utf-8") if info.filename in replaced else original.read(info)
            copy.writestr(info, data)
