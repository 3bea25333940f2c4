"""TEXTJOIN over arrays and TEXT of text (:mod:`regrade.engines.functions.text`)."""

from __future__ import annotations

from regrade.engines.functions.lookup import NotImplementedMode
from regrade.engines.functions.text import text_input
from regrade.engines.functions.values import general_text
from regrade.engines.ironcalc.adapters.elementwise import elementwise
from regrade.engines.ironcalc.adapters.results import Formula, literal
from regrade.engines.ironcalc.arguments import VALUE, Argument
from regrade.values import ExcelError


def textjoin_call(args: list[Argument]) -> object:
    """TEXTJOIN(delimiter, ignore_empty, text, ...) over arrays, which IronCalc has not implemented."""
    if len(args) < 3:
        return VALUE
    if len(args[0].rows) != 1 or len(args[0].rows[0]) != 1:
        raise NotImplementedMode("an array of delimiters")
    if args[1].omitted:
        raise NotImplementedMode("ignore_empty written as nothing")
    delimiter, ignore_empty = args[0].scalar, args[1].scalar
    for value in (delimiter, ignore_empty):
        if isinstance(value, ExcelError):
            return value
    if isinstance(ignore_empty, str):
        return VALUE
    skip = bool(ignore_empty)
    parts = [_as_text(delimiter)]
    for arg in args[2:]:
        for value in (v for row in arg.rows for v in row):
            if isinstance(value, ExcelError):
                return value
            text = _as_text(value)
            if not (skip and text == ""):
                parts.append(text)
    joined = parts[0].join(parts[1:])
    return VALUE if len(joined) > 32767 else joined


def text_call(args: list[Argument]) -> object:
    """TEXT(value, format) with text values read or shown as Excel does; what is left to
    format is given back to IronCalc's TEXT as literals."""
    if len(args) != 2:
        return VALUE
    if len(args[1].rows) != 1 or len(args[1].rows[0]) != 1:
        raise NotImplementedMode("an array of formats")
    values = elementwise(text_input)(args)
    grid = values if isinstance(values, list) else [[values]]
    if all(isinstance(v, (str, ExcelError)) for row in grid for v in row):
        return values
    return Formula(f"TEXT({literal(values)},{literal(args[1].scalar)})")


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        text = general_text(value)
        if text is None:
            raise NotImplementedMode("a number Excel writes in scientific notation")
        return text
    return str(value)
