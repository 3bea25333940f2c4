"""Reading a workbook with openpyxl without expanding thousands of named styles.

openpyxl expands every named style of ``xl/styles.xml`` (``cellStyles`` with their
``cellStyleXfs``) into an object bound to the workbook when it opens a file, read-only or
not. Some workbooks carry tens of thousands of them, copied in from other workbooks (a
known Excel style bloat): SpreadsheetBench task 51090's answer has 49,304, and openpyxl
spends 60 s on them per opening, past an engine's time limit. No value regrade reads depends
on them: a cell's number format comes from ``cellXfs`` and ``numFmts``, which are kept.

:func:`read_book` opens a workbook as ``openpyxl.load_workbook`` does, except that a
stylesheet with more than :data:`MAX_NAMED_STYLES` named styles is read with only the first
(Normal): ``cell.style`` names may then be wrong, and such a book must not be saved.
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from defusedxml.ElementTree import fromstring
from openpyxl import Workbook
from openpyxl.reader.excel import ExcelReader
from openpyxl.xml.constants import ARC_STYLE, SHEET_MAIN_NS

MAX_NAMED_STYLES = 500  # Excel's own new workbook has 1; a styled template a few dozen


def lean_stylesheet(xml: bytes) -> bytes:
    """``xml`` (xl/styles.xml) with its named styles cut to the first, when it has more than
    :data:`MAX_NAMED_STYLES`; otherwise as it is."""
    if xml.count(b"<cellStyle ") <= MAX_NAMED_STYLES and xml.count(b":cellStyle ") <= MAX_NAMED_STYLES:
        return xml
    root = fromstring(xml)  # no DTD, no entities: screening refused any part with one, and defusedxml again
    for name in ("cellStyleXfs", "cellStyles"):
        block = root.find(f"{{{SHEET_MAIN_NS}}}{name}")
        if block is not None:
            block[:] = block[:1]
            block.set("count", str(len(block)))
    styles = root.find(f"{{{SHEET_MAIN_NS}}}cellStyles")
    if styles is not None and len(styles):
        styles[0].set("xfId", "0")
    return ElementTree.tostring(root)


class LeanArchive:
    """A workbook's zip archive as openpyxl reads it, with :func:`lean_stylesheet` applied."""

    def __init__(self, archive: zipfile.ZipFile):
        self._archive = archive

    def read(self, name: Any, *args: Any, **kwargs: Any) -> bytes:
        data = self._archive.read(name, *args, **kwargs)
        return lean_stylesheet(data) if name == ARC_STYLE else data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._archive, name)


class LeanReader(ExcelReader):
    """openpyxl's reader over a :class:`LeanArchive` (or the subclass ``archive_type``)."""

    archive_type: type[LeanArchive] = LeanArchive

    def __init__(self, path: Path, read_only: bool = False, data_only: bool = False):
        super().__init__(path, read_only=read_only, data_only=data_only)
        self.archive = self.archive_type(self.archive)  # type: ignore[assignment]


def read_book(path: Path, data_only: bool = False, read_only: bool = False) -> Workbook:
    """The workbook as ``openpyxl.load_workbook(path, data_only=..., read_only=...)`` gives it,
    its named styles cut when there are too many; openpyxl's warnings about parts it drops are silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = LeanReader(path, read_only=read_only, data_only=data_only)
        reader.read()
        return reader.wb
