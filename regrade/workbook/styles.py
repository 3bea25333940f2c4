"""Reading a workbook with openpyxl: its stylesheet parsed once per content, and without
expanding thousands of named styles.

openpyxl parses ``xl/styles.xml`` whole every time it opens a workbook, 11 ms on average for a
SpreadsheetBench file and a third of the Python time of rescoring a small one, which opens
the same golden up to three times (its sheet names, its values, its formulas) and files of
one template again and again. :class:`LeanReader` parses each distinct stylesheet once per
process (:func:`parsed_stylesheet`, keyed by its bytes) and applies it to each book as
openpyxl's ``apply_stylesheet`` does; the parsed objects are shared between books, which is
safe for books that are read and never saved (each cell copies its style entry).

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

import functools
import warnings
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from defusedxml.ElementTree import fromstring
from openpyxl import Workbook
from openpyxl.reader.excel import ExcelReader
from openpyxl.styles.builtins import styles as builtin_styles
from openpyxl.styles.named_styles import NamedStyleList
from openpyxl.styles.stylesheet import Stylesheet
from openpyxl.utils.indexed_list import IndexedList
from openpyxl.xml.constants import ARC_STYLE, SHEET_MAIN_NS
from openpyxl.xml.functions import fromstring as openpyxl_fromstring

MAX_NAMED_STYLES = 500  # Excel's own new workbook has 1; a styled template a few dozen
PARSED_STYLESHEETS = 16  # distinct stylesheets kept parsed in one process


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


@functools.lru_cache(maxsize=PARSED_STYLESHEETS)
def parsed_stylesheet(xml: bytes) -> Stylesheet:
    """openpyxl's parse of a stylesheet (``xl/styles.xml``), once per distinct content: what
    it raises on a stylesheet it cannot read is raised again for each book that has it."""
    return Stylesheet.from_tree(openpyxl_fromstring(xml))  # type: ignore[arg-type]  # the stubs' element type


def apply_parsed_stylesheet(archive: Any, book: Any) -> None:  # Any: openpyxl's private book attributes
    """What openpyxl's ``apply_stylesheet`` does to a book it reads, the stylesheet parsed by
    :func:`parsed_stylesheet`: each book gets its own lists of fonts, fills and borders (a
    merged cell adds a border to its book's), and shares the rest, which reading never changes."""
    try:
        xml = archive.read(ARC_STYLE)
    except KeyError:
        return  # no stylesheet: openpyxl keeps the book's defaults
    stylesheet: Any = parsed_stylesheet(xml)  # Any: the attributes its __init__ sets are not in the stubs
    if stylesheet.cell_styles:
        book._borders = IndexedList(stylesheet.borders)
        book._fonts = IndexedList(stylesheet.fonts)
        book._fills = IndexedList(stylesheet.fills)
        book._differential_styles.styles = stylesheet.dxfs
        book._number_formats = stylesheet.number_formats
        book._protections = stylesheet.protections
        book._alignments = stylesheet.alignments
        book._table_styles = stylesheet.tableStyles
        book._cell_styles = stylesheet.cell_styles
        book._named_styles = NamedStyleList(stylesheet.named_styles)
        book._date_formats = stylesheet.date_formats
        book._timedelta_formats = stylesheet.timedelta_formats
        for style in book._named_styles:
            style.bind(book)  # to the book read last: a book read here is never saved
    if not book._named_styles:
        book.add_named_style(builtin_styles["Normal"])
    if stylesheet.colors is not None:
        book._colors = stylesheet.colors.index


class LeanReader(ExcelReader):
    """openpyxl's reader over a :class:`LeanArchive` (or the subclass ``archive_type``), the
    stylesheet applied by :func:`apply_parsed_stylesheet`."""

    archive_type: type[LeanArchive] = LeanArchive

    def __init__(self, path: Path, read_only: bool = False, data_only: bool = False):
        super().__init__(path, read_only=read_only, data_only=data_only)
        self.archive = self.archive_type(self.archive)  # type: ignore[assignment]

    def read(self) -> None:
        """openpyxl's ``ExcelReader.read``, step for step (openpyxl 3.1), the stylesheet
        applied by :func:`apply_parsed_stylesheet` instead of openpyxl's own parse."""
        self.read_manifest()
        self.read_strings()
        self.read_workbook()
        self.read_properties()
        self.read_custom()
        self.read_theme()
        apply_parsed_stylesheet(self.archive, self.wb)
        self.read_worksheets()
        self.parser.assign_names()
        if not self.read_only:
            self.archive.close()


def read_book(path: Path, data_only: bool = False, read_only: bool = False) -> Workbook:
    """The workbook as ``openpyxl.load_workbook(path, data_only=..., read_only=...)`` gives it,
    its named styles cut when there are too many; openpyxl's warnings about parts it drops are silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = LeanReader(path, read_only=read_only, data_only=data_only)
        reader.read()
        return reader.wb
