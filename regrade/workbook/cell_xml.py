"""Editing single cells of a sheet's XML in place, and writing the edited package.

Labelled outputs and generated audit controls are an answer file Excel saved with a few of
its cells edited: every other part and every other cell stays Excel's own, byte for byte.
A cell is ``<c r="A1" ...>...</c>`` (or self-closing ``<c r="A1" .../>``); its formula is
``<f>`` (text XML-escaped), its cached value ``<v>``, its type the ``t`` attribute.
"""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

from defusedxml import ElementTree

from regrade.values import CellRef

_CELL = r'<c r="{coordinate}"(?P<attributes>(?:\s[^>]*?)?)(?:/>|>(?P<content>.*?)</c>)'
VALUE = re.compile(r"<v(?:\s[^>]*)?>.*?</v>|<v/>", re.S)  # also <v xml:space="preserve">, as Excel writes " 10 "
TYPE = re.compile(r'\st="[^"]*"')
FORMULA = re.compile(r"<f(?P<attributes>[^>]*)>(?P<text>[^<]+)</f>")  # one with its text: not a shared formula's follower
ANY_FORMULA = re.compile(r"<f(?:\s[^>]*)?/>|<f(?:\s[^>]*)?>.*?</f>", re.S)
_V_TEXT = re.compile(r"<v(?:\s[^>]*)?>(?P<text>.*?)</v>", re.S)
_SHARED_RANGE = re.compile(r'\bt="shared"[^>]*\bref="(?P<ref>[^"]+)"|\bref="(?P<ref2>[^"]+)"[^>]*\bt="shared"')


def find_cell(xml: str, ref: CellRef) -> re.Match[str] | None:
    return re.search(_CELL.format(coordinate=ref.coordinate), xml, re.S)


def cell_type(cell: re.Match[str]) -> str:
    """The cell's ``t`` attribute ("n" when absent)."""
    found = re.search(r'\st="([^"]*)"', cell.group("attributes"))
    return found.group(1) if found else "n"


def cached_text(cell: re.Match[str]) -> str | None:
    """The text of the cell's ``<v>`` (XML-unescaped), None when it has none."""
    found = _V_TEXT.search(cell.group("content") or "")
    return None if found is None else xml_text(found.group("text"))


def formula_text(cell: re.Match[str]) -> str | None:
    found = FORMULA.search(cell.group("content") or "")
    return None if found is None else xml_text(found.group("text"))


def xml_text(escaped: str) -> str:
    """Element text as written in XML, unescaped: entities and character references (``&#10;``)."""
    return ElementTree.fromstring(f"<t>{escaped}</t>").text or ""


def shared_master_range(cell: re.Match[str]) -> str | None:
    """The ``ref`` of a shared formula this cell is the first of (its followers depend on its text)."""
    found = ANY_FORMULA.search(cell.group("content") or "")
    if found is None:
        return None
    shared = _SHARED_RANGE.search(found.group(0))
    return None if shared is None else (shared.group("ref") or shared.group("ref2"))


def is_shared(cell: re.Match[str]) -> bool:
    found = ANY_FORMULA.search(cell.group("content") or "")
    return found is not None and 't="shared"' in found.group(0)


def _replace(xml: str, cell: re.Match[str], ref: CellRef, attributes: str, content: str | None) -> str:
    element = f'<c r="{ref.coordinate}"{attributes}/>' if content is None else \
        f'<c r="{ref.coordinate}"{attributes}>{content}</c>'
    return xml[:cell.start()] + element + xml[cell.end():]


def without_cache(xml: str, ref: CellRef) -> str:
    """The cell's formula kept, its cached value and type removed (as openpyxl writes a formula)."""
    cell = find_cell(xml, ref)
    if cell is None or "<f" not in (cell.group("content") or ""):
        return xml
    content, attributes = VALUE.sub("", cell.group("content")), TYPE.sub("", cell.group("attributes"))
    return _replace(xml, cell, ref, attributes, content)


def with_formula(xml: str, ref: CellRef, change: str, keep_cache: bool) -> str:
    """The cell's formula text ``F`` (XML as written) replaced by ``change.format(F)``; its cache kept or removed."""
    cell = find_cell(xml, ref)
    assert cell is not None and cell.group("content") is not None
    content = FORMULA.sub(lambda m: f"<f{m.group('attributes')}>{change.format(m.group('text'))}</f>",
                          cell.group("content"), count=1)
    attributes = cell.group("attributes")
    if not keep_cache:
        content, attributes = VALUE.sub("", content), TYPE.sub("", attributes)
    return _replace(xml, cell, ref, attributes, content)


def respelled(xml: str, ref: CellRef, spelling: str) -> str:
    """The cell's formula replaced by ``spelling`` (plain text, escaped here); its cache kept."""
    cell = find_cell(xml, ref)
    assert cell is not None and cell.group("content") is not None
    content = FORMULA.sub(lambda m: f"<f{m.group('attributes')}>{escape(spelling)}</f>", cell.group("content"), count=1)
    return _replace(xml, cell, ref, cell.group("attributes"), content)


def as_constant(xml: str, ref: CellRef) -> str:
    """The cell's formula removed and its cached value kept as a constant of the same type
    (a formula's text result, type ``str``, becomes an inline string)."""
    cell = find_cell(xml, ref)
    if cell is None or cell.group("content") is None:
        return xml
    content = ANY_FORMULA.sub("", cell.group("content"))
    attributes = _METADATA.sub("", cell.group("attributes"))
    if cell_type(cell) == "str":
        text = cached_text(cell) or ""
        return with_text(xml, ref, text)
    return _replace(xml, cell, ref, attributes, content or None)


def with_number(xml: str, ref: CellRef, number: str) -> str:
    """The cell set to the constant number ``number`` (its style kept)."""
    return _with_value(xml, ref, "", f"<v>{number}</v>")


def with_boolean(xml: str, ref: CellRef, value: bool) -> str:
    return _with_value(xml, ref, ' t="b"', f"<v>{int(value)}</v>")


def with_text(xml: str, ref: CellRef, text: str) -> str:
    """The cell set to the constant text ``text``, as an inline string (its style kept)."""
    return _with_value(xml, ref, ' t="inlineStr"', f'<is><t xml:space="preserve">{escape(text)}</t></is>')


def emptied(xml: str, ref: CellRef) -> str:
    """The cell with no value and no formula (its style kept)."""
    cell = find_cell(xml, ref)
    if cell is None:
        return xml
    return _replace(xml, cell, ref, _METADATA.sub("", TYPE.sub("", cell.group("attributes"))), None)


def copied_from(xml: str, ref: CellRef, source: re.Match[str] | None) -> str:
    """The cell given ``source``'s content as a constant (``source`` a cell of the same XML, or
    None for empty); the cell's own style kept."""
    if source is None or source.group("content") is None:
        return emptied(xml, ref)
    kind, text = cell_type(source), cached_text(source)
    if text is None and kind != "inlineStr":
        return emptied(xml, ref)
    if kind in ("n", "d"):
        return with_number(xml, ref, text or "0")
    if kind in ("s", "e", "b"):
        return _with_value(xml, ref, f' t="{kind}"', f"<v>{escape(text or '')}</v>")
    if kind == "inlineStr":
        inline = re.search(r"<is>.*?</is>", source.group("content"), re.S)
        return _with_value(xml, ref, ' t="inlineStr"', inline.group(0) if inline else "<is><t></t></is>")
    return with_text(xml, ref, text or "")  # str: a formula's text result


_METADATA = re.compile(r'\s(?:cm|vm)="[^"]*"')  # a dynamic array's cell and value metadata: a formula's, not a constant's


def _with_value(xml: str, ref: CellRef, type_attribute: str, content: str) -> str:
    cell = find_cell(xml, ref)
    if cell is None:
        raise KeyError(f"{ref.coordinate} is not in the sheet XML")
    attributes = _METADATA.sub("", TYPE.sub("", cell.group("attributes"))) + type_attribute
    return _replace(xml, cell, ref, attributes, content)


def write_edited(source: Path, target: Path, replaced: dict[str, str]) -> None:
    """A copy of ``source`` with the parts in ``replaced`` rewritten; every other part byte for byte."""
    if not replaced:
        shutil.copyfile(source, target)
        return
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in original.infolist():
            data = replaced[info.filename].encode("utf-8") if info.filename in replaced else original.read(info)
            copy.writestr(info, data)
