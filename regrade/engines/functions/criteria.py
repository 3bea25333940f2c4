"""Excel's criteria (COUNTIF, COUNTIFS, SUMIF(S), AVERAGEIF(S), MAXIFS, MINIFS), for engines
that get them wrong: IronCalc counts only text cells as unequal to a text criterion, and
does not apply COUNTIF over an array of criteria.

``COUNTIF(B$10:B11, Table1[])`` inside an array formula counts, for each criterion,
the cells of the range that meet it (SpreadsheetBench task 42110 lists the names not
yet listed this way); IronCalc 0.9.1 and LibreOffice 7.4 use only the first one.

A criterion is a value or a text with an optional operator (``=``, ``<>``, ``<``,
``<=``, ``>``, ``>=``):

- a number matches equal numbers, and text that reads as that number;
- ``"a*"`` matches text case-insensitively, ``*`` any run, ``?`` one character, ``~``
  escaping them; ``"<>a"`` matches every cell that ``"a"`` does not, blanks included;
- ``""`` matches blank cells and empty text, ``"="`` blank cells only, ``"<>"`` every
  cell that is not blank;
- ``"<5"`` compares numbers, ``"<b"`` compares text (case-insensitively), never across types;
- ``TRUE``/``FALSE`` match logical values; an error value matches the same error;
- an empty cell as the criterion is 0.

A criterion regrade does not read with confidence (a date or time written as text,
such as ``"<1/1/2024"``) raises :class:`NotImplementedMode`.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any, Callable, Iterable

from regrade.values import ExcelError
from regrade.engines.functions.lookup import NotImplementedMode, wildcard_pattern
from regrade.engines.functions.values import as_number

_OPERATOR = re.compile(r"^(<=|>=|<>|=|<|>)?(.*)$", re.DOTALL)
_DATE_LIKE = re.compile(r"^\d{1,4}[-/.]\d{1,2}([-/.]\d{1,4})?$|:")
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def countif(cells: Iterable[object], criterion: object) -> float | ExcelError:
    """How many of ``cells`` meet ``criterion``."""
    if isinstance(criterion, list):
        raise NotImplementedMode("an array criterion for one count")
    return conditional("COUNT", [(list(cells), criterion)], None)


def _criterion(criterion: object) -> Callable[[object], bool]:
    if criterion is None:  # "a reference to an empty cell" is 0 (Microsoft's COUNTIFS documentation)
        criterion = 0.0
    if isinstance(criterion, ExcelError):
        return lambda value: value == criterion
    if isinstance(criterion, bool):
        return lambda value: isinstance(value, bool) and value == criterion
    if isinstance(criterion, (int, float)):
        return _numeric("=", float(criterion), text_numbers=True)
    text = str(criterion)
    op, operand = _OPERATOR.match(text).groups()  # type: ignore[union-attr]
    op = op or "="
    if operand == "":
        if op == "=":
            return (lambda value: value is None) if text == "=" else (lambda value: value is None or value == "")
        if op == "<>":
            return lambda value: value is not None
        return lambda value: False
    if _DATE_LIKE.search(operand):
        raise NotImplementedMode("a date or time written as text in a criterion")
    number = as_number(operand)
    if number is not None:
        return _numeric(op, number, text_numbers=op in ("=", "<>"))
    if operand.upper() in ("TRUE", "FALSE") and op in ("=", "<>"):
        flag = operand.upper() == "TRUE"
        return lambda value: (isinstance(value, bool) and value == flag) == (op == "=")
    if op in ("=", "<>"):
        pattern = wildcard_pattern(operand)
        return lambda value: (isinstance(value, str) and pattern.fullmatch(value) is not None) == (op == "=")
    compare, folded = _COMPARE[op], operand.casefold()
    return lambda value: isinstance(value, str) and compare(value.casefold(), folded)


def _numeric(op: str, number: float, text_numbers: bool) -> Callable[[object], bool]:
    compare = _COMPARE[op]

    def test(value: object) -> bool:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return compare(float(value), number)
        if text_numbers and isinstance(value, str):
            read = as_number(value)
            if read is not None:
                return compare(read, number)
        return op == "<>"  # text, blanks, logicals and errors are "not equal" to a number

    return test


def conditional(function: str, pairs: list[tuple[list[object], object]], values: list[object] | None) -> float | ExcelError:
    """COUNTIFS, SUMIFS, AVERAGEIFS, MAXIFS or MINIFS (``function``: COUNT, SUM, AVERAGE, MAX, MIN)
    over cells given flat, each criteria range with its criterion; ``values`` is the range summed,
    averaged or searched (None for COUNT). Text, logical values and blanks there are skipped;
    an error in a matching row is the result."""
    tests = [(cells, _criterion(criterion)) for cells, criterion in pairs]
    size = len(values) if values is not None else len(pairs[0][0])
    if any(len(cells) != size for cells, _ in pairs):
        return ExcelError("#VALUE!")
    rows = [i for i in range(size) if all(test(cells[i]) for cells, test in tests)]
    if function == "COUNT":
        return float(len(rows))
    assert values is not None
    picked = [values[i] for i in rows]
    error = next((v for v in picked if isinstance(v, ExcelError)), None)
    if error is not None:
        return error
    numbers = [float(v) for v in picked if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if function == "SUM":
        return math.fsum(numbers)
    if function == "AVERAGE":
        return math.fsum(numbers) / len(numbers) if numbers else ExcelError("#DIV/0!")
    if function in ("MAX", "MIN"):
        return (max if function == "MAX" else min)(numbers) if numbers else 0.0
    raise ValueError(f"no conditional {function}")
