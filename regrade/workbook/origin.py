"""Which application saved a workbook, as the workbook itself records it.

Every writer of OOXML records itself in ``docProps/app.xml``: Excel writes
``<Application>Microsoft Excel</Application>`` (or ``Microsoft Macintosh Excel``,
``Microsoft Excel Online``, ``Excel Android``) with its build as ``<AppVersion>12.0000``
(Excel 2007) to ``16.0300``; LibreOffice, Apache POI and IronCalc name themselves; openpyxl
3.1 writes ``Microsoft Excel Compatible / Openpyxl 3.1.5`` with ``AppVersion`` 3.1. Only a
file Excel saved carries Excel's own results as its cached values, so only such a file is an
oracle for conformance. ``docProps/core.xml`` records when it was saved.
"""

from __future__ import annotations

import datetime as dt
import re
import zipfile
from pathlib import Path

_APPLICATION = re.compile(r"<(?:\w+:)?Application>([^<]*)</(?:\w+:)?Application>")
_APP_VERSION = re.compile(r"<(?:\w+:)?AppVersion>(\d+)\.(\d{4})</(?:\w+:)?AppVersion>")
_FIRST_OOXML_EXCEL = 12  # Excel 2007 wrote the first .xlsx files
MAX_PROPERTIES_BYTES = 1_000_000
_MODIFIED = re.compile(r"<dcterms:modified\b[^>]*>\s*(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)Z?\s*<")


def _properties(path: Path, part: str) -> str | None:
    """The text of a small document-properties part, or None (no such part, too large, or
    not a readable archive)."""
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo(part)
            if info.file_size > MAX_PROPERTIES_BYTES:
                return None
            return archive.read(info).decode("utf-8", "replace")
    except Exception:  # KeyError (no part), BadZipFile, zlib errors: nothing recorded
        return None


def application(path: Path) -> tuple[str, str] | None:
    """(application, version) as ``docProps/app.xml`` names them ("" where absent), or None
    when the file records none (no such part, or not a readable archive)."""
    text = _properties(path, "docProps/app.xml")
    if text is None:
        return None
    name, version = _APPLICATION.search(text), _APP_VERSION.search(text)
    return (name.group(1).strip() if name else "", f"{version.group(1)}.{version.group(2)}" if version else "")


def saved_by_excel(path: Path) -> bool:
    """Whether the workbook says Excel saved it: an application naming Excel (not an
    "Excel compatible" writer) with an Excel build number (12 or later)."""
    recorded = application(path)
    if recorded is None:
        return False
    name, version = recorded
    if "excel" not in name.lower() or "compatible" in name.lower() or "openpyxl" in name.lower():
        return False
    return bool(version) and int(version.split(".")[0]) >= _FIRST_OOXML_EXCEL


def saved_at(path: Path) -> dt.datetime | None:
    """When the workbook was last saved (UTC), as its core properties record it
    (``dcterms:modified`` in ``docProps/core.xml``); None when they do not."""
    text = _properties(path, "docProps/core.xml")
    match = _MODIFIED.search(text) if text is not None else None
    if match is None:
        return None
    try:
        return dt.datetime.fromisoformat(match.group(1))
    except ValueError:
        return None
