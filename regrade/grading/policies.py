"""Comparison policies: which cells are graded and when two values count as equal.

Both built-in policies use SpreadsheetBench's value rules (``evaluation.py``):
numbers and numeric text are rounded to 2 places, a datetime becomes its Excel
serial rounded to 0, a time becomes ``str(t)[:-3]``, ``None`` equals ``""``, and
otherwise the types must match (a bool counts as a number, because Python's
``bool`` is an ``int``).

- ``spreadsheetbench-official``: the official cell selection, bug for bug
  (:mod:`regrade.grading.official`), and exact, case-sensitive sheet names.
- ``spreadsheetbench``: the same value rules with :mod:`regrade.runs.positions`' correct
  parsing; a position naming no sheet uses ``answer_sheet``, else the first sheet.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from regrade.values import CannotEvaluate, CellBoxes, CellRef, CellResult, ExcelError
from regrade.grading.official import OfficialGraderError, official_targets
from regrade.runs.positions import PositionError, box_spans, parse_answer_position


class TargetError(Exception):
    """The graded cells cannot be determined: the case cannot be graded as a pass."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class SheetExtent(Protocol):
    """A golden sheet as positions need it: its name, and its size (for whole columns or rows)."""

    @property
    def name(self) -> str: ...

    @property
    def max_row(self) -> int: ...

    @property
    def max_column(self) -> int: ...


@dataclass(frozen=True)
class KnownExtent:
    """A sheet whose size is known."""

    name: str
    max_row: int
    max_column: int


class Policy(Protocol):
    name: str
    exact_sheet_names: bool

    def targets(self, position: str, answer_sheet: str | None, golden: Sequence[SheetExtent]) -> list[CellRef]: ...

    def equal(self, golden: CellResult, output: CellResult) -> bool: ...

    def surely_equal(self, golden: list, output: list) -> list[bool]:
        """For each pair of the two lists, True where ``equal`` would say so for a reason
        checked over both lists at once; False where ``equal`` must decide."""
        ...


def _excel_serial(value: dt.datetime) -> float:
    delta = value - dt.datetime(1899, 12, 30)
    return delta.days + delta.seconds / 86400.0


def normalise(value: CellResult) -> object:
    """A value as SpreadsheetBench compares it."""
    if isinstance(value, ExcelError):
        return value.code  # openpyxl reads a cached error as its code text
    if isinstance(value, (int, float)):
        return round(float(value), 2)
    if isinstance(value, dt.time):
        return str(value)[:-3]
    if isinstance(value, dt.datetime):
        return round(_excel_serial(value), 0)
    if isinstance(value, str):
        try:
            return round(float(value), 2)
        except ValueError:
            return value
    return value


_SAME_WHEN_EQUAL = (int, float, bool, type(None))  # equal values of these normalise to one value, never NaN


def spreadsheetbench_equal(golden: CellResult, output: CellResult) -> bool:
    if type(golden) is type(output) and golden == output:  # the common case, decided without normalising twice
        if type(golden) in _SAME_WHEN_EQUAL:
            return True
        if type(golden) is str:
            same = normalise(golden)
            return same == same  # False only for a text that reads as NaN ("nan"), as normalising both gives
    if isinstance(golden, CannotEvaluate) or isinstance(output, CannotEvaluate):
        raise ValueError("a value that could not be evaluated cannot be compared")
    a, b = normalise(golden), normalise(output)
    if (a is None or a == "") and (b is None or b == ""):
        return True
    if type(a) is not type(b):
        return False
    return a == b


_PLAIN_TYPES = frozenset((*_SAME_WHEN_EQUAL, dt.date, dt.timedelta))  # normalised as they are: equal stays equal
_NAIVE_TYPES = frozenset((dt.datetime, dt.time))  # equal naive ones normalise to one serial, or one text


def spreadsheetbench_surely_equal(golden: list, output: list) -> list[bool]:
    """For each pair, True where :func:`spreadsheetbench_equal` is sure to say so: the same
    type and ``==``, for a type whose equal values normalise alike (a number, a logical, empty,
    a date, a duration, a naive date-time or time); or for a text that cannot read as NaN (it
    holds no "nan" in any case) and holds no ``_x`` escape (a recomputed grade compares the
    golden's text decoded, :func:`regrade.engines.readings.decoded_text`). False where that
    function must decide. One pass over both lists, without a Python call per pair: the graded
    cells of one case can number a hundred thousand, nearly all equal."""
    plain, naive = _PLAIN_TYPES, _NAIVE_TYPES
    return [(kind := type(g)) is type(o)
            and (kind in plain or (kind is str and "_x" not in g and "nan" not in g.lower())
                 or (kind in naive and g.tzinfo is None))
            and g == o
            for g, o in zip(golden, output)]


ROUNDING_BOUNDARY = "rounding-boundary"
EXCEL_DIGITS = 15  # Excel keeps 15 significant digits of a number (its specifications and limits)


def rounding_boundary(policy: Policy, golden: CellResult, output: CellResult) -> CannotEvaluate | None:
    """An abstention where a computed number and the golden's agree to Excel's 15 significant
    digits but the policy's rounding puts them apart (17698.495000000003 and 17698.495 round to
    17698.5 and 17698.49): they differ in the last bits of binary floating point, which depend on
    the order the arithmetic is done in, and which way Excel's own would round is not known.
    None where the values are not two such numbers."""
    numbers = [v for v in (golden, output) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) < 2 or policy.equal(golden, output):
        return None
    a, b = (f"{float(n):.{EXCEL_DIGITS}g}" for n in numbers)
    if a != b:
        return None
    return CannotEvaluate(ROUNDING_BOUNDARY, f"{output!r} and the golden's {golden!r} are equal to "
                                             f"{EXCEL_DIGITS} digits and round apart: binary rounding decides")


class OfficialPolicy:
    name = "spreadsheetbench-official"
    exact_sheet_names = True

    def targets(self, position: str, answer_sheet: str | None, golden: Sequence[SheetExtent]) -> list[CellRef]:
        try:
            return official_targets(position, [s.name for s in golden])
        except OfficialGraderError as exc:
            raise TargetError("official-grader-error", f"the official grader raises on {position!r}: {exc}") from exc

    def equal(self, golden: CellResult, output: CellResult) -> bool:
        return spreadsheetbench_equal(golden, output)

    def surely_equal(self, golden: list, output: list) -> list[bool]:
        return spreadsheetbench_surely_equal(golden, output)


class SpreadsheetBenchPolicy:
    name = "spreadsheetbench"
    exact_sheet_names = False

    def targets(self, position: str, answer_sheet: str | None, golden: Sequence[SheetExtent]) -> list[CellRef]:
        try:
            parsed = parse_answer_position(position)
        except PositionError as exc:
            raise TargetError("invalid-position", str(exc)) from exc
        if not golden:
            raise TargetError("invalid-golden", "the golden workbook has no sheet")
        default = _default_sheet(answer_sheet, golden)
        boxes = []
        for box in parsed.boxes:
            extent = _find_sheet(box.sheet or default.name, golden)
            if extent is None:
                raise TargetError("invalid-position", f"sheet {box.sheet!r} of {position!r} is not in the golden workbook")
            max_row = extent.max_row if box.max_row is None else 1  # a sheet's size is read only when needed
            max_column = extent.max_column if box.max_col is None else 1
            boxes.append((extent.name, *box_spans(box, max_row, max_column)))
        return CellBoxes(boxes)

    def equal(self, golden: CellResult, output: CellResult) -> bool:
        return spreadsheetbench_equal(golden, output)

    def surely_equal(self, golden: list, output: list) -> list[bool]:
        return spreadsheetbench_surely_equal(golden, output)


def _find_sheet(name: str, golden: Sequence[SheetExtent]) -> SheetExtent | None:
    for extent in golden:
        if extent.name == name:
            return extent
    folded = name.strip().casefold()
    return next((e for e in golden if e.name.strip().casefold() == folded), None)


def _default_sheet(answer_sheet: str | None, golden: Sequence[SheetExtent]) -> SheetExtent:
    if answer_sheet:
        named = _find_sheet(answer_sheet.strip().strip("'"), golden)
        if named is not None:
            return named
    return golden[0]


POLICIES: dict[str, Callable[[], Policy]] = {
    OfficialPolicy.name: OfficialPolicy,
    SpreadsheetBenchPolicy.name: SpreadsheetBenchPolicy,
}


def get_policy(name: str) -> Policy:
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; choose one of: {', '.join(POLICIES)}") from None
