"""Formulas rewritten before LibreOffice computes them, where it misses Excel's semantics.

Excel keeps 15 significant digits of MOD's dividend: ``MOD(1.000003, 1)`` is 3E-06 in
Excel and 2.9999999999752E-06 in IEEE arithmetic, which LibreOffice returns, so that
``INDEX(range, 10^6*MOD(x, 1))`` reads the row before (SpreadsheetBench task 42110). Each
``MOD(a, b)`` becomes ``ROUND(MOD(a, b), 14-INT(LOG10(ABS(a)+(a=0))))``: the same rounding
as the IronCalc bridge's MOD (:func:`engines.ironcalc_bridge._significant`), computed by
LibreOffice itself, element by element inside array formulas.
"""

from __future__ import annotations

from pathlib import Path

from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.worksheet.formula import ArrayFormula

from engines.sheets import formula_text, load_formula_book, mentions
from engines.tables import structured_rewrites

MAX_FORMULA_LENGTH = 8192  # Excel's limit; nested MODs grow threefold a level
Rewrite = tuple[str, int, int, str, str | None]  # sheet, row, column, formula, array formula range


def libreoffice_rewrites(path: Path) -> list[Rewrite]:
    """What LibreOffice computes instead of the file's formulas: structured references as
    ranges (:mod:`engines.tables`; in plain formulas, as LibreOffice reads them in array
    formulas itself, unless the array formula is rewritten for MOD anyway) and MOD with
    Excel's precision."""
    rewrites = {(sheet, row, column): (formula, None) for (sheet, row, column), formula in structured_rewrites(path).items()}
    resolved: dict | None = None  # with array formulas: read only if needed
    for sheet, row, column, formula, area in mod_rewrites(path):
        key = (sheet, row, column)
        if key in rewrites:
            formula = with_excel_mod(rewrites[key][0])
        elif area is not None and "[" in formula:
            if resolved is None:
                resolved = structured_rewrites(path, array_formulas=True)
            if key in resolved:
                formula = with_excel_mod(resolved[key])
        rewrites[key] = (formula, area)
    return [(sheet, row, column, formula, area) for (sheet, row, column), (formula, area) in rewrites.items()]


def mod_rewrites(path: Path) -> list[Rewrite]:
    """Every formula calling MOD, rewritten with Excel's precision; array formulas with
    their range. None when the file holds no MOD; never raises (a file openpyxl cannot
    read gets none)."""
    if not mentions(path, (b"MOD(",)):
        return []
    try:
        book = load_formula_book(path)
    except Exception:
        return []
    found: list[Rewrite] = []
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                formula = formula_text(cell.value)
                if formula is None or "MOD(" not in formula.upper():
                    continue
                rewritten = with_excel_mod(formula)
                if rewritten != formula and len(rewritten) <= MAX_FORMULA_LENGTH:
                    area = cell.value.ref if isinstance(cell.value, ArrayFormula) else None
                    found.append((sheet.title, cell.row, cell.column, rewritten, area))
    return found


def with_excel_mod(formula: str) -> str:
    """``formula`` with each MOD(a, b) rounded as Excel rounds it; unchanged when the
    tokenizer cannot split it or a MOD does not have two arguments."""
    try:
        tokens = Tokenizer(formula).items
    except Exception:
        return formula
    frames: list[tuple[bool, str, list[str]]] = [(False, "", [""])]  # is MOD, opening text, argument texts
    for token in tokens:
        if token.subtype == Token.OPEN and token.type in (Token.FUNC, Token.PAREN, Token.ARRAY):
            is_mod = token.type == Token.FUNC and token.value.upper() in ("MOD(", "_XLFN.MOD(")
            frames.append((is_mod, token.value, [""]))
            continue
        if token.subtype == Token.CLOSE and len(frames) > 1:
            is_mod, opening, args = frames.pop()
            if is_mod and len(args) != 2:
                return formula
            if is_mod:
                a, b = (arg.strip() for arg in args)
                text = f"ROUND(MOD({a},{b}),14-INT(LOG10(ABS({a})+(({a})=0))))"
            else:
                text = opening + ",".join(args) + token.value
        elif token.type == Token.SEP and token.subtype == Token.ARG and frames[-1][1].endswith("("):
            frames[-1][2].append("")
            continue
        else:
            text = token.value
        frames[-1][2][-1] += text
    return "=" + frames[0][2][0] if len(frames) == 1 else formula
