"""Formula rewrites that work around IronCalc 0.9.1 defects, each shown by a probe.

- The criteria functions (COUNTIF, SUMIF, AVERAGEIF, COUNTIFS, SUMIFS, AVERAGEIFS,
  MAXIFS, MINIFS) give ``#VALUE!`` when a range argument is a single cell
  (``=COUNTIF(A1,"a*")``), which Excel accepts; ``A1:A1`` works, so single cells in
  range positions are widened to that.
"""

from __future__ import annotations

import re

from openpyxl.formula.tokenizer import Token, Tokenizer

# function -> which arguments (0-based) are ranges; None: every even one (COUNTIFS pairs)
_RANGE_ARGUMENTS: dict[str, set[int] | None] = {
    "COUNTIF": {0}, "SUMIF": {0, 2}, "AVERAGEIF": {0, 2}, "COUNTIFS": None,
    "SUMIFS": {0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29},
    "AVERAGEIFS": {0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29},
    "MAXIFS": {0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29},
    "MINIFS": {0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29},
}
_MENTIONS = re.compile(r"(?:COUNT|SUM|AVERAGE|MAX|MIN)IFS?\(", re.IGNORECASE)
_SINGLE_CELL = re.compile(r"^(?P<prefix>(?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?(?P<cell>\$?[A-Z]{1,3}\$?\d+)$")


def widen_criteria_ranges(formula: str) -> str:
    """``=COUNTIF(A1,"a")`` as ``=COUNTIF(A1:A1,"a")``; other formulas unchanged."""
    if not _MENTIONS.search(formula):
        return formula
    try:
        tokens = Tokenizer(formula).items
    except Exception:
        return formula
    stack: list[list] = []  # [function name or None, argument index, tokens in this argument]
    changed = False
    for token in tokens:
        if token.subtype == Token.OPEN and token.type in (Token.FUNC, Token.PAREN, Token.ARRAY):
            name = token.value[:-1].upper().removeprefix("_XLFN.") if token.type == Token.FUNC else None
            stack.append([name, 0, []])
            continue
        if token.subtype == Token.CLOSE and stack:
            changed |= _widen(stack.pop())
            continue
        if token.type == Token.SEP and token.subtype == Token.ARG and stack and stack[-1][0] is not None:
            changed |= _widen(stack[-1])
            stack[-1][1] += 1
            stack[-1][2] = []
            continue
        if stack:
            stack[-1][2].append(token)
    return "=" + "".join(t.value for t in tokens) if changed else formula


def _widen(frame: list) -> bool:
    name, index, argument = frame
    if name not in _RANGE_ARGUMENTS:
        return False
    positions = _RANGE_ARGUMENTS[name]
    if not (index % 2 == 0 if positions is None else index in positions):
        return False
    operands = [t for t in argument if t.type != Token.WSPACE]
    if len(operands) != 1 or operands[0].type != Token.OPERAND or operands[0].subtype != Token.RANGE:
        return False
    match = _SINGLE_CELL.match(operands[0].value)
    if not match:
        return False
    operands[0].value = f"{match.group('prefix') or ''}{match.group('cell')}:{match.group('cell')}"
    return True
