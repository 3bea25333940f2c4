"""The function calls of a formula, each with its argument texts.

For checks that look at how a function is called (which arguments are references,
which are left out), not at what it computes. Built on openpyxl's tokenizer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openpyxl.formula.tokenizer import Token
from regrade.workbook.formula import bare_name, tokens as formula_tokens

QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")  # a quoted sheet name or a text literal
TAKES_A_DATE = ("DAY", "MONTH", "YEAR", "EOMONTH", "EDATE", "WEEKDAY", "WEEKNUM", "DAYS", "YEARFRAC")
READS_TEXT_AS_DATE = ("DATEVALUE", "TIMEVALUE")


_MULTI_CELL = re.compile(r"\$?[A-Za-z]{1,3}\$?\d+:\$?[A-Za-z]{1,3}\$?\d+|\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}\b|\$?\d+:\$?\d+")
_OPERATOR = re.compile(r"[&*+/=<>^-]")
_CALL = re.compile(r"[A-Za-z_][\w.]*\(")


def array_from_ranges(argument: str) -> bool:
    """Whether an argument computes an array from multi-cell ranges (A1:B9, A:B, 3:5) by an
    operator, with no function around them: ``A1:A9&B1:B9``, ``1/(A1:A3="a")``."""
    code = QUOTED.sub('""', argument)
    return bool(_MULTI_CELL.search(code) and _OPERATOR.search(code) and not _CALL.search(code))


_STRUCTURED = re.compile(r"[A-Za-z_][\w.]*\[")  # Table1[Qty], Table1[]: a table's columns
_REFERENCE = re.compile(r'(?:(?:""|[\w.]+)!)?\$?[A-Za-z]{0,3}\$?\d*(?::\$?[A-Za-z]{0,3}\$?\d*)?')  # '..'! blanked to ""


def array_expression(argument: str) -> bool:
    """Whether an argument computes something from multi-cell ranges or table columns rather
    than being one reference: ``1/(A1:A3="a")``, ``ISNUMBER(K3:K6)``, ``ROW(Table1[])/10^6``."""
    code = QUOTED.sub('""', argument).strip()
    if not (_MULTI_CELL.search(code) or _STRUCTURED.search(code)):
        return False
    return not _REFERENCE.fullmatch(code) and not (_STRUCTURED.match(code) and code.endswith("]") and "(" not in code)


def structured_reference(argument: str) -> bool:
    """Whether an argument holds a structured reference to a table (``Sales[Qty]``, ``Table1[]``)."""
    return bool(_STRUCTURED.search(QUOTED.sub('""', argument)))


def array_constant(argument: str) -> bool:
    """Whether an argument holds an array constant (``{"a","b"}``)."""
    return "{" in QUOTED.sub('""', argument)


@dataclass(frozen=True)
class Call:
    name: str  # upper case, without the _xlfn. and _xlws. prefixes
    args: tuple[str, ...]  # each argument's text, stripped; "" where one is written as nothing


def calls(formula: str) -> list[Call]:
    """Every function call of ``formula``, inner calls before the calls holding them; none
    for a formula the tokenizer cannot split."""
    tokens = formula_tokens(formula)
    if tokens is None:
        return []
    found: list[Call] = []
    frames: list[tuple[str | None, str, list[str]]] = []  # function (None: parentheses, array), opening text, args
    for token in tokens:
        if token.subtype == Token.OPEN and token.type in (Token.FUNC, Token.PAREN, Token.ARRAY):
            function = token.value[:-1].upper() if token.type == Token.FUNC else None
            frames.append((function, token.value, [""]))
            continue
        if token.subtype == Token.CLOSE and frames:
            function, opening, args = frames.pop()
            if function is not None:
                name = bare_name(function[function.rfind(":") + 1:])  # the tokenizer keeps A1: of A1:INDEX(
                found.append(Call(name, tuple(arg.strip() for arg in args)))
            text = opening + ",".join(args) + token.value
        elif token.type == Token.SEP and token.subtype == Token.ARG and frames and frames[-1][0] is not None:
            frames[-1][2].append("")
            continue
        else:
            text = token.value
        if frames:
            frames[-1][2][-1] += text
    return found


def reads_a_date_from_text(call: Call) -> bool:
    """DATEVALUE or TIMEVALUE, or a date function of a date joined from text
    (``EOMONTH(1&"Jan"&2016, 0)``): which texts are dates differs from engine to engine,
    and IronCalc and LibreOffice read fewer of them than Excel ("1Jan2016", "9 Aug 2021")."""
    if call.name in READS_TEXT_AS_DATE:
        return True
    return call.name in TAKES_A_DATE and bool(call.args) and "&" in QUOTED.sub("", call.args[0])
