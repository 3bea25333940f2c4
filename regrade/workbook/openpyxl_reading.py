"""Every use of openpyxl's internals in regrade, in one place: reading a workbook as openpyxl
does, faster, and with what its public reading cannot give. tests/test_openpyxl_reading.py
holds each against openpyxl's public ``load_workbook`` on real files.

- :func:`read_book`: ``load_workbook``, its stylesheet and external links parsed once per
  content and without expanding thousands of named styles (below);
- :func:`load_formula_book`: the formulas, without pivot caches and drawings, which no formula
  reads;
- :func:`formula_cells_of`: the formula cells a sheet holds, not its bounding box;
- :func:`read_box`: cached values and formulas of chosen cells in one pass over a read-only
  sheet, with openpyxl's own sheet parser and its cell reading redone without a dict and a
  method call per cell (:class:`_ValuesAndFormulas`).

openpyxl parses ``xl/styles.xml`` whole every time it opens a workbook, 11 ms on average for a
SpreadsheetBench file and a third of the Python time of rescoring a small one, which opens
the same golden up to three times (its sheet names, its values, its formulas) and files of
one template again and again. :class:`LeanReader` parses each distinct stylesheet once per
process (:func:`parsed_stylesheet`, keyed by its bytes) and applies it to each book as
openpyxl's ``apply_stylesheet`` does; the parsed objects are shared between books, which is
safe for books that are read and never saved (each cell copies its style entry).

An external link (``xl/externalLinks/externalLinkN.xml``) carries the cached sheets of the
workbook it links to, and openpyxl parses every cell of them into objects each time it opens
the file, though no value or formula regrade reads comes from them: 122 ms a link on average
over a 120-task grader audit, 36 s of the official grader's 151 (cProfile). The controls of
one golden share its links byte for byte; :func:`parsed_external_link` parses each distinct
link once per process.

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
import hashlib
import re
import warnings
import zipfile
from collections import OrderedDict, defaultdict
from pathlib import Path
from typing import Any, Callable, Collection, Iterator
from xml.etree import ElementTree

import openpyxl
from defusedxml.ElementTree import fromstring
from openpyxl import Workbook
from openpyxl.cell.cell import Cell
from openpyxl.cell.text import Text
from openpyxl.packaging.relationship import get_rels_path
from openpyxl.packaging.workbook import WorkbookPackage
from openpyxl.reader.excel import ExcelReader
from openpyxl.reader.workbook import WorkbookParser
from openpyxl.styles.builtins import styles as builtin_styles
from openpyxl.styles.named_styles import NamedStyleList
from openpyxl.styles.numbers import BUILTIN_FORMATS, BUILTIN_FORMATS_MAX_SIZE
from openpyxl.styles.stylesheet import Stylesheet
from openpyxl.utils.cell import coordinate_to_tuple
from openpyxl.utils.datetime import from_excel, from_ISO8601
from openpyxl.utils.indexed_list import IndexedList
from openpyxl.workbook.external_link.external import ExternalLink, read_external_link
from openpyxl.xml.constants import ARC_STYLE, SHARED_STRINGS, SHEET_MAIN_NS
from openpyxl.worksheet._reader import FORMULA_TAG, INLINE_STRING, VALUE_TAG, WorkSheetParser
from openpyxl.worksheet._reader import _cast_number  # type: ignore[attr-defined]  # openpyxl's own, not in its stubs
from openpyxl.xml.functions import fromstring as openpyxl_fromstring
from openpyxl.xml.functions import iterparse as openpyxl_iterparse

from regrade.workbook.sheets import FormulaCell, cell_formula

MAX_NAMED_STYLES = 500  # Excel's own new workbook has 1; a styled template a few dozen
PARSED_STYLESHEETS = 16  # distinct stylesheets kept parsed in one process
PARSED_LINKS_BYTES = 16 * 2**20  # bytes of external-link parts whose parse one process keeps
_EXTERNAL_REFERENCES = tuple("externalReference".encode(codec) for codec in ("utf-8", "utf-16-le", "utf-16-be"))


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
    merged cell adds a border to its book's), and shares the rest, which reading never changes.

    openpyxl then binds each named style to the book, which adds the style's font, border and
    fill to the book's lists (hashing each: 10% of the official grader's time). That gives the
    same lists for every book of one stylesheet, so the lists bound for the first book are
    kept with the stylesheet and each later book gets a copy; the named styles stay bound to
    that first book, as they would stay bound to the last (a book read here is never saved)."""
    try:
        xml = archive.read(ARC_STYLE)
    except KeyError:
        return  # no stylesheet: openpyxl keeps the book's defaults
    stylesheet: Any = parsed_stylesheet(xml)  # Any: the attributes its __init__ sets are not in the stubs
    if stylesheet.cell_styles:
        bound = getattr(stylesheet, "regrade_bound_lists", None)
        if bound is None:
            book._borders = IndexedList(stylesheet.borders)
            book._fonts = IndexedList(stylesheet.fonts)
            book._fills = IndexedList(stylesheet.fills)
        else:
            book._borders, book._fonts, book._fills = (_copy(kept) for kept in bound)
        book._differential_styles.styles = stylesheet.dxfs
        book._number_formats = stylesheet.number_formats
        book._protections = stylesheet.protections
        book._alignments = stylesheet.alignments
        book._table_styles = stylesheet.tableStyles
        book._cell_styles = stylesheet.cell_styles
        book._named_styles = NamedStyleList(stylesheet.named_styles)
        book._date_formats = stylesheet.date_formats
        book._timedelta_formats = stylesheet.timedelta_formats
        if bound is None:
            for style in book._named_styles:
                style.bind(book)
            stylesheet.regrade_bound_lists = tuple(_copy(kept) for kept in (book._borders, book._fonts, book._fills))
    if not book._named_styles:
        book.add_named_style(builtin_styles["Normal"])
    if stylesheet.colors is not None:
        book._colors = stylesheet.colors.index


def _copy(kept: IndexedList) -> IndexedList:
    """A copy of an IndexedList with its index, without hashing every entry again."""
    copy: Any = IndexedList()  # Any: its private index is not in the stubs
    list.extend(copy, kept)
    copy._dict, copy.clean = dict(kept._dict), kept.clean  # type: ignore[attr-defined]
    return copy


_parsed_links: OrderedDict[str, tuple[int, ExternalLink]] = OrderedDict()


def parsed_external_link(archive: Any, target: str) -> ExternalLink:
    """openpyxl's ``read_external_link(archive, target)``, parsed once per content in a process:
    keyed by the link part's name, its bytes and its relationships' bytes (all it reads), the
    last :data:`PARSED_LINKS_BYTES` of them kept. What openpyxl raises on a link it cannot
    read is raised again for each book that has it: nothing that failed is kept."""
    try:
        part, relationships = archive.read(target), archive.read(get_rels_path(target))
    except Exception:
        return read_external_link(archive, target)  # raises as openpyxl does on a missing part
    size = len(part) + len(relationships)
    digest = hashlib.sha256()
    for piece in (target.encode(), part, relationships):
        digest.update(len(piece).to_bytes(8, "big") + piece)
    key = digest.hexdigest()
    if key in _parsed_links:
        _parsed_links.move_to_end(key)
        return _parsed_links[key][1]
    link = read_external_link(archive, target)
    if size <= PARSED_LINKS_BYTES:
        _parsed_links[key] = (size, link)
        while sum(kept for kept, _ in _parsed_links.values()) > PARSED_LINKS_BYTES:
            _parsed_links.popitem(last=False)
    return link


def external_links(archive: Any, parser: WorkbookParser) -> list[ExternalLink]:
    """The book's external links as openpyxl's ``WorkbookParser.parse`` reads them, in order,
    each by :func:`parsed_external_link`."""
    xml = archive.read(parser.workbook_part_name)
    if not any(marker in xml for marker in _EXTERNAL_REFERENCES):
        return []
    package: Any = WorkbookPackage.from_tree(openpyxl_fromstring(xml))  # Any: its attributes are not in the stubs
    return [parsed_external_link(archive, parser.rels.get(reference.id).Target)
            for reference in package.externalReferences]


class LeanReader(ExcelReader):
    """openpyxl's reader over a :class:`LeanArchive` (or the subclass ``archive_type``), the
    stylesheet applied by :func:`apply_parsed_stylesheet`."""

    archive_type: type[LeanArchive] = LeanArchive

    def __init__(self, path: Path, read_only: bool = False, data_only: bool = False):
        super().__init__(path, read_only=read_only, data_only=data_only)
        self.archive = self.archive_type(self.archive)  # type: ignore[assignment]

    def read_workbook(self) -> None:
        """openpyxl's ``ExcelReader.read_workbook``, the external links read by :func:`external_links`."""
        keep_links, self.keep_links = self.keep_links, False  # openpyxl's parse then reads none
        try:
            super().read_workbook()
        finally:
            self.keep_links = keep_links
        if keep_links:
            self.wb._external_links = external_links(self.archive, self.parser)  # type: ignore[attr-defined]

    def read_strings(self) -> None:
        """openpyxl's ``ExcelReader.read_strings``, a plain string read by :func:`read_string_table`."""
        part = self.package.find(SHARED_STRINGS)
        if part is None or self.rich_text:
            super().read_strings()
            return
        with self.archive.open(part.PartName[1:]) as source:
            self.shared_strings = read_string_table(source)

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


_STRING = f"{{{SHEET_MAIN_NS}}}si"
_STRING_TEXT = f"{{{SHEET_MAIN_NS}}}t"


def read_string_table(source: Any) -> list[str]:
    """The shared strings as openpyxl's ``read_string_table`` reads them: each ``<si>``'s
    ``Text.from_tree(si).content``, ``x005F_`` removed. A plain one, ``<si><t>text</t></si>``
    (no attribute on ``si``, ``t`` without children), is its ``t``'s text, which is what that
    gives, without building the object (under cProfile, building them was 1.7 s of the 3.6 s
    that 601 openings of bench/rescore.py's 200 files spent in ``read_book``)."""
    strings = []
    for _, node in openpyxl_iterparse(source):
        if node.tag == _STRING:
            if not node.attrib and len(node) == 1 and node[0].tag == _STRING_TEXT and not len(node[0]):
                text = node[0].text or ""
            else:
                text = Text.from_tree(node).content  # type: ignore[union-attr]  # from_tree of an element is never None
            strings.append(text.replace("x005F_", ""))
            node.clear()
    return strings


def read_book(path: Path, data_only: bool = False, read_only: bool = False) -> Workbook:
    """The workbook as ``openpyxl.load_workbook(path, data_only=..., read_only=...)`` gives it,
    its named styles cut when there are too many; openpyxl's warnings about parts it drops are silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = LeanReader(path, read_only=read_only, data_only=data_only)
        reader.read()
        return reader.wb


def load_formula_book(path: Path, pivot_tables: bool = False) -> openpyxl.Workbook:
    """The workbook with its formulas (not cached values), without openpyxl's warnings about
    extensions it drops. Raises whatever openpyxl raises on a file it cannot read.

    Pivot tables are read without their caches unless ``pivot_tables`` (a book to be saved
    needs them): openpyxl 3.1 parses every pivot cache, records included, once per sheet,
    30 s for the 12 sheets and 940 KB of records of SpreadsheetBench task 59932, and no
    formula reads them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = ExcelReader(path, read_only=False, data_only=False) if pivot_tables else _FormulaReader(path)
        reader.read()
        return reader.wb


class _PivotCachesLeftOut(WorkbookParser):
    @property
    def pivot_caches(self) -> dict[int, Any]:  # every pivot table gets None for its cache
        return defaultdict(lambda: None)


_DRAWING = re.compile(rb"\s*(?:<\?xml[^>]*\?>\s*)?<(?:\w+:)?wsDr\b")  # a part whose root is a drawing
_EMPTY_DRAWING = b'<wsDr xmlns="http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"/>'


class _DrawingsLeftOut(LeanArchive):
    """The archive :class:`_FormulaReader` reads: a :class:`LeanArchive` in which each drawing
    part (charts, pictures, shapes: a ``wsDr`` root, ECMA-376 Part 1, 20.5) reads as an empty
    drawing. No formula reads a drawing, and openpyxl parses each chart's whole DrawingML:
    2.8 s of the 5 s it spends opening SpreadsheetBench 59932's answer."""

    def read(self, name: Any, *args: Any, **kwargs: Any) -> bytes:
        data = super().read(name, *args, **kwargs)
        return _EMPTY_DRAWING if _DRAWING.match(data) else data


class _FormulaReader(LeanReader):
    """openpyxl's reader, with every pivot table's cache and every drawing left out and a
    bloated stylesheet's named styles cut (:func:`lean_stylesheet`): such a book is
    read, never saved."""

    archive_type = _DrawingsLeftOut

    def __init__(self, path: Path):
        super().__init__(path, read_only=False, data_only=False)

    def read_workbook(self) -> None:
        super().read_workbook()
        self.parser.__class__ = _PivotCachesLeftOut


def formula_cells_of(book: openpyxl.Workbook) -> Iterator[FormulaCell]:
    """Every formula cell of a workbook openpyxl loaded with its formulas, sheet by sheet in
    row order. Only the cells the file holds are visited: ``iter_rows`` would walk, and
    create, every cell of the sheet's bounding box (4.5 million for one far-off cell)."""
    for ws in book.worksheets:
        for (row, column), cell in sorted(ws._cells.items()):
            text = cell_formula(cell)
            if text is not None and isinstance(cell, Cell):
                yield FormulaCell(ws.title, row, column, text, cell)


class _ValuesAndFormulas(WorkSheetParser):
    """openpyxl's sheet parser reading cached values (``data_only``), each row's cells as
    ``(row, column, value, style id, formula)`` tuples, that also keeps, with ``formulas``,
    each formula cell's formula as its ``data_only=False`` parse gives it (the shared formulas
    translated to the cell, in the same order). The first formula it cannot read is kept in
    ``failure``, raised by the caller once the values are read.

    A row is read as openpyxl 3.1's ``parse_row`` and ``parse_cell`` read it, step for step
    and with the same errors, without a dict and a method call per cell and with a plain
    inline string (``<is><t>text</t></is>``) taken as its text, as :func:`read_string_table`
    takes a plain shared one: under cProfile, those were two thirds of the time ``read_box``
    spent on bench/rescore.py's 200 files. tests/test_openpyxl_reading.py holds every value,
    number format and formula against ``openpyxl.load_workbook`` on real files, and
    tests/test_value_reading.py every kind of cell, broken ones too."""

    def __init__(self, *args: Any, formulas: bool, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.formulas = formulas
        self.failure: Exception | None = None

    def parse_row(self, row: Any) -> tuple[int, list[tuple]]:  # type: ignore[override]
        number = row.get("r")
        if number is not None:
            try:
                self.row_counter = int(number)
            except ValueError:
                as_float = float(number)
                if not as_float.is_integer():
                    raise ValueError(f"{number} is not a valid row number") from None
                self.row_counter = int(as_float)
        else:
            self.row_counter += 1
        self.col_counter = 0
        return self.row_counter, [self._cell(element) for element in row]

    def _cell(self, element: Any) -> tuple:
        """openpyxl's ``parse_cell`` with ``data_only``: (row, column, value, style id, formula)."""
        get = element.get
        data_type = get("t", "n")
        coordinate = get("r")
        style_id = get("s", 0)
        if style_id:
            style_id = int(style_id)
        value = None if data_type == "inlineStr" else element.findtext(VALUE_TAG, None) or None
        if coordinate:
            row, column = _coordinate(coordinate)
            self.col_counter = column
        else:
            self.col_counter += 1
            row, column = self.row_counter, self.col_counter
        if value is not None:
            if data_type == "n":
                value = _cast_number(value)
                if style_id in self.date_formats:
                    try:
                        value = from_excel(value, self.epoch, timedelta=style_id in self.timedelta_formats)
                    except (OverflowError, ValueError):
                        value = "#VALUE!"  # openpyxl warns, and reads it as this error
            elif data_type == "s":
                value = self.shared_strings[int(value)]
            elif data_type == "b":
                value = bool(int(value))
            elif data_type == "d":
                value = from_ISO8601(value)
        elif data_type == "inlineStr" and (child := element.find(INLINE_STRING)) is not None:
            if not child.attrib and len(child) == 1 and child[0].tag == _STRING_TEXT and not len(child[0]):
                value = child[0].text  # what Text.from_tree(child).content gives for it
                if value is None:
                    value = ""
            else:
                value = Text.from_tree(child).content  # type: ignore[union-attr]  # of an element, never None
        formula = None
        if self.formulas and self.failure is None and element.find(FORMULA_TAG) is not None:
            try:
                formula = self.parse_formula(element)
            except MemoryError:
                raise
            except Exception as exc:  # what openpyxl's formula reading would have raised here
                self.failure = exc
        return row, column, value, style_id, formula


_COORDINATES: dict[str, tuple[int, int]] = {}
_COORDINATES_KEPT = 200_000  # coordinate texts remembered (some 30 MB): goldens and outputs share most


def _coordinate(text: str) -> tuple[int, int]:
    """openpyxl's ``coordinate_to_tuple(text)``, remembered: the same raises the same."""
    found = _COORDINATES.get(text)
    if found is None:
        found = coordinate_to_tuple(text)
        if len(_COORDINATES) >= _COORDINATES_KEPT:
            _COORDINATES.clear()
        _COORDINATES[text] = found
    return found


def _number_formats(book: Any) -> Callable[[int], str]:
    """The number format of a style id, as openpyxl's ``ReadOnlyCell.number_format`` gives it
    for a cell of ``book`` (the same errors for an id the stylesheet lacks), each once."""
    known: dict[int, str] = {}

    def number_format(style_id: int) -> str:
        found = known.get(style_id)
        if found is None:
            format_id = book._cell_styles[style_id].numFmtId
            if format_id < BUILTIN_FORMATS_MAX_SIZE:
                found = BUILTIN_FORMATS.get(format_id, "General")
            else:
                found = book._number_formats[format_id - BUILTIN_FORMATS_MAX_SIZE]
            known[style_id] = found
        return found

    return number_format


def read_box(ws: Any, positions: Collection[tuple[int, int]], formulas: bool
              ) -> tuple[dict[tuple[int, int], tuple], dict[tuple[int, int], object]]:
    """(value, number format) and formula of the cells at ``positions`` of a read-only sheet,
    chosen as ``ws.iter_rows`` over their bounding box chooses them: rows in file order up
    to the last one asked for, a row number that does not move forward skipped, the last
    cell of a column in a row kept, each cell keyed by its own coordinate."""
    rows, columns = [r for r, _ in positions], [c for _, c in positions]
    min_row, max_row, min_col, max_col = min(rows), max(rows), min(columns), max(columns)
    book = ws.parent
    values: dict[tuple[int, int], tuple] = {}
    formula_of: dict[tuple[int, int], object] = {}
    with ws._get_source() as source:
        parser = _ValuesAndFormulas(source, ws._shared_strings, data_only=True, epoch=book.epoch,
                                    date_formats=book._date_formats, timedelta_formats=book._timedelta_formats,
                                    formulas=formulas)
        number_format = _number_formats(book)
        next_row = min_row
        for number, row in parser.parse():
            if number > max_row:
                break
            if number < next_row:
                continue
            next_row = number + 1
            in_box = {cell[1]: cell for cell in row if min_col <= cell[1] <= max_col}
            for column in sorted(in_box):
                row_of, _, value, style_id, formula = in_box[column]
                key = (row_of, column)
                if key in positions:
                    values[key] = (value, number_format(style_id))
                    if formula is not None:
                        formula_of[key] = formula
                    else:
                        formula_of.pop(key, None)
        if parser.failure is not None:
            raise parser.failure
    return values, formula_of
