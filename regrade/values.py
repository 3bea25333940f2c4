"""The values regrade reads from workbooks and engines, and the one cell-reference type.

An engine reads a workbook and answers, for each requested cell, one of:

- a plain value (``float``, ``str``, ``bool``, ``datetime``/``time``, or ``None`` for empty),
  represented the way openpyxl represents a stored value, so that every
  comparison policy sees engine values and cached values alike;
- an :class:`ExcelError` (``#N/A``, ``#DIV/0!`` ...), which is a real result;
- :class:`CannotEvaluate`, an abstention with a reason. It is never a wrong value.

A whole workbook can also fail (unreadable file, timeout, crash): the engine then
returns a :class:`WorkbookValues` whose ``failure`` is set and whose cells are empty.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import operator
from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple, NoReturn, Sequence

from openpyxl.utils.cell import get_column_letter


class CellRef(NamedTuple):
    """One cell of one sheet: ``CellRef("Sheet1", 3, 2)`` is ``Sheet1!B3``."""

    sheet: str
    row: int
    column: int

    @property
    def coordinate(self) -> str:
        return f"{get_column_letter(self.column)}{self.row}"

    def __str__(self) -> str:
        return f"{self.sheet}!{self.coordinate}"


@dataclass(frozen=True)
class ExcelError:
    """An Excel error value computed by an engine, e.g. ``ExcelError("#N/A")``."""

    code: str

    def __str__(self) -> str:
        return self.code


@dataclass(frozen=True)
class CannotEvaluate:
    """The engine abstains on this cell.

    ``reason`` is a stable kebab-case kind (``unsupported-function``, ``engine-departure``,
    ``parse-error``, ``timeout`` ...); ``rule`` is the id of the rule that made the
    abstention (:mod:`regrade.engines.rules`), empty when none did (a workbook failure, a
    disagreement); ``detail`` says what exactly, for people: no count reads it.
    """

    reason: str
    detail: str = ""
    rule: str = ""

    @property
    def key(self) -> str:
        """What abstentions are counted by: the rule's id, or the reason where no rule made it."""
        return self.rule or self.reason

    def __str__(self) -> str:
        return f"cannot evaluate ({self.key}: {self.detail})" if self.detail else f"cannot evaluate ({self.key})"


PlainValue = float | int | str | bool | dt.datetime | dt.date | dt.time | dt.timedelta | None
CellResult = PlainValue | ExcelError | CannotEvaluate

EXCEL_ERROR_CODES = frozenset(
    {"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA", "#SPILL!", "#CALC!"}
)
# The errors a cell of the file can hold as themselves (ECMA-376 Part 1, 18.18.11, and [MS-XLSB]'s
# #GETTING_DATA). Excel writes a newer error (#SPILL!, #CALC!, #FIELD! ...) as <v>#VALUE!</v>, its
# kind kept in rich-value metadata (the cell's vm, an xl/richData value of type _error) that
# openpyxl, and so every grader, does not read: 10 such cells in the oracle corpora, all #VALUE!.
STORED_ERROR_CODES = frozenset({"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA"})


def as_stored(value: CellResult) -> CellResult:
    """An engine's value as Excel writes it to the file: an error with no code there becomes ``#VALUE!``."""
    if isinstance(value, ExcelError) and value.code not in STORED_ERROR_CODES:
        return ExcelError("#VALUE!")
    return value


@dataclass(frozen=True)
class WorkbookFailure:
    """Why a whole workbook could not be read or evaluated.

    ``reason`` ids: ``missing-file``, ``unreadable-output`` (the file is not a workbook
    any reader accepts), ``load-failed`` (this engine cannot load a file others can),
    ``timeout``, ``memory-limit``, ``crashed``.
    """

    reason: str
    detail: str = ""


@dataclass
class WorkbookValues:
    """What an engine saw in one workbook: its sheet names and the requested cells."""

    sheet_names: list[str] = field(default_factory=list)
    cells: dict[CellRef, CellResult] = field(default_factory=dict)
    formulas: dict[CellRef, str] = field(default_factory=dict)
    number_formats: dict[CellRef, str] = field(default_factory=dict)
    failure: WorkbookFailure | None = None

    def __reduce__(self) -> tuple:
        """Pickled with its cells as plain tuples, each once, rebuilt as CellRefs: an engine's
        worker sends tens of thousands over a pipe, and a NamedTuple pickles several times slower."""
        keys = list(self.cells)
        return _unpacked_values, (self.sheet_names, _as_tuples(keys), list(self.cells.values()),
                                  _aligned(self.formulas, keys), _aligned(self.number_formats, keys), self.failure)


def _aligned(by_cell: dict[CellRef, Any], keys: list[CellRef]) -> list | tuple[list[tuple], list]:
    """The values alone where ``by_cell`` names exactly ``keys`` in order, else its cells and values."""
    return list(by_cell.values()) if list(by_cell) == keys else (_as_tuples(by_cell), list(by_cell.values()))


def _unpacked_values(sheet_names: list[str], keys: list[tuple], values: list, formulas: list | tuple,
                     number_formats: list | tuple, failure: WorkbookFailure | None) -> WorkbookValues:
    cells = unpacked_cells(keys)

    def rebuilt(packed: list | tuple) -> dict[CellRef, Any]:
        return dict(zip(cells, packed)) if isinstance(packed, list) else dict(zip(unpacked_cells(packed[0]), packed[1]))

    return WorkbookValues(sheet_names, dict(zip(cells, values)), rebuilt(formulas), rebuilt(number_formats), failure)


@dataclass(frozen=True)
class AlignedValues:
    """An engine worker's answer for the cells it was asked, in their order: sent instead of
    the :class:`WorkbookValues` when it holds no other cell, so no cell is sent back, only
    what was found there (:func:`aligned_answer`, :func:`values_from_answer`)."""

    sheet_names: list[str]
    values: list  # the value of each cell asked, None where absent (the indexes in ``absent``)
    absent: list[int]
    number_formats: list  # each cell's number format, None where it has none
    formulas: list[tuple[int, str]]  # (index of the cell asked, its formula)


def aligned_answer(values: WorkbookValues, asked: list[CellRef]) -> WorkbookValues | AlignedValues:
    """What an engine worker sends for ``asked``: :class:`AlignedValues` where every cell the
    answer holds was asked once, else the answer whole."""
    if values.failure is not None or len(set(asked)) != len(asked):
        return values
    absent_marker = _ABSENT
    found = [values.cells.get(ref, absent_marker) for ref in asked]
    absent = [i for i, value in enumerate(found) if value is absent_marker]
    formats = [values.number_formats.get(ref) for ref in asked] if values.number_formats else []
    formulas = [(i, f) for i, ref in enumerate(asked) if (f := values.formulas.get(ref)) is not None] \
        if values.formulas else []
    if (len(asked) - len(absent) != len(values.cells) or len(formulas) != len(values.formulas)
            or len(values.number_formats) != sum(f is not None for f in formats)):
        return values  # it holds cells not asked
    for i in absent:
        found[i] = None
    return AlignedValues(values.sheet_names, found, absent, formats, formulas)


def values_from_answer(answer: WorkbookValues | AlignedValues, asked: list[CellRef]) -> WorkbookValues:
    """The :class:`WorkbookValues` an engine worker's answer for ``asked`` stands for."""
    if isinstance(answer, WorkbookValues):
        return answer
    cells = dict(zip(asked, answer.values))
    for i in answer.absent:
        del cells[asked[i]]
    formats = dict(zip(asked, answer.number_formats)) if None not in answer.number_formats else \
        {ref: f for ref, f in zip(asked, answer.number_formats) if f is not None}  # most often every cell has one
    return WorkbookValues(answer.sheet_names, cells, {asked[i]: f for i, f in answer.formulas}, formats)


_ABSENT = object()


def packed_cells(cells: Sequence[CellRef]) -> list[tuple] | PackedBoxes:
    """Cells to send over a pipe (:func:`unpacked_cells` rebuilds them): the boxes of
    :class:`CellBoxes`, else each cell as a plain tuple."""
    if isinstance(cells, CellBoxes):
        return PackedBoxes(cells.boxes)
    return _as_tuples(cells)


def unpacked_cells(packed: Sequence[tuple] | PackedBoxes) -> list[CellRef]:
    """The cells :func:`packed_cells` packed, in their order, as a plain list."""
    if isinstance(packed, PackedBoxes):
        return list(_cells_of_boxes(packed.boxes))
    return list(map(_as_cell_ref, packed))


def _as_tuples(cells: Iterable[CellRef]) -> list[tuple]:
    """Cells as plain tuples: a NamedTuple pickles several times slower."""
    return list(map(tuple, cells))


def _cells_of_boxes(boxes: Iterable[tuple[str, range, range]]) -> Iterable[CellRef]:
    """The cells of each box, box after box, as :func:`cell_refs_in` makes them."""
    return itertools.chain.from_iterable(cell_refs_in(*box) for box in boxes)


@dataclass(frozen=True)
class PackedBoxes:
    boxes: tuple[tuple[str, range, range], ...]


class CellBoxes(list):
    """The cells of boxes (sheet, rows, columns), box after box and row by row, as
    :func:`cell_refs_in` makes them, which knows its boxes: a graded range of a hundred
    thousand cells goes to an engine's worker as its boxes (:func:`packed_cells`). It cannot
    be changed: what it holds is always what its boxes say."""

    __slots__ = ("boxes",)

    def __init__(self, boxes: Iterable[tuple[str, range, range]]):
        self.boxes = tuple(boxes)
        super().__init__(_cells_of_boxes(self.boxes))

    def _unchangeable(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a CellBoxes cannot be changed; copy it with list() first")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _unchangeable
    append = extend = insert = pop = remove = clear = sort = reverse = _unchangeable

    def __reduce__(self) -> tuple:
        return CellBoxes, (self.boxes,)


_as_cell_ref = functools.partial(tuple.__new__, CellRef)  # CellRef._make without its Python frame: 0.7x the time


def cell_refs(sheet: str, positions: Iterable[tuple[int, int]]) -> list[CellRef]:
    """``[CellRef(sheet, row, column) for row, column in positions]``, without a Python call per
    cell (a NamedTuple's constructor is one): a graded range can hold a hundred thousand."""
    new = tuple.__new__
    return [new(CellRef, (sheet, row, column)) for row, column in positions]


def cell_refs_in(sheet: str, rows: range, columns: range) -> list[CellRef]:
    """The cells of ``sheet`` in those rows and columns, row by row, as :func:`cell_refs` makes them."""
    new = tuple.__new__
    return [new(CellRef, (sheet, row, column)) for row in rows for column in columns]


def cells_by_sheet(cells: Iterable[CellRef]) -> dict[str, list[CellRef]]:
    """The cells by the sheet name they give, each name's in their order (grouped a run of one
    sheet at a time, without a Python call per cell)."""
    grouped: dict[str, list[CellRef]] = {}
    for name, run in itertools.groupby(cells, key=_SHEET_OF):
        grouped.setdefault(name, []).extend(run)
    return grouped


_SHEET_OF = operator.itemgetter(0)  # a CellRef's sheet
