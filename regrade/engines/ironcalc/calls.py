"""Finding the call the bridge computes next in a formula: the innermost bridged call, with
its argument texts, and the context every resolution of one model shares."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Collection, Mapping

from openpyxl.formula.tokenizer import Token

from regrade.engines.ironcalc.adapters import ARRAY_NATIVE, FUNCTIONS
from regrade.engines.ironcalc.adapters.aggregate import SUBTOTAL_BY_IRONCALC
from regrade.engines.ironcalc.argument_texts import is_reference, offset_of_an_array, without_intersection
from regrade.engines.ironcalc.arguments import ModelCell
from regrade.workbook.calls import calls
from regrade.workbook.formula import bare_name, call_pattern, tokens as formula_tokens


CANDIDATE = call_pattern(  # a formula that may hold a bridged call (INDEX: INDEX_AS_REFERENCE)
    "aggregate", "subtotal", "xlookup", "xmatch", "lookup", "sum", "average", "min", "max", "count", "small", "large",
    "is[a-z]+", "n", "not", "mod", "match", "countifs?", "sumifs?", "averageifs?", "maxifs", "minifs", "year", "month",
    "day", "eomonth", "edate", "textjoin", "text")


INDEX_AS_REFERENCE = re.compile(r"(?:[:]\s*(?:_xlfn\.)?index\(|index\(.*\)\s*:)", re.IGNORECASE)  # A1:INDEX(...)


@dataclass
class BridgedCall:
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
class BridgeContext:
    """What every resolution of one model shares."""

    array_cells: Collection[ModelCell]  # the cells holding array formulas
    filtered_rows: Mapping[int, frozenset[int]]  # per sheet index: the rows a filter hides
    subtotal_cells: set[ModelCell] = field(default_factory=set)  # SUBTOTAL/AGGREGATE formulas, which callers may skip
    refused: set[ModelCell] = field(default_factory=set)  # cells holding a SUBTOTAL the last resolution could not compute

    @property
    def filtering(self) -> bool:
        return any(self.filtered_rows.values())


def innermost_call(cell: ModelCell, formula: str, context: BridgeContext,
               known: dict[str, list[Token]] | None = None) -> BridgedCall | None:
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
            in_array = in_array_formula or any(n in ARRAY_NATIVE or (n == "INDEX" and len(a) == 1) for _, n, a, _ in stack)
            if in_array:  # IronCalc marks ranges it would intersect implicitly with @: not in an array context
                texts = [without_intersection(t) for t in texts]
            lead = tokens[start].value[: tokens[start].value.rfind(":") + 1]
            if name == "INDEX":  # bridged only as one end of a range (A1:INDEX(...)), which IronCalc cannot take
                after = tokens[index + 1].value if index + 1 < len(tokens) else ""
                bridged = bool(lead or after.startswith(":")) and 2 <= len(texts) <= 3 and is_reference(texts[0])
            elif name == "SUBTOTAL":
                bridged = subtotal_wanted(texts, context.filtering)
            else:
                bridged = name in FUNCTIONS and FUNCTIONS[name].wanted(texts, in_array)
            if bridged and not holds:
                return BridgedCall(cell, name, tokens, start, index, texts, lead)
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


def subtotal_wanted(args: list[str], filtering: bool) -> bool:
    """SUBTOTAL 110 and 111 (IronCalc counts hidden rows), a function number IronCalc must compute,
    1-11 where a filter hides rows, and any over OFFSET of an array."""
    return len(args) >= 2 and (not SUBTOTAL_BY_IRONCALC.fullmatch(args[0]) or filtering
                               or any(offset_of_an_array(a) for a in args[1:]))


def reads_local_names(call: BridgedCall, formula: str) -> bool:
    """Whether the call's arguments use a name bound by LET or LAMBDA: the bridge evaluates
    arguments in the cell's context, where such a name means nothing. LET binds its
    arguments 1, 3, 5, ... before its last; LAMBDA every argument before its last."""
    bound = {name.upper().removeprefix("_XLPM.") for c in calls(formula) if c.name in ("LET", "LAMBDA")
             for name in (c.args[:-1:2] if c.name == "LET" else c.args[:-1])}
    return bool(bound) and any(token.type == Token.OPERAND and token.subtype == Token.RANGE
                               and token.value.upper().removeprefix("_XLPM.") in bound
                               for token in call.tokens[call.start : call.end + 1])
