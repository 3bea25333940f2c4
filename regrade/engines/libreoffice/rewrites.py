"""Formulas rewritten before LibreOffice computes them, where it misses Excel's semantics.

Excel keeps 15 significant digits of MOD's dividend: ``MOD(1.000003, 1)`` is 3E-06 in
Excel and 2.9999999999752E-06 in IEEE arithmetic, which LibreOffice returns, so that
``INDEX(range, 10^6*MOD(x, 1))`` reads the row before (SpreadsheetBench task 42110). Each
``MOD(a, b)`` becomes ``ROUND(MOD(a, b), 14-INT(LOG10(ABS(a)+(a=0))))``: the same rounding
as the IronCalc bridge's MOD (:func:`regrade.engines.ironcalc.adapters.elementwise._significant`), computed by
LibreOffice itself, element by element inside array formulas.

Excel counts 1900 as a leap year: its serial 1 is 1 January 1900 and 0 is "0 January
1900", where LibreOffice's 1 is 31 December 1899; the two calendars meet at 61, 1 March
1900. ``DAY(18)`` is 18 in Excel and 17 in LibreOffice, which matters where a formula takes
the DAY of a count of days (SpreadsheetBench 30468). ``DAY``, ``MONTH`` and ``YEAR`` of x
therefore read x + 1 for 1 <= x < 60, and give Excel's 0, 1 and 1900 for 0 <= x < 1;
serial 60, Excel's 29 February 1900 and LibreOffice's 28 February, has DAY 29.

Whole columns are cut at the sheets' last used row where Excel's value cannot change, as for
IronCalc (:func:`regrade.engines.range_rewrites.value_keeping_cuts`, where the argument
that the value does not change is made): SUMPRODUCT of arrays computed by operators from
tall ranges (``SUMPRODUCT((Errors!I:I=A3)*(Errors!Q:Q=L3),Errors!M:M)``, in any formula),
and MAX or MIN of an expression computed element by element, in an array formula
(``{=MAX(IF(F:F=A2,G:G,""))}``).

The rewrites are written into a copy of the file that LibreOffice imports instead
(:func:`imported_copy`): the cell's formula text replaced, every other byte of the package
kept. LibreOffice computes a file's array formulas while importing it, before a rewrite set over
UNO reaches them (SpreadsheetBench task 17049's first input, 405 such MAX formulas: the
import took 77 s, the calculation after it 75 s uncut and 0.15 s cut); and a rewrite set over
UNO costs two calls across its pipe (6,168 plain formulas of task 55392's answer, its
structured references and DAY, MONTH and YEAR rewritten: 22.7 s of the helper's 28 s). The
text written is the one the file's own formula would be, in the grammar LibreOffice imports
every formula of an xlsx in (OOXML's). A shared formula (ECMA-376 Part 1, 18.3.1.40: the
group's first cell holds the text, its followers only the group's ``si``) is written as a
formula of its own in each cell, where every cell of the group is rewritten; a rewrite that
cannot be written (a cell not found as Excel writes one, a group only partly rewritten, a
data table's cell) is set over UNO after the import.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import openpyxl
from openpyxl.formula.tokenizer import Token
from openpyxl.worksheet.formula import ArrayFormula

from regrade.engines.range_rewrites import last_row_readers, value_keeping_cuts
from regrade.values import CellRef
from regrade.workbook import cell_xml
from regrade.workbook.rewrite import READ_ERRORS
from regrade.workbook.openpyxl_reading import formula_cells_of, load_formula_book
from regrade.workbook.sheets import (
    MAX_SHEET_BYTES, formula_texts, mentions,
)
from regrade.workbook.structured import structured_rewrites
from regrade.workbook.formula import bare_name, tokens as formula_tokens

MAX_FORMULA_LENGTH = 8192  # Excel's limit; nested MODs grow threefold a level, nested DAYs fivefold
Rewrite = tuple[str, int, int, str, str | None]  # sheet, row, column, formula, array formula range


def libreoffice_rewrites(path: Path) -> list[Rewrite]:
    """What LibreOffice computes instead of the file's formulas: structured references as
    ranges (:mod:`regrade.workbook.structured`; in plain formulas, as LibreOffice reads them in array
    formulas itself, unless the array formula is rewritten anyway), MOD with Excel's
    precision and DAY, MONTH and YEAR with Excel's calendar, whole columns cut where the value
    cannot change. The sheets are searched once for the calls, and the formula book read
    at most once, only when one is found."""
    book = functools.cache(lambda: _formula_book(path))
    mentioned = {name.decode() for name in mentions(path, tuple(name.encode() for name in (*_REWRITTEN, *_CUT)))}
    rewrites: dict[CellRef, tuple[str, str | None]] = {
        cell: (formula, None) for cell, formula in structured_rewrites(path, loaded=book).items()}
    resolved: dict[CellRef, str] | None = None  # with array formulas: read only if needed
    for sheet, row, column, formula, area in (semantic_rewrites(book()) if mentioned & set(_REWRITTEN) else []):
        key = CellRef(sheet, row, column)
        if key in rewrites:
            formula = with_excel_semantics(rewrites[key][0])
        elif area is not None and "[" in formula:
            if resolved is None:
                resolved = structured_rewrites(path, array_formulas=True, loaded=book)
            if key in resolved:
                formula = with_excel_semantics(resolved[key])
        rewrites[key] = (formula, area)  # an array formula's range, or None
    if mentioned & set(_CUT):
        _cut_whole_columns(path, book, rewrites)
    return [(sheet, row, column, formula, area) for (sheet, row, column), (formula, area) in rewrites.items()]


@contextlib.contextmanager
def imported_copy(path: Path, rewrites: list[Rewrite]) -> Iterator[tuple[Path, list[Rewrite]]]:
    """The file LibreOffice is to import, and the rewrites left to set over UNO: a copy, in a
    temporary folder while the block runs, with the rewrites written into their cells (the
    module's text); ``path`` and every rewrite when there are none or none can be written."""
    if not rewrites:
        yield path, rewrites
        return
    try:
        sheets = cell_xml.read_sheets(path, {sheet for sheet, *_ in rewrites}, MAX_SHEET_BYTES)
    except MemoryError:
        raise  # a limit, not a broken file: the isolating worker reports it
    except READ_ERRORS:  # a part over the size limit (ValueError) among them
        yield path, rewrites
        return
    elements = _written_rewrites(sheets, rewrites)
    if not elements:
        yield path, rewrites
        return
    left = [rewrite for rewrite in rewrites if CellRef(*rewrite[:3]) not in elements]
    with tempfile.TemporaryDirectory(prefix="regrade-libreoffice-") as folder:
        copy = Path(folder) / path.name
        sheets.write_edited(path, copy, elements)
        yield copy, left


def _written_rewrites(sheets: cell_xml.SheetsXml, rewrites: list[Rewrite]) -> dict[CellRef, str]:
    """The new element of each cell whose rewrite can be written into the file (the module's text)."""
    elements: dict[CellRef, str] = {}
    shared: dict[tuple[str, str], dict[CellRef, str]] = {}  # (sheet, si) -> its rewritten cells: their text
    for sheet, row, column, formula, area in rewrites:
        ref = CellRef(sheet, row, column)
        cell = sheets.cell(ref)
        kind = None if cell is None else cell_xml.formula_kind(cell)
        if cell is None or kind is None:
            continue
        text = formula.removeprefix("=")
        if kind == "shared" and area is None and (index := cell_xml.shared_index(cell)) is not None:
            shared.setdefault((sheet, index), {})[ref] = text
        elif (kind == "normal" or area is not None and kind != "shared") and cell_xml.formula_text(cell) is not None:
            elements[ref] = cell_xml.respelled(cell, text)
    groups = {sheet: _shared_groups(sheets, sheet) for sheet, _ in shared}
    for (sheet, index), texts in shared.items():
        if {ref.coordinate for ref in texts} == groups[sheet][index]:
            elements.update({ref: cell_xml.with_own_formula(sheets.cell(ref), text)  # type: ignore[arg-type]
                             for ref, text in texts.items()})
    return elements


def _shared_groups(sheets: cell_xml.SheetsXml, sheet: str) -> dict[str, set[str]]:
    """The sheet's shared formulas: each one's ``si`` -> the coordinates of its cells."""
    groups: dict[str, set[str]] = {}
    for coordinate, cell in sheets.index[sheets.parts[sheet]].items():
        if (index := cell_xml.shared_index(cell)) is not None:
            groups.setdefault(index, set()).add(coordinate)
    return groups


def _formula_book(path: Path) -> openpyxl.Workbook | None:
    """The file's formulas as openpyxl reads them, or None when it cannot (LibreOffice then
    computes the file as it stands)."""
    try:
        return load_formula_book(path)
    except Exception:
        return None


def _cut_whole_columns(path: Path, book: Callable[[], openpyxl.Workbook | None],
                       rewrites: dict[CellRef, tuple[str, str | None]]) -> None:
    """Cut the whole columns of the module's text, in ``rewrites`` where a cell is rewritten
    already. The formula book is read only when some formula would be cut were the sheets
    one row long."""
    if not any(value_keeping_cuts(f"={text}", lambda sheet: 1, array=True) != f"={text}"
               for text in formula_texts(path, _CUT)):
        return
    if (loaded := book()) is None:
        return
    readers = last_row_readers({ws.title.lower(): ws.max_row for ws in loaded.worksheets})
    for cell in formula_cells_of(loaded):
        if (last_row := readers(cell.sheet)) is None:
            continue
        array_range = str(cell.cell.value.ref) if isinstance(cell.cell.value, ArrayFormula) else None
        key = CellRef(cell.sheet, cell.row, cell.column)
        formula, area = rewrites.get(key, (cell.text, array_range))
        if (cut := value_keeping_cuts(formula, last_row, array_range is not None)) != formula:
            rewrites[key] = (cut, area or array_range)


def semantic_rewrites(book: openpyxl.Workbook | None) -> list[Rewrite]:
    """Every formula of ``book`` calling MOD, DAY, MONTH or YEAR, rewritten with Excel's
    semantics (:func:`with_excel_semantics`); array formulas with their range. None for a book
    openpyxl could not read."""
    if book is None:
        return []
    found: list[Rewrite] = []
    for cell in formula_cells_of(book):
        if not any(name in cell.text.upper() for name in _REWRITTEN):
            continue
        rewritten = with_excel_semantics(cell.text)
        if rewritten != cell.text and len(rewritten) <= MAX_FORMULA_LENGTH:
            area = cell.cell.value.ref if isinstance(cell.cell.value, ArrayFormula) else None
            found.append((cell.sheet, cell.row, cell.column, rewritten, str(area) if area else None))
    return found


_DATE_PARTS = {"DAY(": "-({0}>=0)*({0}<1)*30+({0}>=60)*({0}<61)", "MONTH(": "-({0}>=0)*({0}<1)*11", "YEAR(": "+({0}>=0)*({0}<1)"}
_REWRITTEN = ("MOD(", *_DATE_PARTS)
_CUT = ("MAX(", "MIN(", "SUMPRODUCT(")


def _excel_call(opening: str, args: list[str]) -> str | None:
    """Excel's semantics of a MOD, DAY, MONTH or YEAR call in LibreOffice's terms; None for
    another function, "" for a call of the wrong shape."""
    name = bare_name(opening)
    if name == "MOD(":
        if len(args) != 2:
            return ""
        a, b = (arg.strip() for arg in args)
        return f"ROUND(MOD({a},{b}),14-INT(LOG10(ABS({a})+(({a})=0))))"
    if name in _DATE_PARTS:
        if len(args) != 1:
            return ""
        x = f"({args[0].strip()})"
        return f"{name}{x}+({x}>=1)*({x}<60)){_DATE_PARTS[name].format(x)}"
    return None


def with_excel_semantics(formula: str) -> str:
    """``formula`` with each MOD(a, b) rounded as Excel rounds it and DAY, MONTH and YEAR
    reading serials as Excel does (see the module's doc); unchanged when the tokenizer
    cannot split it or such a call has the wrong number of arguments."""
    tokens = formula_tokens(formula)
    if tokens is None:
        return formula
    frames: list[tuple[bool, str, list[str]]] = [(False, "", [""])]  # a function?, opening text, argument texts
    for token in tokens:
        if token.subtype == Token.OPEN and token.type in (Token.FUNC, Token.PAREN, Token.ARRAY):
            frames.append((token.type == Token.FUNC, token.value, [""]))
            continue
        if token.subtype == Token.CLOSE and len(frames) > 1:
            is_function, opening, args = frames.pop()
            text = _excel_call(opening, args) if is_function else None
            if text == "":
                return formula
            if text is None:
                text = opening + ",".join(args) + token.value
        elif token.type == Token.SEP and token.subtype == Token.ARG and frames[-1][1].endswith("("):
            frames[-1][2].append("")
            continue
        else:
            text = token.value
        frames[-1][2][-1] += text
    return "=" + frames[0][2][0] if len(frames) == 1 else formula
