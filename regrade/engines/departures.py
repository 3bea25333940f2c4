"""Ways of calling a function where an engine departs from Excel, as data, and the abstentions they make.

An engine lists its :class:`Departure` rows (LibreOffice's in :mod:`regrade.engines.libreoffice.engine`,
Formulon's in :mod:`regrade.engines.formulon`); :func:`abstain_on_departures` makes a graded
cell abstain, by the row's rule, when a formula of its dependency cone calls the function in
that way. A look at the formula texts of the sheet XML first keeps the formula graph off the
common path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from regrade.engines.rules import BY_ID, abstention
from regrade.values import CellRef, CellResult, ExcelError, WorkbookValues
from regrade.workbook.analysis import WorkbookAnalysis
from regrade.workbook.calls import (
    QUOTED, READS_TEXT_AS_DATE, TAKES_A_DATE, Call, array_expression, calls, reads_a_date_from_text,
)
from regrade.workbook.cones import FormulaGraph
from regrade.workbook.formula import boundaries
from regrade.workbook.sheets import formula_texts, resolve_sheet


@dataclass(frozen=True)
class Departure:
    """``function`` called so that ``departs(call)``: the engine's value is not Excel's. ``rule``
    is its row in :mod:`regrade.engines.rules`, which says why and where it was seen."""

    function: str
    departs: Callable[[Call], bool]
    rule: str
    only_on: ExcelError | float | None = None  # a cell abstains only when the engine's value is this (an error, 0)
    on_any_error: bool = False  # ... only when the engine's value is an error
    beyond: float | None = None  # ... only when the engine's value is a number of greater magnitude
    text_like: re.Pattern[str] | None = None  # ... only when the engine's value is a text this pattern finds
    plain_only: bool = False  # only in a formula saved plain (without array metadata, as openpyxl writes it)
    except_in: tuple[str, ...] = ()  # not where the call is a whole argument of one of these functions

    def concerns(self, value: CellResult) -> bool:
        """Whether the rule may fire on a cell with this value."""
        if self.only_on is not None:
            return value == self.only_on
        if self.beyond is not None:
            return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > self.beyond
        if self.text_like is not None:
            return isinstance(value, str) and self.text_like.search(value) is not None
        return isinstance(value, ExcelError) if self.on_any_error else True


def any_call(call: Call) -> bool:
    """Every call of the function."""
    return True


# Ways of calling that more than one engine gets wrong (LibreOffice and Formulon)
def empty_flag_left_out(call: Call) -> bool:
    """TEXTJOIN(delimiter, , ...): ignore_empty written as nothing."""
    return len(call.args) >= 2 and call.args[1] == ""


def offsets_of_an_array(call: Call) -> bool:
    """OFFSET with an array constant of offsets or sizes."""
    return any(arg.startswith("{") for arg in call.args[1:])


def offsets_of_a_computed_array(call: Call) -> bool:
    """OFFSET with offsets or sizes computed from multi-cell ranges (``ROW(A1:A3)-ROW(A1)``)."""
    return any(array_expression(arg) for arg in call.args[1:])


def columns_of_an_array(call: Call) -> bool:
    """VLOOKUP or HLOOKUP with an array constant of column (row) numbers."""
    return len(call.args) >= 3 and call.args[2].startswith("{")


# Where every full engine here (IronCalc, LibreOffice, Formulon) departs from Excel alike; each lists these.
# Next to a pole of TAN, COT, SEC or CSC the digits depend on how the argument is reduced by pi: the
# value's absolute error grows as its square (Excel's, fitted on IronCalc's TAN.xlsx and
# TRIGONOMETRIC.xlsx, as pi carried to 66 bits, x87's FPTAN), so beyond 1e5 two engines part in
# the 10th decimal and beyond 1e8 in the 2nd.
POLE_MAGNITUDE = 1e5
_SINGLE_CELL = re.compile(r"(?:(?:'(?:[^']|'')+'|[\w.]+)!)?(\$?[A-Za-z]{1,3}\$?\d+)(?::(\$?[A-Za-z]{1,3}\$?\d+))?")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[Ee][+-]?\d+)?")


def _single_cell(argument: str) -> bool:
    """A reference to one cell: ``B8``, ``Sheet1!$B$8``, ``G1330:G1330``."""
    match = _SINGLE_CELL.fullmatch(argument)
    return match is not None and (match.group(2) is None or match.group(1).replace("$", "").upper()
                                  == match.group(2).replace("$", "").upper())


def year_before_1901(call: Call) -> bool:
    """DATE with a year written as a number up to 1900: Excel reads 0-1899 as 1900 plus it, and
    counts days in its own 1900, which has a 29 February (its serial 60); the engines count in
    the real calendar (DATE(1900,1,61) is 61 in Excel and 62 in all three; IronCalc and
    LibreOffice give 2 for DATE(1900,1,1)) and LibreOffice reads 0-29 as 2000-2029."""
    return bool(call.args) and _NUMBER.fullmatch(call.args[0]) is not None and float(call.args[0]) < 1901


def mode_of_a_scalar(call: Call) -> bool:
    """MODE with an argument given as one value, a text or logical literal or one cell: Excel gives
    #VALUE! unless each such value is a number (an empty cell, "1", TRUE); the engines skip it as
    they skip text in a range."""
    return any(arg.startswith('"') or arg.upper() in ("TRUE", "FALSE") or _single_cell(arg) for arg in call.args)


def product_of_single_cells(call: Call) -> bool:
    """SUMPRODUCT whose every argument is one cell or a number: Excel multiplies them as values, so a
    text among them is #VALUE!, where the engines count it as 0 as in a larger range (and so give 0)."""
    return bool(call.args) and any(_single_cell(a) for a in call.args) and all(
        _single_cell(a) or _NUMBER.fullmatch(a) for a in call.args)


# A number format with an exponent and a literal in it (``|#.#|E+|#|``, ``0.0E+"x"0``): Excel writes the
# exponent's sign next to its digits, after the literal ("|1.2|E|+5|"); LibreOffice and Formulon right after
# the E ("|1.2|E+|5|"), IronCalc puts the literal before the E ("1.2xE+5"). The pattern finds an exponent
# sign in a text that holds something besides digits, signs, separators and spaces.
SCIENTIFIC_WITH_LITERAL = re.compile(r"^(?=.*[Ee][+-])(?=.*[^\d\s.,+\-Ee])")
# ADDRESS with a sheet text naming a workbook ("[Book1]Sheet1"): Excel writes it as given, the engines quote it.
QUOTED_WORKBOOK = re.compile(r"^'\[")
_OPERATOR_OR_CALL = re.compile(r"[-+*/^&=<>(){]")


def approximate_match_over_computed_array(call: Call) -> bool:
    """MATCH(value, expression) or MATCH(value, expression, 1); a type written as nothing is 0."""
    return len(call.args) >= 2 and (len(call.args) == 2 or call.args[2] in ("1", "TRUE")) \
        and bool(_OPERATOR_OR_CALL.search(QUOTED.sub("", call.args[1])))


_PLAIN_REFERENCE = re.compile(r"(?:(?:'(?:[^']|'')+'|[\w.]+)!)?(\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?"
                              r"|\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}|\$?\d+:\$?\d+)")


def _shape(reference: str) -> tuple[int, int] | None:
    """(rows, columns) of a plain reference (``A1``, ``$B$2:C9``, ``Data!A:A``), None for anything else."""
    match = _PLAIN_REFERENCE.fullmatch(reference.strip())
    if match is None:
        return None
    min_col, min_row, max_col, max_row = boundaries(match.group(1).replace("$", "").upper())
    return max_row - min_row + 1, max_col - min_col + 1


def _range_shapes(call: Call) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The shapes of SUMIF's or AVERAGEIF's range and sum (average) range, where both are plain references."""
    if call.name not in ("SUMIF", "AVERAGEIF") or len(call.args) < 3:
        return None
    criteria, summed = _shape(call.args[0]), _shape(call.args[2])
    return (criteria, summed) if criteria and summed else None


def sum_range_anchor(call: Call) -> bool:
    """SUMIF(A1:A3, "x", B1): a sum range of one cell against a range of several, which Excel
    extends from that cell to the range's shape."""
    shapes = _range_shapes(call)
    return shapes is not None and shapes[1] == (1, 1) and shapes[0] != (1, 1)


def sum_range_of_another_shape(call: Call) -> bool:
    """SUMIF(A1:A3, "x", B1:B2): a sum range of several cells and another shape than the range."""
    shapes = _range_shapes(call)
    return shapes is not None and shapes[1] != (1, 1) and shapes[0] != shapes[1]


# The criteria arguments of the *IF(S) functions, by position
CRITERIA = {"COUNTIF": (1,), "SUMIF": (1,), "AVERAGEIF": (1,), "COUNTIFS": tuple(range(1, 254, 2)),
            "SUMIFS": tuple(range(2, 254, 2)), "AVERAGEIFS": tuple(range(2, 254, 2)),
            "MAXIFS": tuple(range(2, 254, 2)), "MINIFS": tuple(range(2, 254, 2))}
_LITERAL = re.compile(r'"((?:[^"]|"")*)"')
_MONTH = r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
_COMPARISON = re.compile(r"^(?:<=|>=|<>|<|>|=)")
_DATE_TEXT = re.compile(rf"\d\s*[/-]\s*\d|\d\s*[/-]$|^[/-]\s*\d|{_MONTH}.*\d|\d.*{_MONTH}", re.IGNORECASE)


def criteria_with_a_date_text(call: Call) -> bool:
    """A criteria argument whose text pieces, after the comparison operator, write a date:
    ``">=1/1/2020"``, ``">="&"1-"&B1&"-2020"``, ``"<"&"5 Jan "&Y1`` (a negative number, "<-5", is not one)."""
    for index in CRITERIA.get(call.name, ()):
        if index < len(call.args):
            pieces = [_COMPARISON.sub("", text, count=1).strip() for text in _LITERAL.findall(call.args[index])]
            if any(piece and not _NUMBER.fullmatch(piece) and _DATE_TEXT.search(piece) for piece in pieces):
                return True
    return False


# IronCalc's own departures (regrade.engines.ironcalc.engine)
# A text with an empty piece between delimiters, or at either end: "a,,c", "x, , y", ",a"
AN_EMPTY_PIECE = re.compile(r"([,;|/\n-])\s*\1|^\s*[,;|/]|[,;|/]\s*$")
_FRACTION = re.compile(r"\?\s*/|/\s*\?")


def ignores_empty(call: Call) -> bool:
    """TEXTJOIN with ignore_empty written and not FALSE or 0."""
    return len(call.args) >= 3 and call.args[1] != "" and call.args[1].upper() not in ("FALSE", "0")


def sized(call: Call) -> bool:
    """OFFSET with a height or a width."""
    return len(call.args) >= 4 and any(arg != "" for arg in call.args[3:5])


def formats_a_fraction(call: Call) -> bool:
    """TEXT with a fraction format written in it (``"# ?/?"``)."""
    return len(call.args) >= 2 and any(_FRACTION.search(text) for text in _LITERAL.findall(call.args[1]))


# Hazards (regrade.engines.rules): ways of calling that bind every engine not cleared of them
HAZARDS = (
    *(Departure(name, any_call, "trigonometric-pole", beyond=POLE_MAGNITUDE) for name in ("TAN", "COT", "SEC", "CSC")),
    Departure("DATE", year_before_1901, "date-in-1900"),
    *(Departure(name, mode_of_a_scalar, "mode-of-a-scalar") for name in ("MODE", "MODE.SNGL", "MODE.MULT")),
    Departure("SUMPRODUCT", product_of_single_cells, "product-of-single-cells", only_on=0.0),
    Departure("TEXT", any_call, "text-exponent-with-literal", text_like=SCIENTIFIC_WITH_LITERAL),
    Departure("ADDRESS", any_call, "address-of-a-workbook", text_like=QUOTED_WORKBOOK),
    *(Departure(name, reads_a_date_from_text, "date-from-text") for name in TAKES_A_DATE + READS_TEXT_AS_DATE),
    *(Departure(name, criteria_with_a_date_text, "date-text-in-criteria") for name in CRITERIA),
    Departure("TEXTJOIN", empty_flag_left_out, "textjoin-empty-flag"),
    Departure("OFFSET", offsets_of_an_array, "offset-array"),
    *(Departure(name, columns_of_an_array, "lookup-column-array") for name in ("VLOOKUP", "HLOOKUP")),
    Departure("MATCH", approximate_match_over_computed_array, "approximate-match-over-computed-array"),
    *(Departure(name, sum_range_anchor, "sum-range-anchor") for name in ("SUMIF", "AVERAGEIF")),
    *(Departure(name, sum_range_of_another_shape, "sum-range-of-another-shape") for name in ("SUMIF", "AVERAGEIF")),
)
assert all(BY_ID[d.rule].hazard for d in HAZARDS), "every row here is a hazard of the rule table"


def hazards_binding(engine: str) -> tuple[Departure, ...]:
    """The hazard rows that bind ``engine``: every one whose rule does not list it as cleared."""
    return tuple(d for d in HAZARDS if engine in BY_ID[d.rule].engines)


# IronCalc and Formulon give #VALUE! for a TEXT format code they cannot read (LibreOffice: Err:502)
TEXT_FORMAT_REJECTED = Departure("TEXT", any_call, "text-format-rejected", only_on=ExcelError("#VALUE!"))


def abstain_on_departures(analysis: WorkbookAnalysis, values: WorkbookValues,
                          departures: Sequence[Departure]) -> WorkbookValues:
    """A graded formula cell with one of ``departures`` in its dependency cone abstains.

    Which departures a formula cell holds is worked out once per cell (:class:`_Held`): an
    open cone lists every formula cell of the workbook, for each graded cell."""
    if values.failure is not None or not values.formulas:
        return values
    possible = [d for d in departures if any(d.concerns(v) for v in values.cells.values())]
    texts = formula_texts(analysis.path, tuple(f"{d.function}(" for d in possible)) if possible else []
    present = [d for d in possible if any(_calls_so(d, text) for text in texts)]
    graph = analysis.graph() if present else None
    if graph is None:
        return values
    held = _Held(graph, present)
    for ref in values.formulas:
        sheet = resolve_sheet(ref.sheet, graph.sheets)
        relevant = [d for d in present if d.concerns(values.cells.get(ref))]
        if sheet is None or not relevant:
            continue
        found = next(((d, place) for place in graph.cells_in_cone([CellRef(sheet, ref.row, ref.column)])
                      for d in held.at(place) if d in relevant), None)
        if found is not None:
            departure, place = found
            values.cells[ref] = abstention(departure.rule, f"{departure.function} at {place}: {BY_ID[departure.rule].why}")
    return values


class _Held:
    """The departures each formula cell holds, worked out on first use."""

    def __init__(self, graph: FormulaGraph, departures: list[Departure]):
        self.graph, self.departures = graph, departures
        self._at: dict[CellRef, tuple[Departure, ...]] = {}

    def at(self, cell: CellRef) -> tuple[Departure, ...]:
        if cell not in self._at:
            text = self.graph.formulas[cell]
            self._at[cell] = tuple(d for d in self.departures if _calls_so(d, text)
                                   and (not d.plain_only or _plain(self.graph, cell)))
        return self._at[cell]


def _plain(graph: FormulaGraph, cell: CellRef) -> bool:
    """Whether the cell's formula is saved plain: openpyxl reads an array formula as no str."""
    return isinstance(graph.book[cell.sheet].cell(cell.row, cell.column).value, str)


def _calls_so(departure: Departure, formula: str) -> bool:
    if departure.function not in formula.upper():
        return False
    found = calls(formula)
    departing = [call for call in found if call.name == departure.function and departure.departs(call)]
    if departing and departure.except_in:
        inside = {_spelled(arg) for call in found if call.name in departure.except_in for arg in call.args}
        departing = [call for call in departing if _spelled(f"{call.name}({','.join(call.args)})") not in inside]
    return bool(departing)


def _spelled(text: str) -> str:
    """A call's text as compared: upper case, without spaces or the _xlfn. prefix."""
    return text.upper().replace(" ", "").replace("_XLFN.", "")
