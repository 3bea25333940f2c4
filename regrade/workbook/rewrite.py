"""A copy of a workbook package with its formulas rewritten, for the engines to compute instead.

The formulas of every sheet part (``<f>`` elements) and the workbook's defined names are
rewritten in place, part by part, without a spreadsheet parser; every other part is copied
as it is. The copy has the original's sheets and addresses, so its values are read as the
original's. Used for the linked copy (:mod:`regrade.workbook.external`) and the dated copy
(:mod:`regrade.workbook.today`).
"""

from __future__ import annotations

import html
import re
import zipfile
from pathlib import Path
from typing import Callable

from regrade.workbook.sheets import MAX_SHEET_BYTES, sheet_parts

WORKBOOK = "xl/workbook.xml"
_FORMULA = re.compile(rb"(<f\b[^>]*>)([^<]*)(</f>)")
_DEFINED_NAME = re.compile(rb"(<definedName\b[^>]*>)([^<]*)(</definedName>)")

Rewrite = Callable[[str], str]  # a formula's text (no "=") -> the text the engines compute


def rewritten_parts(archive: zipfile.ZipFile, rewrite: Rewrite, mentioning: bytes) -> dict[str, bytes] | None:
    """{part: new content} for each sheet part holding a formula ``rewrite`` changes, and for
    the workbook part if a defined name changes; empty when nothing does. Only formulas holding
    ``mentioning`` (case-insensitive) are decoded. None when a sheet part is over
    ``MAX_SHEET_BYTES``."""
    needle = re.compile(re.escape(mentioning), re.IGNORECASE)

    def replace(match: re.Match[bytes]) -> bytes:
        if not needle.search(match.group(2)):
            return match.group(0)
        text = html.unescape(match.group(2).decode("utf-8"))
        changed = rewrite(text)
        if changed == text:
            return match.group(0)
        return match.group(1) + escape(changed).encode("utf-8") + match.group(3)

    parts: dict[str, bytes] = {}
    for _, part in sheet_parts(archive):
        if archive.getinfo(part).file_size > MAX_SHEET_BYTES:
            return None
        data = archive.read(part)
        if needle.search(data):
            new = _FORMULA.sub(replace, data)
            if new != data:
                parts[part] = new
    workbook = archive.read(WORKBOOK)
    if (names := _DEFINED_NAME.sub(replace, workbook)) != workbook:
        parts[WORKBOOK] = names
    return parts


def write_copy(archive: zipfile.ZipFile, copy: Path, replaced: dict[str, bytes], added: dict[str, bytes]) -> None:
    """Write ``archive`` to ``copy`` with the ``replaced`` parts' new content and the ``added`` parts."""
    with zipfile.ZipFile(copy, "w", zipfile.ZIP_DEFLATED) as out:
        for info in archive.infolist():
            out.writestr(info, replaced[info.filename] if info.filename in replaced else archive.read(info))
        for part, data in added.items():
            out.writestr(part, data)


def escape(text: str) -> str:
    """Text as XML element content or attribute value."""
    return html.escape(text, quote=True)


READ_ERRORS = (zipfile.BadZipFile, OSError, KeyError, ValueError, EOFError, RuntimeError, UnicodeDecodeError)
