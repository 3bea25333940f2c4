"""Functions IronCalc lacks or gets wrong, computed in Python from arguments IronCalc evaluates.

======================  ===========================================================
AGGREGATE               IronCalc lacks it (:mod:`regrade.engines.functions.aggregate`)
SUBTOTAL 110 and 111    IronCalc counts hidden rows in them
SUBTOTAL 1-11 where a   IronCalc counts the rows a filter hides, which every SUBTOTAL
filter hides rows       skips (it counts rows hidden by hand, as Excel does in 1-11)
SUBTOTAL over OFFSET    OFFSET with an array of offsets or sizes (``OFFSET(A1, ROW(A1:A9)
of an array             - 1, 0)``) is one reference per element in Excel, and SUBTOTAL
                        one value per reference; IronCalc takes the first element
XLOOKUP, XMATCH         IronCalc gives ``#VALUE!`` for a two-dimensional return
                        array and misses wildcard matches over computed arrays and
                        XMATCH of an array of values
                        (:mod:`regrade.engines.functions.lookup`)
LOOKUP                  IronCalc misses ``LOOKUP(2, 1/(condition), result)`` and
                        answers 0 over a range ending in empty cells (``LOOKUP(9^9, D1:E1)``)
SUM, AVERAGE, MIN, MAX, IronCalc mishandles an array computed inside an array
COUNT, SMALL, LARGE     formula (``AVERAGE(IF(A2:A9=x, B2:E9))``); bridged only there,
                        over such an argument; SMALL and LARGE also over an array of k
ISNUMBER, ISERR, ISNA,  IronCalc does not apply them element by element over an
the other IS functions, array; bridged where an array may reach them: in an array
N, NOT, MOD, MATCH      formula or inside SUMPRODUCT, AGGREGATE, LOOKUP, MMULT or INDEX's
                        first argument (MOD in every array formula, to Excel's 15
                        significant digits)
COUNTIF(S), SUMIF(S),   IronCalc counts only text cells as unequal to a text criterion
AVERAGEIF(S), MAXIFS,   (``"<>x"`` skips numbers and blanks) and uses only the first of an
MINIFS                  array of criteria: bridged for such criteria
                        (:mod:`regrade.engines.functions.criteria`)
INDEX at one end of a   IronCalc's INDEX gives no reference: ``SUM(A1:INDEX(A:A, n))`` is
range                   ``#VALUE!``; regrade writes the cell INDEX points at (an error
                        at either end is the whole range's value)
YEAR, MONTH, DAY,       IronCalc dates serials below 61 one day off and gives
EOMONTH, EDATE          ``#NUM!`` for 0, an empty cell (:mod:`regrade.engines.functions.dates`)
TEXT of text            IronCalc returns text unchanged: numeric text is not read as its
                        number, the format's text section is not applied; regrade does
                        both and leaves the numbers for IronCalc to format
                        (:mod:`regrade.engines.functions.text`)
======================  ===========================================================

Every formula holding such a call is resolved innermost call first, all formulas at
once, in *rounds*: the innermost bridged call of each formula is taken and its
arguments are evaluated by IronCalc on a throw-away copy of the model. A plain
reference is read cell by cell (with its hidden rows and nested SUBTOTAL/AGGREGATE
cells, which AGGREGATE's options may skip). Any other expression is entered in a
scratch cell right of the sheet's used range, in the caller's row (so ``ROW()``
still means the caller's row): one evaluation sizes every expression with
``ROWS``/``COLUMNS``, a second computes them as array formulas of that size.
Identical expressions that do not depend on where they stand are computed once.
Python then computes each call and writes its result into the formula: the
reference XLOOKUP returns when its return array is a reference (as Excel does), a
literal otherwise.

A call whose arguments regrade cannot take (a binary search, an array lookup value,
an array too large) is left to IronCalc; a SUBTOTAL so left, whose IronCalc value is wrong
there, is reported with the skipped cells. *Passes* repeat the whole resolution
until no formula changes, so a call that reads another bridged cell converges. A
chain too long for that (task 42110: each of 45 rows lists the names the rows above
have not) is resolved one dependency level at a time, in the order of the formula
graph, and one more pass checks that nothing changes. A workbook that does not
settle keeps its original formulas.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping

from openpyxl.formula.tokenizer import Token
from openpyxl.utils.cell import get_column_letter, range_boundaries

from regrade.values import ExcelError
from regrade.workbook.calls import QUOTED, Call, array_expression, calls
from regrade.engines.functions.aggregate import Item, aggregate
from regrade.engines.functions.criteria import conditional
from regrade.engines.functions.dates import day, edate, eomonth, month, year
from regrade.engines.functions.lookup import NA, NotImplementedMode, Vector, lookup, lookup_in, xlookup, xmatch
from regrade.engines.functions.text import text_input
from regrade.engines.functions.values import as_number, general_text
from regrade.engines.readings import unknown_functions
from regrade.workbook.formula import bare_name, MAX_COLUMNS, MAX_ROWS, tokens as formula_tokens

MAX_PASSES = 6
MAX_LEVELS = 100
MAX_ROUNDS = 20
MAX_ARRAY_CELLS = 200_000
VALUE = ExcelError("#VALUE!")
_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:aggregate|subtotal|xlookup|xmatch|lookup|sum|average|min|max|count|small|large"
    r"|is[a-z]+|n|not|mod|match|countifs?|sumifs?|averageifs?|maxifs|minifs|year|month|day|eomonth|edate|textjoin|text)\(",
    re.IGNORECASE,
)
_INDEX_AS_REFERENCE = re.compile(r"(?:[:]\s*(?:_xlfn\.)?index\(|index\(.*\)\s*:)", re.IGNORECASE)  # A1:INDEX(...)
_SUBTOTAL_BY_IRONCALC = re.compile(r"\s*(?:10[1-9]|[1-9]|1[01])\s*")  # IronCalc's own are right (1-11: unfiltered)
_OFFSET_CALL = re.compile(r"(?:_xlfn\.)?OFFSET\(", re.IGNORECASE)
_REFERENCE = re.compile(
    r"^(?:(?P<sheet>'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?(?P<range>\$?[A-Z]{1,3}\$?\d*(?::\$?[A-Z]{1,3}\$?\d*)?)$"
)
_POSITIONAL = re.compile(r"(?:ROW|COLUMN)\(\s*\)|\b(?:CELL|INDIRECT|OFFSET)\(", re.IGNORECASE)
_WHOLE_SHEET = re.compile(r"(!|[(,=+\-*/&^<>])\s*:(?=\s*[,)])")  # a bare ":" where a reference stands
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_SINGLE_CELL = re.compile(r"(?:(?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?\$?[A-Za-z]{1,3}\$?\d+")

ModelCell = tuple[int, int, int]  # a cell of an IronCalc model: sheet index, row, column


@dataclass
class Argument:
    """One evaluated argument: its values as rows, and where a reference came from."""

    rows: list[list[object]]
    hidden: list[bool] = field(default_factory=list)  # per row, references only
    filtered: list[bool] = field(default_factory=list)  # per row: hidden by a filter (references only)
    nested: list[list[bool]] = field(default_factory=list)  # per cell: a SUBTOTAL/AGGREGATE formula
    reference: tuple[int, int, int, int, int] | None = None  # sheet, min_row, min_col, max_row, max_col
    omitted: bool = False  # written as nothing, as in XLOOKUP(a, b, c, , 2)
    references: list[list[Argument | ExcelError]] | None = None  # OFFSET of an array: one reference per element

    @property
    def scalar(self) -> object:
        return self.rows[0][0] if len(self.rows) == 1 and len(self.rows[0]) == 1 else VALUE

    def items(self, filtered_only: bool = False) -> list[Item]:
        """Its values; with ``filtered_only``, only rows a filter hides are marked hidden (SUBTOTAL 1-11)."""
        flags = self.nested or [[False] * len(r) for r in self.rows]
        hidden = (self.filtered if filtered_only else self.hidden) or [False] * len(self.rows)
        return [Item(v, hidden=hidden[i], nested=flags[i][j]) for i, row in enumerate(self.rows) for j, v in enumerate(row)]


@dataclass
class _Call:
    """The innermost bridged call of one cell's formula."""

    cell: ModelCell
    function: str
    tokens: list[Token]
    start: int
    end: int
    args: list[str]
    lead: str = ""  # what the tokenizer put before the name: "A1:" of A1:INDEX(...), ":" of INDEX(...):INDEX(...)

    def replaced(self, text: str, tokens: dict[str, list[Token]]) -> str:
        """The formula with this call replaced by ``text``; its tokens are put in ``tokens``
        (re-reading a formula holding a long array literal is the bridge's largest cost)."""
        start, end, lead = self.start, self.end, self.lead
        if self.function == "INDEX":  # an error at either end of a range is the range's value: SUM(#N/A:B5) is #N/A
            before = self.tokens[start - 1].value if lead == ":" and start > 0 else ""
            after = self.tokens[end + 1] if end + 1 < len(self.tokens) else None
            if before.startswith("#"):  # the near end, resolved before, is an error
                start, lead, text = start - 1, "", before
            elif text.startswith("#"):
                start, lead = (start - 1 if lead == ":" else start), ""
                if after is not None and after.type == Token.OPERAND and after.value.startswith(":"):
                    end += 1  # INDEX(...):B5: the far end goes too
        replacement = Token(lead + text, Token.OPERAND, Token.RANGE)
        spliced = self.tokens[:start] + [replacement] + self.tokens[end + 1 :]
        formula = "=" + "".join(t.value for t in spliced)
        tokens[formula] = spliced
        return formula


@dataclass
class Bridged:
    """What the bridge did to a model."""

    originals: dict[ModelCell, str]  # each cell it rewrote: the cell's original formula
    skipped: dict[ModelCell, str]  # cells it should have computed but left to IronCalc: the function
    settled: bool = True  # False: it gave up, every cell it found is left to IronCalc


@dataclass
class _Context:
    """What every resolution of one model shares."""

    array_cells: Collection[ModelCell]  # the cells holding array formulas
    filtered_rows: Mapping[int, frozenset[int]]  # per sheet index: the rows a filter hides
    subtotal_cells: set[ModelCell] = field(default_factory=set)  # SUBTOTAL/AGGREGATE formulas, which callers may skip
    refused: set[ModelCell] = field(default_factory=set)  # cells holding a SUBTOTAL the last resolution could not compute

    @property
    def filtering(self) -> bool:
        return any(self.filtered_rows.values())


def bridge_functions(model: Any, array_cells: Collection[ModelCell] = frozenset(), only_missing: bool = False,
                     order: Callable[[list[ModelCell]], list[list[ModelCell]] | None] | None = None,
                     filtered_rows: Mapping[int, frozenset[int]] | None = None) -> Bridged:
    """Compute every bridged call into the model's formulas.

    ``array_cells`` are the cells holding array formulas (:func:`regrade.workbook.sheets.array_formula_cells`).
    With ``only_missing``, only the functions IronCalc lacks are bridged, not those it gets
    wrong in places (for workbooks so slow to evaluate that the bridge's extra evaluations
    would not fit in the time limit). ``order`` puts bridged cells in dependency levels
    (:meth:`regrade.workbook.cones.FormulaGraph.dependency_levels`), for chains too long to settle
    in :data:`MAX_PASSES` passes. The model must be evaluated (its copies keep its values).
    ``filtered_rows`` are, per sheet index, the rows a filter hides
    (:class:`regrade.workbook.sheets.HiddenRows`): where there are any, every SUBTOTAL is bridged.
    The cells left to IronCalc (for time, because they did not settle, because the call reads a
    LET or LAMBDA name, which means nothing outside the formula, or a SUBTOTAL the bridge could
    not compute) are reported as skipped: the caller abstains on what depends on them.
    """
    context = _Context(array_cells, filtered_rows or {})
    originals: dict[ModelCell, str] = {}
    functions: dict[ModelCell, str] = {}  # the bridged function of each cell found
    for sheet, row, column in model.get_all_cells():
        formula = _repair_rendering(model.get_cell_formula(sheet, row, column))
        cell = (sheet, row, column)
        if not formula or not (_CANDIDATE.search(formula) or _INDEX_AS_REFERENCE.search(formula)):
            continue
        if set(unknown_functions(formula)) - _FUNCTIONS.keys():  # those IronCalc lacks stay, to abstain on
            if context.filtering and _calls_subtotal(formula):
                functions[cell] = "SUBTOTAL"  # ... and a SUBTOTAL there counts the rows a filter hides
        else:
            call = _innermost(cell, formula, context)
            if call is not None:
                functions[cell] = call.function
                if (not only_missing or _holds_missing(formula)) and not _reads_local_names(call, formula):
                    originals[cell] = formula
    skipped = {cell: function for cell, function in functions.items() if cell not in originals}
    if not originals:
        return Bridged({}, skipped)
    context.subtotal_cells = {cell for cell, text in originals.items() if _is_subtotal(text)}
    settled = _settle_in_passes(model, originals, context)
    if settled is None and order is not None and (levels := order(sorted(originals))) is not None:
        _write(model, originals)
        settled = _settle_by_level(model, originals, context, levels)
    if settled is None:  # did not settle: give up honestly
        _write(model, originals)
        return Bridged({}, functions, settled=False)
    skipped.update({cell: "SUBTOTAL" for cell in context.refused})
    return Bridged({cell: originals[cell] for cell in originals if settled[cell] != originals[cell]}, skipped)


def _settle_in_passes(model: Any, originals: dict[ModelCell, str], context: _Context) -> dict[ModelCell, str] | None:
    """Resolve every formula, pass after pass, until a pass changes nothing; None if none does so in time."""
    previous: dict[ModelCell, str] = {}
    for _ in range(MAX_PASSES):
        current = _resolve_on_copy(model, originals, context)
        if current == previous:
            return current
        _write(model, current)
        previous = current
    return None


def _settle_by_level(model: Any, originals: dict[ModelCell, str], context: _Context,
                     levels: list[list[ModelCell]]) -> dict[ModelCell, str] | None:
    """Resolve the formulas one dependency level at a time, each from the settled levels before it;
    one pass over all of them then checks that nothing changes (None if something does)."""
    if len(levels) > MAX_LEVELS:
        return None
    settled: dict[ModelCell, str] = {}
    for level in levels:
        resolved = _resolve_on_copy(model, {cell: originals[cell] for cell in level}, context)
        _write(model, resolved)
        settled.update(resolved)
    return settled if _resolve_on_copy(model, originals, context) == settled else None


def _resolve_on_copy(model: Any, originals: dict[ModelCell, str], context: _Context) -> dict[ModelCell, str]:
    """The formulas with their bridged calls resolved against a copy of the model as it stands.
    The cells of ``originals`` holding a SUBTOTAL it could not compute are put in ``context.refused``
    (and taken out of it when it could): the last resolution of a cell has the say."""
    import ironcalc

    copy = ironcalc.load_from_bytes(model.to_bytes())  # the model is evaluated, and its copy keeps the values
    context.refused -= originals.keys()
    try:
        return _resolve_all(copy, originals, context)
    except Exception:  # a formula IronCalc will not take, no scratch room left...: leave them to IronCalc
        context.refused |= {cell for cell, text in originals.items() if _calls_subtotal(text)}
        return dict(originals)


def _write(model: Any, formulas: dict[ModelCell, str]) -> None:
    for (sheet, row, column), text in formulas.items():
        model.update_cell_with_formula(sheet, row, column, text)
    model.evaluate()


def _resolve_all(copy: Any, originals: dict[ModelCell, str], context: _Context) -> dict[ModelCell, str]:
    """Every formula with its bridged calls replaced, innermost first, all formulas in step."""
    formulas = dict(originals)
    open_cells = set(formulas)
    tokens: dict[str, list[Token]] = {}
    for _ in range(MAX_ROUNDS):
        calls = [c for c in (_innermost(cell, formulas[cell], context, tokens) for cell in sorted(open_cells))
                 if c is not None]
        if not calls:
            break
        scratch = _Scratch(copy, context)
        planned = [(call, [scratch.plan(call.cell, text, call.function) for text in call.args]) for call in calls]
        scratch.evaluate()
        open_cells = set()
        # a call computed once per distinct function and arguments in a round: the same
        # MONTH(Data!B5:B3000) in a thousand formulas is one array to compute and to write out
        computed: dict[tuple, str | None] = {}
        for call, args in planned:
            key = (call.function, call.lead, call.cell[0], *args)
            if key not in computed:
                computed[key] = _compute(call, [scratch.argument(a) for a in args], copy)
            result = computed[key]
            if result is not None:
                formulas[call.cell] = call.replaced(result, tokens)
                open_cells.add(call.cell)
            elif call.function == "SUBTOTAL":  # IronCalc's own is wrong here: what depends on it abstains
                context.refused.add(call.cell)
    return formulas


def _repair_rendering(formula: str | None) -> str | None:
    """IronCalc prints a whole-sheet reference (``$1:$1048576``) as a bare ``:``, which it cannot
    read back; every formula the bridge rewrites is re-entered, so it is spelled out."""
    if not formula or ":" not in formula:
        return formula
    parts = re.split(r'("(?:[^"]|"")*")', formula)
    for index in range(0, len(parts), 2):  # outside string literals
        parts[index] = _WHOLE_SHEET.sub(r"\1$A$1:$XFD$1048576", parts[index])
    return "".join(parts)


def _holds_missing(formula: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?aggregate\(", formula, re.IGNORECASE) is not None


def _innermost(cell: ModelCell, formula: str, context: _Context,
               known: dict[str, list[Token]] | None = None) -> _Call | None:
    """The first bridged call of the formula that holds no other bridged call (``known``: tokens
    of formulas already read)."""
    in_array_formula = cell in context.array_cells
    if known is not None and formula in known:
        tokens = known[formula]
    else:
        split = formula_tokens(formula)
        if split is None:
            return None
        tokens = split
    stack: list[tuple[int, str, list[list[Token]], bool]] = []  # start, function, args, holds a bridged call
    for index, token in enumerate(tokens):
        if token.subtype == Token.OPEN and token.type in (Token.FUNC, Token.PAREN, Token.ARRAY):
            head = token.value[:-1] if token.type == Token.FUNC else ""
            name = bare_name(head[head.rfind(":") + 1 :])  # the tokenizer keeps A1: in A1:INDEX(
            stack.append((index, name, [[]], False))
            continue
        if token.subtype == Token.CLOSE and stack:
            start, name, args, holds = stack.pop()
            texts = ["".join(t.value for t in arg).strip() for arg in args]
            in_array = in_array_formula or any(n in _ARRAY_NATIVE or (n == "INDEX" and len(a) == 1) for _, n, a, _ in stack)
            if in_array:  # IronCalc marks ranges it would intersect implicitly with @: not in an array context
                texts = [_without_intersection(t) for t in texts]
            lead = tokens[start].value[: tokens[start].value.rfind(":") + 1]
            if name == "INDEX":  # bridged only as one end of a range (A1:INDEX(...)), which IronCalc cannot take
                after = tokens[index + 1].value if index + 1 < len(tokens) else ""
                bridged = bool(lead or after.startswith(":")) and 2 <= len(texts) <= 3 and _is_reference(texts[0])
            elif name == "SUBTOTAL":
                bridged = _subtotal_wanted(texts, context.filtering)
            else:
                bridged = name in _FUNCTIONS and _FUNCTIONS[name].wanted(texts, in_array)
            if bridged and not holds:
                return _Call(cell, name, tokens, start, index, texts, lead)
            if stack:
                s_start, s_name, s_args, s_holds = stack[-1]
                s_args[-1].extend(tokens[start : index + 1])
                stack[-1] = (s_start, s_name, s_args, s_holds or holds or bridged)
            continue
        if token.type == Token.SEP and token.subtype == Token.ARG and stack and tokens[stack[-1][0]].type == Token.FUNC:
            stack[-1][2].append([])
        elif stack:
            stack[-1][2][-1].append(token)
    return None


def _subtotal_wanted(args: list[str], filtering: bool) -> bool:
    """SUBTOTAL 110 and 111 (IronCalc counts hidden rows), a function number IronCalc must compute,
    1-11 where a filter hides rows, and any over OFFSET of an array."""
    return len(args) >= 2 and (not _SUBTOTAL_BY_IRONCALC.fullmatch(args[0]) or filtering
                               or any(_offset_of_an_array(a) for a in args[1:]))


def _offset_of_an_array(text: str) -> Call | None:
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


def _reads_local_names(call: _Call, formula: str) -> bool:
    """Whether the call's arguments use a name bound by LET or LAMBDA: the bridge evaluates
    arguments in the cell's context, where such a name means nothing. LET binds its
    arguments 1, 3, 5, ... before its last; LAMBDA every argument before its last."""
    bound = {name.upper().removeprefix("_XLPM.") for c in calls(formula) if c.name in ("LET", "LAMBDA")
             for name in (c.args[:-1:2] if c.name == "LET" else c.args[:-1])}
    return bool(bound) and any(token.type == Token.OPERAND and token.subtype == Token.RANGE
                               and token.value.upper().removeprefix("_XLPM.") in bound
                               for token in call.tokens[call.start : call.end + 1])


class _Scratch:
    """Evaluates argument expressions on the copy, all at once, right of each sheet's used range."""

    def __init__(self, copy: Any, context: _Context):
        self.copy = copy
        self.subtotal_cells = context.subtotal_cells  # their formulas may already hold literals
        self.filtered_rows = context.filtered_rows
        self.names = [p["name"] for p in copy.get_worksheets_properties()]
        self.expressions: dict[tuple, dict] = {}  # key -> {"cell": ModelCell, "text": str, "rows", "columns", "at"}
        self.next_in_row: dict[tuple[int, int], int] = {}
        self.first_free = {s: copy.get_sheet_dimensions(s)[3] + 2 for s in range(len(self.names))}

    def plan(self, cell: ModelCell, text: str, function: str = "") -> tuple:
        """What the argument is: a literal, a reference, a key of an expression to evaluate, or
        (a SUBTOTAL's) an OFFSET of an array, with the plans of OFFSET's arguments."""
        if text == "":
            return ("omitted",)
        if function == "SUBTOTAL" and (offset := _offset_of_an_array(text)) is not None:
            return ("offset", self.plan(cell, offset.args[0]), tuple(self.plan(cell, a) for a in offset.args[1:]))
        if _NUMBER.match(text):
            return ("literal", float(text))
        if text.startswith('"') and text.endswith('"') and '"' not in text[1:-1].replace('""', ""):
            return ("literal", text[1:-1].replace('""', '"'))
        reference = _REFERENCE.match(_unspaced(text))
        if reference and (area := self._area(cell[0], reference)) is not None:
            return ("reference", area)
        key = (cell[0], text) if not _POSITIONAL.search(text) else (cell[0], text, cell[1], cell[2])
        if key not in self.expressions:
            sheet, row, _ = cell
            self.expressions[key] = {"cell": cell, "text": text, "size": (self._take(sheet, row), self._take(sheet, row))}
        return ("expression", key)

    def evaluate(self) -> None:
        if not self.expressions:
            return
        for entry in self.expressions.values():
            entry["sized"] = not _plainly_scalar(entry["text"])
        sized = [e for e in self.expressions.values() if e["sized"]]
        for entry in sized:
            sheet, row, _ = entry["cell"]
            rows_at, columns_at = entry["size"]
            self.copy.update_cell_with_formula(sheet, row, rows_at, f"=ROWS({entry['text']})")
            self.copy.update_cell_with_formula(sheet, row, columns_at, f"=COLUMNS({entry['text']})")
        if sized:  # an evaluation of the whole model: skipped when every expression is plainly one value
            self.copy.evaluate()
        for entry in self.expressions.values():
            sheet, row, _ = entry["cell"]
            rows, columns = (_read(self.copy, sheet, row, c) for c in entry["size"]) if entry["sized"] else (1.0, 1.0)
            if not isinstance(rows, float) or not isinstance(columns, float):
                rows = columns = 1.0  # a scalar expression
            entry["shape"] = (int(rows), int(columns))
        placed = [e for e in self.expressions.values() if e["shape"][0] * e["shape"][1] <= MAX_ARRAY_CELLS]
        for entry in placed:  # one-row results in their caller's row ...
            sheet, row, _ = entry["cell"]
            if entry["shape"][0] == 1:
                entry["at"] = (sheet, row, self._take(sheet, row, entry["shape"][1]), *entry["shape"])
        tall_from = dict(self.first_free)  # ... taller ones in columns of their own, right of all those
        for (sheet, _), column in self.next_in_row.items():
            tall_from[sheet] = max(tall_from[sheet], column)
        for entry in placed:
            sheet, row, _ = entry["cell"]
            rows, columns = entry["shape"]
            if rows > 1:
                top = row if row + rows - 1 <= MAX_ROWS else 1
                entry["at"] = (sheet, top, tall_from[sheet], rows, columns)
                tall_from[sheet] += columns
                if tall_from[sheet] - 1 > MAX_COLUMNS:
                    raise OverflowError("no scratch column left")
        for entry in placed:
            sheet, top, column, rows, columns = entry["at"]
            if rows == 1 and columns == 1:
                self.copy.update_cell_with_formula(sheet, top, column, f"={entry['text']}")
            else:
                self.copy.set_user_array_formula(sheet, top, column, columns, rows, f"={entry['text']}")
        self.copy.evaluate()

    def argument(self, plan: tuple) -> Argument | None:
        kind = plan[0]
        if kind == "offset":
            return self._offset(self.argument(plan[1]), [self.argument(p) for p in plan[2]])
        if kind == "omitted":
            return Argument([[None]], omitted=True)
        if kind == "literal":
            return Argument([[plan[1]]])
        if kind == "reference":
            return self._reference(plan[1])
        at = self.expressions[plan[1]].get("at")
        if at is None:
            return None
        sheet, top, column, rows, columns = at
        return Argument([[_read(self.copy, sheet, r, c) for c in range(column, column + columns)]
                         for r in range(top, top + rows)])

    def _take(self, sheet: int, row: int, width: int = 1) -> int:
        column = self.next_in_row.get((sheet, row), self.first_free[sheet])
        if column + width - 1 > MAX_COLUMNS:
            raise OverflowError("no scratch column left")
        self.next_in_row[(sheet, row)] = column + width
        return column

    def _area(self, home: int, match: re.Match[str]) -> tuple[int, int, int, int, int] | None:
        sheet = home
        if match.group("sheet"):
            name = match.group("sheet").strip("'").replace("''", "'")
            if name not in self.names:
                return None
            sheet = self.names.index(name)
        try:
            min_col, min_row, max_col, max_row = range_boundaries(match.group("range").replace("$", ""))
        except ValueError:
            return None
        _, used_rows, _, used_columns = self.copy.get_sheet_dimensions(sheet)
        whole_column, whole_row = min_row is None, min_col is None
        min_row, max_row = min_row or 1, max_row or MAX_ROWS
        min_col, max_col = min_col or 1, max_col or MAX_COLUMNS
        area = (sheet, min_row, min_col, max_row, max_col)
        # a whole column or row is read up to the used range (what lies beyond is empty)
        read_rows = min(max_row, used_rows) if whole_column else max_row
        read_cols = min(max_col, used_columns) if whole_row else max_col
        if (read_rows - min_row + 1) * (read_cols - min_col + 1) > MAX_ARRAY_CELLS:
            return None
        return area

    def _reference(self, area: tuple[int, int, int, int, int]) -> Argument:
        sheet, min_row, min_col, max_row, max_col = area
        _, used_rows, _, used_columns = self.copy.get_sheet_dimensions(sheet)
        if max_row == MAX_ROWS:  # a whole column: what lies below the used range is empty
            max_row = max(used_rows, min_row)
        if max_col == MAX_COLUMNS:
            max_col = max(used_columns, min_col)
        rows, hidden, nested, filtered = [], [], [], []
        by_filter = self.filtered_rows.get(sheet, frozenset())
        for r in range(min_row, max_row + 1):
            hidden.append(self.copy.is_row_hidden(sheet, r))
            filtered.append(r in by_filter)
            rows.append([_read(self.copy, sheet, r, c) for c in range(min_col, max_col + 1)])
            nested.append([(sheet, r, c) in self.subtotal_cells or _is_subtotal(self.copy.get_cell_formula(sheet, r, c))
                           for c in range(min_col, max_col + 1)])
        return Argument(rows, hidden, filtered, nested, reference=area)

    def _offset(self, base: Argument | None, parts: list[Argument | None]) -> Argument | None:
        """OFFSET(base, rows, columns, [height], [width]) over arrays: one reference per element, the
        arguments broadcast as in :func:`_elementwise` (an error element is that error); None where
        regrade cannot take it (the base is not a reference, the areas are too large to read)."""
        if base is None or base.reference is None or any(p is None for p in parts):
            return None
        grids = [p.rows for p in parts if p is not None]
        omitted = [p.omitted for p in parts if p is not None]
        height, width = max(len(g) for g in grids), max(len(g[0]) for g in grids)
        references: list[list[Argument | ExcelError]] = []
        read = 0
        for r in range(height):
            references.append([])
            for c in range(width):
                area = _offset_area(base.reference, [_broadcast(g, r, c) for g in grids], omitted)
                if not isinstance(area, ExcelError):
                    read += (area[3] - area[1] + 1) * (area[4] - area[2] + 1)
                    if read > MAX_ARRAY_CELLS:
                        return None
                references[-1].append(area if isinstance(area, ExcelError) else self._reference(area))
        return Argument([[None]], references=references)


@dataclass(frozen=True)
class _Function:
    wanted: Callable[[list[str], bool], bool]  # (argument texts, in an array formula) -> bridge this call?
    compute: Callable[[list[Argument]], object]


def _compute(call: _Call, args: list[Argument | None], copy: Any) -> str | None:
    """The text that replaces the call, or None to leave it to IronCalc."""
    if any(a is None for a in args):
        return None
    try:
        if call.function == "INDEX":
            result = _index_reference(args)  # type: ignore[arg-type]
        else:
            result = _FUNCTIONS[call.function].compute(args)  # type: ignore[arg-type]
    except NotImplementedMode:
        return None
    if result is None:
        return None
    if isinstance(result, _Formula):
        return result.text
    if isinstance(result, _Slice):
        if call.lead:  # the far end of a range is written without its sheet, which must be the caller's
            return result.render(copy, with_sheet=False) if result.area[0] == call.cell[0] else None
        return result.render(copy)
    return _literal(result)


def _index_reference(args: list[Argument]) -> object:
    """INDEX(reference, row, [column]) as a reference (row or column 0: the whole column or row)."""
    area = args[0].reference
    if area is None:
        return None
    sheet, min_row, min_col, max_row, max_col = area
    height, width = max_row - min_row + 1, max_col - min_col + 1
    numbers: list[int] = []
    for arg in args[1:]:
        number = 0.0 if arg.scalar is None else arg.scalar  # written as nothing, or an empty cell
        if isinstance(number, ExcelError):
            return number
        if not isinstance(number, float) or number < 0:
            return VALUE
        numbers.append(int(number))
    if len(numbers) == 1:  # INDEX(A1:A9, 3) is a row, INDEX(A1:E1, 3) a column; of a block, regrade is unsure
        if height > 1 and width > 1:
            return None
        row, column = (numbers[0], 1) if width == 1 else (1, numbers[0])
    else:
        row, column = numbers
    if row > height or column > width:
        return ExcelError("#REF!")
    top, bottom = (min_row, max_row) if row == 0 else (min_row + row - 1, min_row + row - 1)
    left, right = (min_col, max_col) if column == 0 else (min_col + column - 1, min_col + column - 1)
    return _Slice((sheet, top, left, bottom, right))


def _aggregate(args: list[Argument]) -> object:
    if len(args) < 3:
        return VALUE
    function, options = args[0].scalar, args[1].scalar
    for value in (function, options):
        if isinstance(value, ExcelError):
            return value
        if not isinstance(value, float):
            return VALUE
    assert isinstance(function, float) and isinstance(options, float)
    number = int(function)
    if number >= 14:
        if len(args) != 4:
            return VALUE
        k = args[3].scalar
        if isinstance(k, ExcelError):
            return k
        return aggregate(number, int(options), args[2].items(), k) if isinstance(k, float) else VALUE
    if any(a.reference is None for a in args[2:]):
        return VALUE  # functions 1-13 take references only
    return aggregate(number, int(options), [i for a in args[2:] for i in a.items()])


def _subtotal(args: list[Argument]) -> object:
    """SUBTOTAL(n, ref, ...) is AGGREGATE(n, 0, ref, ...) for n in 1-11, AGGREGATE(n - 100, 1, ...) for 101-111."""
    if len(args) < 2:
        return VALUE
    function = args[0].scalar
    if isinstance(function, ExcelError):
        return function
    if not isinstance(function, float) or int(function) not in (*range(1, 12), *range(101, 112)):
        return VALUE
    if any(a.references is not None for a in args[1:]):  # OFFSET of an array: one value per reference
        if len(args) != 2:
            raise NotImplementedMode("OFFSET of an array among other references")
        grid = args[1].references or []
        result = [[e if isinstance(e, ExcelError) else _subtotal([args[0], e]) for e in row] for row in grid]
        return result[0][0] if len(result) == 1 and len(result[0]) == 1 else result
    if any(a.reference is None for a in args[1:]):
        return VALUE  # SUBTOTAL takes references only
    number = int(function)
    # every SUBTOTAL skips the rows a filter hides and the cells that are subtotals themselves;
    # 101-111 also skip rows hidden by hand (support.microsoft.com: SUBTOTAL function)
    return aggregate(number % 100, 1, [i for a in args[1:] for i in a.items(filtered_only=number < 100)])


@dataclass(frozen=True)
class _Formula:
    """A formula text that replaces a call as it is."""

    text: str


@dataclass(frozen=True)
class _Slice:
    """Part of a reference: what XLOOKUP returns when its return array is a reference."""

    area: tuple[int, int, int, int, int]

    def render(self, copy: Any, with_sheet: bool = True) -> str:
        sheet, min_row, min_col, max_row, max_col = self.area
        name = copy.get_worksheets_properties()[sheet]["name"]
        start, end = f"${get_column_letter(min_col)}${min_row}", f"${get_column_letter(max_col)}${max_row}"
        quoted = "'" + name.replace("'", "''") + "'!" if with_sheet else ""
        return f"{quoted}{start}" + ("" if start == end else f":{end}")


def _mode(arg: Argument | None, default: int) -> int:
    if arg is None or arg.omitted:
        return default
    value = arg.scalar
    if not isinstance(value, float):
        raise NotImplementedMode("a mode that is not a number")
    return int(value)


def _xlookup(args: list[Argument]) -> object:
    if not 3 <= len(args) <= 6:
        return VALUE
    value, lookup, result = args[0], args[1], args[2]
    if len(value.rows) != 1 or len(value.rows[0]) != 1:
        raise NotImplementedMode("an array of lookup values")
    if isinstance(value.scalar, ExcelError):
        return value.scalar
    lookup, result = _same_length(lookup, result)
    if_not_found = NA if len(args) < 4 or args[3].omitted else args[3].scalar
    match_mode = _mode(args[4] if len(args) > 4 else None, 0)
    search_mode = _mode(args[5] if len(args) > 5 else None, 1)
    position = xmatch(value.scalar, lookup.rows, match_mode, search_mode)
    if isinstance(position, ExcelError):
        return if_not_found if position == NA else position
    found = xlookup(value.scalar, lookup.rows, result.rows, if_not_found, match_mode, search_mode)
    if isinstance(found, ExcelError) or result.reference is None:
        return found
    sheet, min_row, min_col, max_row, max_col = result.reference
    index = int(position) - 1
    by_rows = len(lookup.rows[0]) == 1
    if by_rows:
        return _Slice((sheet, min_row + index, min_col, min_row + index, max_col))
    return _Slice((sheet, min_row, min_col + index, max_row, min_col + index))


def _same_length(lookup: Argument, result: Argument) -> tuple[Argument, Argument]:
    """Whole columns (rows) are read up to the used range of their sheet: pad the shorter with blanks."""
    if lookup.reference is None or result.reference is None:
        return lookup, result
    if len(lookup.rows[0]) == 1 and lookup.reference[3] == result.reference[3] == MAX_ROWS:
        height = max(len(lookup.rows), len(result.rows))
        return _pad(lookup, height, None), _pad(result, height, None)
    if len(lookup.rows) == 1 and lookup.reference[4] == result.reference[4] == MAX_COLUMNS:
        width = max(len(lookup.rows[0]), len(result.rows[0]))
        return _pad(lookup, None, width), _pad(result, None, width)
    return lookup, result


def _pad(arg: Argument, height: int | None, width: int | None) -> Argument:
    rows = [row + [None] * ((width or len(row)) - len(row)) for row in arg.rows]
    rows += [[None] * len(rows[0]) for _ in range((height or len(rows)) - len(rows))]
    return Argument(rows, reference=arg.reference)


def _xmatch(args: list[Argument]) -> object:
    if not 2 <= len(args) <= 4:
        return VALUE
    match_mode = _mode(args[2] if len(args) > 2 else None, 0)
    search_mode = _mode(args[3] if len(args) > 3 else None, 1)
    vector = Vector.of(args[1].rows)  # its keys once, for every lookup value
    found = [[xmatch(value, vector if vector is not None else args[1].rows, match_mode, search_mode)
              for value in row] for row in args[0].rows]
    return found[0][0] if len(found) == 1 and len(found[0]) == 1 else found  # over an array of lookup values, an array


def _lookup(args: list[Argument]) -> object:
    if not 2 <= len(args) <= 3:
        return VALUE
    if len(args[0].rows) != 1 or len(args[0].rows[0]) != 1:
        raise NotImplementedMode("an array of lookup values")
    found = lookup(args[0].scalar, args[1].rows, args[2].rows if len(args) == 3 else None)
    if isinstance(found, ExcelError):
        return found
    position, answer = found
    result = args[2] if len(args) == 3 else None
    if result is not None and result.reference is not None:
        sheet, min_row, min_col, max_row, max_col = result.reference
        if min_col == max_col:
            return _Slice((sheet, min_row + position, min_col, min_row + position, min_col))
        return _Slice((sheet, min_row, min_col + position, min_row, min_col + position))
    return answer


def _textjoin(args: list[Argument]) -> object:
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


def _text(args: list[Argument]) -> object:
    """TEXT(value, format) with text values read or shown as Excel does; what is left to
    format is given back to IronCalc's TEXT as literals."""
    if len(args) != 2:
        return VALUE
    if len(args[1].rows) != 1 or len(args[1].rows[0]) != 1:
        raise NotImplementedMode("an array of formats")
    values = _elementwise(text_input)(args)
    grid = values if isinstance(values, list) else [[values]]
    if all(isinstance(v, (str, ExcelError)) for row in grid for v in row):
        return values
    return _Formula(f"TEXT({_literal(values)},{_literal(args[1].scalar)})")


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


def _over_array(number: int) -> Callable[[list[Argument]], object]:
    """SUM, AVERAGE ... of one array argument (SMALL and LARGE: and k, element by element over an
    array of k), as AGGREGATE ignoring nothing; COUNT, which counts numbers, ignores errors
    (COUNT(1/FREQUENCY(...)) counts the distinct values, task 57090)."""
    options = 6 if number == 2 else 4

    def compute(args: list[Argument]) -> object:
        items = [Item(v) for row in args[0].rows for v in row]
        if number >= 14:
            def one(k: object) -> object:
                return k if isinstance(k, ExcelError) else aggregate(number, options, items, k) if isinstance(k, float) else VALUE

            return _elementwise(one)([args[1]])
        return aggregate(number, options, items)

    return compute


def _array_argument(args: list[str], in_array_formula: bool, count: int) -> bool:
    """Inside an array formula, a call of ``count`` arguments whose first is computed (not a reference)."""
    return in_array_formula and len(args) == count and _is_expression(args[0])


def _array_k(args: list[str], in_array: bool) -> bool:
    """SMALL(array, {1;2;3}): k an array constant, or in an array context an expression or a range."""
    return len(args) == 2 and (args[1].startswith("{") or (in_array and (_is_expression(args[1]) or ":" in args[1])))


def _elementwise(function: Callable[..., object]) -> Callable[[list[Argument]], object]:
    """A scalar function applied element by element, arguments broadcast as Excel does
    (a single value or a single row/column stretches; positions beyond a shorter array are #N/A)."""

    def compute(args: list[Argument]) -> object:
        grids = [a.rows for a in args]
        height, width = max(len(g) for g in grids), max(len(g[0]) for g in grids)

        result = [[function(*(_broadcast(g, r, c) for g in grids)) for c in range(width)] for r in range(height)]
        return result[0][0] if height == width == 1 else result

    return compute


def _broadcast(grid: list[list[object]], r: int, c: int) -> object:
    """Element (r, c) of an array stretched as Excel does: a single row or column repeats; past a
    shorter array's end, #N/A."""
    r, c = (0 if len(grid) == 1 else r), (0 if len(grid[0]) == 1 else c)
    return grid[r][c] if r < len(grid) and c < len(grid[r]) else NA


def _offset_area(base: tuple[int, int, int, int, int], numbers: list[object],
                 omitted: list[bool]) -> tuple[int, int, int, int, int] | ExcelError:
    """The area OFFSET(base, rows, columns, [height], [width]) refers to: rows and columns moved (written
    as nothing or an empty cell: 0), height and width the base's when left out; past the sheet's
    edge or of size 0, #REF!. A number that is not a whole number, a negative size or a value that
    is not a number is left to IronCalc (regrade is unsure how Excel reads it)."""
    sheet, top, left, bottom, right = base
    whole: list[int | None] = []
    for position, value in enumerate(numbers):
        if isinstance(value, ExcelError):
            return value
        if position >= 2 and omitted[position]:
            whole.append(None)
        elif value is None:
            whole.append(0)
        elif isinstance(value, float) and value.is_integer():
            whole.append(int(value))
        else:
            raise NotImplementedMode("an OFFSET argument that is not a whole number")
    rows, columns = whole[0] or 0, whole[1] or 0
    height = whole[2] if len(whole) > 2 and whole[2] is not None else bottom - top + 1
    width = whole[3] if len(whole) > 3 and whole[3] is not None else right - left + 1
    if height < 0 or width < 0:
        raise NotImplementedMode("OFFSET of a negative size")
    first_row, first_column = top + rows, left + columns
    last_row, last_column = first_row + height - 1, first_column + width - 1
    if height == 0 or width == 0 or first_row < 1 or first_column < 1 or last_row > MAX_ROWS or last_column > MAX_COLUMNS:
        return ExcelError("#REF!")
    return (sheet, first_row, first_column, last_row, last_column)


def _mod(number: object, divisor: object) -> object:
    for value in (number, divisor):
        if isinstance(value, ExcelError):
            return value
    a, b = as_number(number), as_number(divisor)
    if a is None or b is None:
        return VALUE
    if b == 0:
        return ExcelError("#DIV/0!")
    return _significant(a - b * math.floor(a / b), a)


def _significant(result: float, operand: float) -> float:
    """``result`` to the 15 significant digits Excel keeps of ``operand``: the digits of a
    difference below that are floating-point noise (1.000003 is stored as 1.0000029999999999752,
    so 1.000003 - 1 is 2.9999999999752E-06 in IEEE arithmetic and 3E-06 in Excel)."""
    if operand == 0 or result == 0 or not math.isfinite(result):
        return result
    quantum = 10.0 ** (math.floor(math.log10(abs(operand))) - 14)
    return round(result / quantum) * quantum


def _not(value: object) -> object:
    if isinstance(value, ExcelError):
        return value
    number = as_number(value)
    return VALUE if number is None else number == 0


def _n(value: object) -> object:
    if isinstance(value, ExcelError):
        return value
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    return float(value) if isinstance(value, (int, float)) else 0.0


def _match(args: list[Argument]) -> object:
    """MATCH over each of an array of lookup values: exact (0, wildcards for text) and sorted (1, -1)."""
    if not 2 <= len(args) <= 3:
        return VALUE
    # an argument written as nothing is 0 (exact) in MATCH(x, range, ); only a missing one means 1
    mode = 0 if len(args) == 3 and args[2].omitted else _mode(args[2] if len(args) == 3 else None, 1)
    if mode not in (0, 1, -1):
        return VALUE
    table = args[1].rows
    vector = Vector.of(table)  # its keys once, for every lookup value

    def one(value: object) -> object:
        if isinstance(value, ExcelError):
            return value
        if mode == 0:
            wildcard = isinstance(value, str) and any(ch in value for ch in "*?~")
            return xmatch(value, vector or table, 2 if wildcard else 0)
        if mode == -1:
            raise NotImplementedMode("MATCH type -1 over an array")
        if vector is None:
            found = lookup(value, table, table)  # #VALUE! (an empty value: abstain)
        else:
            found = lookup_in(value, vector, vector.values)
        return found if isinstance(found, ExcelError) else float(found[0] + 1)

    return _elementwise(one)([args[0]])


# function -> (what it computes over the matching rows, the position of the range it computes
# over (None: it counts), the position of the first criteria range)
_CONDITIONAL: dict[str, tuple[str, int | None, int]] = {
    "COUNTIF": ("COUNT", None, 0), "COUNTIFS": ("COUNT", None, 0), "SUMIF": ("SUM", 2, 0), "AVERAGEIF": ("AVERAGE", 2, 0),
    "SUMIFS": ("SUM", 0, 1), "AVERAGEIFS": ("AVERAGE", 0, 1), "MAXIFS": ("MAX", 0, 1), "MINIFS": ("MIN", 0, 1),
}


def _conditional(name: str) -> Callable[[list[Argument]], object]:
    """COUNTIF(S), SUMIF(S), AVERAGEIF(S), MAXIFS, MINIFS with Excel's criteria (engines/functions/criteria.py),
    element by element over one array of criteria (each distinct criterion computed once: an array
    of a table's names repeats them)."""
    kind, values_at, first = _CONDITIONAL[name]

    def compute(args: list[Argument]) -> object:
        if name in ("SUMIF", "AVERAGEIF"):
            if len(args) not in (2, 3):
                return VALUE
            summed = args[2] if len(args) == 3 else args[0]
            if _shape(summed) != _shape(args[0]):
                raise NotImplementedMode("a range to sum of another size than the criteria range")
            values: Argument | None = summed
            ranges, criteria = [args[0]], [args[1]]
        else:
            pairs = args[first:]
            if len(pairs) < 2 or len(pairs) % 2:
                return VALUE
            values = args[values_at] if values_at is not None else None
            ranges, criteria = pairs[0::2], pairs[1::2]
        flat_values = [v for row in values.rows for v in row] if values is not None else None
        flat_ranges = [[v for row in r.rows for v in row] for r in ranges]
        arrays = [i for i, c in enumerate(criteria) if _shape(c) != (1, 1)]
        if len(arrays) > 1:
            raise NotImplementedMode("several arrays of criteria")

        results: dict[tuple[type, object], object] = {}

        def one(criterion_at_array: object) -> object:
            key = (type(criterion_at_array), criterion_at_array)
            if key not in results:
                chosen = [criterion_at_array if i in arrays else c.rows[0][0] for i, c in enumerate(criteria)]
                results[key] = conditional(kind, list(zip(flat_ranges, chosen)), flat_values)
            return results[key]

        return _elementwise(one)([criteria[arrays[0]]]) if arrays else one(None)

    return compute


def _shape(arg: Argument) -> tuple[int, int]:
    return len(arg.rows), len(arg.rows[0]) if arg.rows else 0


def _criteria_wanted(first: int) -> Callable[[list[str], bool], bool]:
    """A criteria call to bridge: a criterion IronCalc misreads ("<>text" counts only text), an array
    constant of criteria, or, in an array context, criteria that may be an array."""
    def wanted(args: list[str], in_array: bool) -> bool:
        criteria = args[first::2]
        return any(_not_equal_text(c) or c.startswith("{") or (in_array and (_is_expression(c) or ":" in c))
                   for c in criteria)

    return wanted


def _not_equal_text(text: str) -> bool:
    """``"<>a"`` or ``"<>"&...``: IronCalc counts only text cells unequal to a text criterion."""
    if text.startswith('"<>"&'):
        return True
    if not (text.startswith('"<>') and text.endswith('"')) or len(text) <= 4:
        return False
    return as_number(text[3:-1]) is None


def _array_position(args: list[str], in_array: bool, positions: tuple[int, ...] = (0,)) -> bool:
    """In an array context, a call whose scalar argument(s) may hold an array (an expression or a range)."""
    return in_array and any(i < len(args) and (_is_expression(args[i]) or ":" in args[i]) for i in positions)


def _date_call(count: int) -> Callable[[list[str], bool], bool]:
    """A date function of ``count`` arguments; outside array formulas, not over a range (Excel intersects it)."""
    return lambda args, in_array: len(args) == count and (in_array or ":" not in args[0])


def _without_intersection(text: str) -> str:
    parts = re.split(r'("(?:[^"]|"")*")', text)
    return "".join(part if index % 2 else re.sub(r"(?<![A-Za-z0-9_.])@", "", part) for index, part in enumerate(parts))


def _unspaced(text: str) -> str:
    """The text without spaces, except inside quotes ('My sheet'!A1, "a b")."""
    return "".join(part if index % 2 else part.replace(" ", "")
                   for index, part in enumerate(re.split(f"({QUOTED.pattern})", text)))


# functions that give one value for arguments that are one value each
_SCALAR_FUNCTIONS = frozenset({"TODAY", "NOW", "PI", "DATE", "TIME", "ABS", "INT", "ROUND", "LEN", "LEFT", "RIGHT",
                               "MID", "UPPER", "LOWER", "TRIM", "VALUE", "TEXT", "YEAR", "MONTH", "DAY", "EOMONTH",
                               "EDATE", "WEEKDAY", "CHAR", "CODE", "CONCATENATE", "IF", "IFERROR", "AND", "OR", "NOT"})


def _plainly_scalar(text: str) -> bool:
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


def _is_reference(text: str) -> bool:
    return _REFERENCE.match(_unspaced(text)) is not None


def _is_literal(text: str) -> bool:
    """A number (in parentheses, as the bridge writes a negative one), a text, an array or a logical value."""
    bare = text.strip().removeprefix("(").removesuffix(")").strip()
    return bool(_NUMBER.match(bare)) or bare.startswith(('"', "{", "#")) or bare.upper() in ("TRUE", "FALSE")


def _is_expression(text: str) -> bool:
    return not (_NUMBER.match(text) or _REFERENCE.match(_unspaced(text)) or text.startswith('"') or text == "")


# IronCalc mishandles arrays computed inside a formula (AVERAGE(IF(range=x, range)) ...); regrade
# evaluates such an argument as an array formula of its own, which IronCalc gets right, and
# does the arithmetic. LOOKUP takes arrays even outside array formulas.
_FUNCTIONS: dict[str, _Function] = {
    "AGGREGATE": _Function(lambda args, _: True, _aggregate),
    "SUBTOTAL": _Function(lambda args, _: not _SUBTOTAL_BY_IRONCALC.fullmatch(args[0]), _subtotal),
    "XLOOKUP": _Function(lambda args, _: True, _xlookup),
    "XMATCH": _Function(lambda args, _: True, _xmatch),
    # over a reference too: IronCalc answers 0 when the range ends in empty cells (LOOKUP(9^9, D1:E1), task 59160)
    "LOOKUP": _Function(lambda args, _: 2 <= len(args) <= 3, _lookup),
    "TEXTJOIN": _Function(lambda args, _: len(args) >= 3 and any(_is_expression(a) for a in args[2:]), _textjoin),
    # a range outside an array context is met by implicit intersection, which regrade leaves to IronCalc
    "TEXT": _Function(lambda args, in_array: len(args) == 2 and not _is_literal(args[0])
                      and (in_array or ":" not in args[0]), _text),
    **{name: _Function(lambda args, in_array: _array_argument(args, in_array, 1), _over_array(number))
       for name, number in (("AVERAGE", 1), ("COUNT", 2), ("MAX", 4), ("MIN", 5), ("SUM", 9))},
    # SMALL and LARGE also over an array of k, which IronCalc has not implemented (#N/IMPL!)
    **{name: _Function(lambda args, in_array: _array_argument(args, in_array, 2) or _array_k(args, in_array),
                       _over_array(number))
       for name, number in (("LARGE", 14), ("SMALL", 15))},
    # IronCalc does not apply these element by element over an array (ISNUMBER(SEARCH(x, A2:A9))
    # is FALSE): inside an array formula or an array-taking function, regrade does
    **{name: _Function(lambda args, in_array: len(args) == 1 and _array_position(args, in_array), _elementwise(test))
       for name, test in (
           ("ISNUMBER", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
           ("ISTEXT", lambda v: isinstance(v, str)),
           ("ISNONTEXT", lambda v: not isinstance(v, str)),
           ("ISBLANK", lambda v: v is None),
           ("ISLOGICAL", lambda v: isinstance(v, bool)),
           ("ISERROR", lambda v: isinstance(v, ExcelError)),
           ("ISERR", lambda v: isinstance(v, ExcelError) and v != NA),
           ("ISNA", lambda v: v == NA),
           ("N", _n),
           ("NOT", _not),
       )},
    # in array formulas always: also for Excel's 15 significant digits (MOD(1.000003, 1) is 3E-06, task 42110)
    "MOD": _Function(lambda args, in_array: len(args) == 2 and in_array, _elementwise(_mod)),
    "MATCH": _Function(lambda args, in_array: _array_position(args, in_array, (0, 1)), _match),
    **{name: _Function(_criteria_wanted(first + 1), _conditional(name)) for name, (_, _, first) in _CONDITIONAL.items()},
    # IronCalc dates serials below 61 (an empty cell is 0) from 1899-12-30: EOMONTH(0, 0) is #NUM!
    **{name: _Function(_date_call(count), _elementwise(function))
       for name, count, function in (("YEAR", 1, year), ("MONTH", 1, month), ("DAY", 1, day),
                                     ("EOMONTH", 2, eomonth), ("EDATE", 2, edate))},
}
# their arguments are arrays outside array formulas too, as is INDEX's first (INDEX(COUNTIF(B$1:B1, A1:A9), 0, 0))
_ARRAY_NATIVE = {"SUMPRODUCT", "AGGREGATE", "LOOKUP", "MMULT"}


def _calls_subtotal(formula: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?subtotal\(", formula, re.I) is not None


def _is_subtotal(formula: str | None) -> bool:
    return formula is not None and re.search(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:subtotal|aggregate)\(", formula, re.I) is not None


def _read(model: Any, sheet: int, row: int, column: int) -> object:
    import ironcalc

    if model.is_empty_cell(sheet, row, column):
        return None
    kind = model.get_cell_type(sheet, row, column)
    value = model.get_cell_value(sheet, row, column)
    if kind == ironcalc.CellType.ErrorValue:
        return ExcelError(str(value))
    if kind == ironcalc.CellType.LogicalValue:
        return bool(value)
    return value


def _literal(value: object) -> str:
    if isinstance(value, list):
        return "{" + ";".join(",".join(_literal(v) for v in row) for row in value) + "}"
    if isinstance(value, ExcelError):
        return value.code
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    if value is None:
        return '""'
    number = float(value)  # type: ignore[arg-type]
    text = repr(number)
    return f"({text})" if number < 0 else text
