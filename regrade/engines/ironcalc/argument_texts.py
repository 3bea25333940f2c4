"""What the bridge reads from an argument's text before evaluating it: a reference, a literal,
an expression, one value whatever the cells hold, an OFFSET of an array."""

from __future__ import annotations

import re

from openpyxl.formula.tokenizer import Token

from regrade.workbook.calls import QUOTED, Call, array_expression, calls
from regrade.workbook.formula import bare_name, call_pattern, tokens as formula_tokens

_OFFSET_CALL = call_pattern("OFFSET")




REFERENCE = re.compile(
    r"^(?:(?P<sheet>'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?(?P<range>\$?[A-Z]{1,3}\$?\d*(?::\$?[A-Z]{1,3}\$?\d*)?)$"
)


NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


_SINGLE_CELL = re.compile(r"(?:(?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?\$?[A-Za-z]{1,3}\$?\d+")


def offset_of_an_array(text: str) -> Call | None:
    """The call, when an argument is one OFFSET call with an array of offsets or sizes (constant or
    computed from ranges: ``OFFSET(A1, ROW(A1:A3) - 1, 0)``)."""
    if not _OFFSET_CALL.match(text) or not text.endswith(")"):
        return None
    found = calls(text)
    call = found[-1] if found else None  # the outermost call comes last
    if call is None or call.name != "OFFSET" or not 3 <= len(call.args) <= 5:
        return None
    if _OFFSET_CALL.sub("", text, count=1).replace(" ", "") != ",".join(call.args).replace(" ", "") + ")":
        return None  # OFFSET(...) is not the whole argument (OFFSET(...)+1)
    return call if any(a.startswith("{") or array_expression(a) for a in call.args[1:]) else None


def without_intersection(text: str) -> str:
    parts = re.split(r'("(?:[^"]|"")*")', text)
    return "".join(part if index % 2 else re.sub(r"(?<![A-Za-z0-9_.])@", "", part) for index, part in enumerate(parts))


def unspaced(text: str) -> str:
    """The text without spaces, except inside quotes ('My sheet'!A1, "a b")."""
    return "".join(part if index % 2 else part.replace(" ", "")
                   for index, part in enumerate(re.split(f"({QUOTED.pattern})", text)))


# functions that give one value for arguments that are one value each
_SCALAR_FUNCTIONS = frozenset({"TODAY", "NOW", "PI", "DATE", "TIME", "ABS", "INT", "ROUND", "LEN", "LEFT", "RIGHT",
                               "MID", "UPPER", "LOWER", "TRIM", "VALUE", "TEXT", "YEAR", "MONTH", "DAY", "EOMONTH",
                               "EDATE", "WEEKDAY", "CHAR", "CODE", "CONCATENATE", "IF", "IFERROR", "AND", "OR", "NOT"})


def plainly_scalar(text: str) -> bool:
    """Whether an expression is one value whatever the cells hold: single cells, literals,
    operators and :data:`_SCALAR_FUNCTIONS` only (``P$4&0``, ``TODAY()``, ``YEAR(A1)+1``); no
    range, name or array constant."""
    split = formula_tokens("=" + text)
    return split is not None and all(
        token.type != Token.ARRAY
        and not (token.type == Token.FUNC and token.subtype == Token.OPEN and bare_name(token.value[:-1]) not in _SCALAR_FUNCTIONS)
        and not (token.type == Token.OPERAND and (token.subtype == Token.RANGE and _SINGLE_CELL.fullmatch(token.value) is None
                                                 or token.value.startswith("{")))
        for token in split)


def is_reference(text: str) -> bool:
    return REFERENCE.match(unspaced(text)) is not None


def is_literal(text: str) -> bool:
    """A number (in parentheses, as the bridge writes a negative one), a text, an array or a logical value."""
    bare = text.strip().removeprefix("(").removesuffix(")").strip()
    return bool(NUMBER.match(bare)) or bare.startswith(('"', "{", "#")) or bare.upper() in ("TRUE", "FALSE")


def is_expression(text: str) -> bool:
    return not (NUMBER.match(text) or REFERENCE.match(unspaced(text)) or text.startswith('"') or text == "")
