"""The bridged functions: for each, when a call is bridged (from its argument texts) and how its
value is computed from the evaluated arguments. The adapters are grouped by category beside
:mod:`regrade.engines.functions`, which holds Excel's semantics free of IronCalc's types."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from regrade.engines.functions.dates import day, edate, eomonth, month, year
from regrade.engines.functions.lookup import NA
from regrade.engines.ironcalc.adapters.aggregate import SUBTOTAL_BY_IRONCALC, aggregate_call, over_array, subtotal_call
from regrade.engines.ironcalc.adapters.criteria import CONDITIONAL, conditional_call, criteria_wanted
from regrade.engines.ironcalc.adapters.elementwise import elementwise, mod, n, not_
from regrade.engines.ironcalc.adapters.lookup import lookup_call, match_call, xlookup_call, xmatch_call
from regrade.engines.ironcalc.adapters.text import text_call, textjoin_call
from regrade.engines.ironcalc.argument_texts import is_expression, is_literal
from regrade.engines.ironcalc.arguments import Argument
from regrade.values import ExcelError


@dataclass(frozen=True)
class BridgedFunction:
    wanted: Callable[[list[str], bool], bool]  # (argument texts, in an array formula) -> bridge this call?
    compute: Callable[[list[Argument]], object]


def array_argument(args: list[str], in_array_formula: bool, count: int) -> bool:
    """Inside an array formula, a call of ``count`` arguments whose first is computed (not a reference)."""
    return in_array_formula and len(args) == count and is_expression(args[0])


def array_k(args: list[str], in_array: bool) -> bool:
    """SMALL(array, {1;2;3}): k an array constant, or in an array context an expression or a range."""
    return len(args) == 2 and (args[1].startswith("{") or (in_array and (is_expression(args[1]) or ":" in args[1])))


def array_position(args: list[str], in_array: bool, positions: tuple[int, ...] = (0,)) -> bool:
    """In an array context, a call whose scalar argument(s) may hold an array (an expression or a range)."""
    return in_array and any(i < len(args) and (is_expression(args[i]) or ":" in args[i]) for i in positions)


def date_call(count: int) -> Callable[[list[str], bool], bool]:
    """A date function of ``count`` arguments; outside array formulas, not over a range (Excel intersects it).
    YEAR, MONTH and DAY of TODAY() or NOW() are left to IronCalc: its calendar departs from Excel's
    only below serial 61 (1 March 1900) and at 0, and the clock's serial is never there."""
    return lambda args, in_array: (len(args) == count and (in_array or ":" not in args[0])
                                   and not (count == 1 and _OF_THE_CLOCK.fullmatch(args[0])))


_OF_THE_CLOCK = re.compile(r"(?i)\s*(?:TODAY|NOW)\s*\(\s*\)\s*")


# IronCalc mishandles arrays computed inside a formula (AVERAGE(IF(range=x, range)) ...); regrade
# evaluates such an argument as an array formula of its own, which IronCalc gets right, and
# does the arithmetic. LOOKUP takes arrays even outside array formulas.
FUNCTIONS: dict[str, BridgedFunction] = {
    "AGGREGATE": BridgedFunction(lambda args, _: True, aggregate_call),
    "SUBTOTAL": BridgedFunction(lambda args, _: not SUBTOTAL_BY_IRONCALC.fullmatch(args[0]), subtotal_call),
    "XLOOKUP": BridgedFunction(lambda args, _: True, xlookup_call),
    "XMATCH": BridgedFunction(lambda args, _: True, xmatch_call),
    # over a reference too: IronCalc answers 0 when the range ends in empty cells (LOOKUP(9^9, D1:E1), task 59160)
    "LOOKUP": BridgedFunction(lambda args, _: 2 <= len(args) <= 3, lookup_call),
    "TEXTJOIN": BridgedFunction(lambda args, _: len(args) >= 3 and any(is_expression(a) for a in args[2:]), textjoin_call),
    # a range outside an array context is met by implicit intersection, which regrade leaves to IronCalc
    "TEXT": BridgedFunction(lambda args, in_array: len(args) == 2 and not is_literal(args[0])
                      and (in_array or ":" not in args[0]), text_call),
    **{name: BridgedFunction(lambda args, in_array: array_argument(args, in_array, 1), over_array(number))
       for name, number in (("AVERAGE", 1), ("COUNT", 2), ("MAX", 4), ("MIN", 5), ("SUM", 9))},
    # SMALL and LARGE also over an array of k, which IronCalc has not implemented (#N/IMPL!)
    **{name: BridgedFunction(lambda args, in_array: array_argument(args, in_array, 2) or array_k(args, in_array),
                       over_array(number))
       for name, number in (("LARGE", 14), ("SMALL", 15))},
    # IronCalc does not apply these element by element over an array (ISNUMBER(SEARCH(x, A2:A9))
    # is FALSE): inside an array formula or an array-taking function, regrade does
    **{name: BridgedFunction(lambda args, in_array: len(args) == 1 and array_position(args, in_array), elementwise(test))
       for name, test in (
           ("ISNUMBER", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
           ("ISTEXT", lambda v: isinstance(v, str)),
           ("ISNONTEXT", lambda v: not isinstance(v, str)),
           ("ISBLANK", lambda v: v is None),
           ("ISLOGICAL", lambda v: isinstance(v, bool)),
           ("ISERROR", lambda v: isinstance(v, ExcelError)),
           ("ISERR", lambda v: isinstance(v, ExcelError) and v != NA),
           ("ISNA", lambda v: v == NA),
           ("N", n),
           ("NOT", not_),
       )},
    # in array formulas always: also for Excel's 15 significant digits (MOD(1.000003, 1) is 3E-06, task 42110)
    "MOD": BridgedFunction(lambda args, in_array: len(args) == 2 and in_array, elementwise(mod)),
    "MATCH": BridgedFunction(lambda args, in_array: array_position(args, in_array, (0, 1)), match_call),
    **{name: BridgedFunction(criteria_wanted(first + 1), conditional_call(name)) for name, (_, _, first) in CONDITIONAL.items()},
    # IronCalc dates serials below 61 (an empty cell is 0) from 1899-12-30: EOMONTH(0, 0) is #NUM!
    **{name: BridgedFunction(date_call(count), elementwise(function))
       for name, count, function in (("YEAR", 1, year), ("MONTH", 1, month), ("DAY", 1, day),
                                     ("EOMONTH", 2, eomonth), ("EDATE", 2, edate))},
}


# their arguments are arrays outside array formulas too, as is INDEX's first (INDEX(COUNTIF(B$1:B1, A1:A9), 0, 0))
ARRAY_NATIVE = {"SUMPRODUCT", "AGGREGATE", "LOOKUP", "MMULT"}
