"""COUNTIF(S), SUMIF(S), AVERAGEIF(S), MAXIFS and MINIFS with Excel's criteria
(:mod:`regrade.engines.functions.criteria`), over arrays of criteria too."""

from __future__ import annotations

from typing import Callable

from regrade.engines.functions.criteria import conditional
from regrade.engines.functions.lookup import NotImplementedMode
from regrade.engines.functions.values import as_number
from regrade.engines.ironcalc.adapters.elementwise import elementwise
from regrade.engines.ironcalc.argument_texts import is_expression
from regrade.engines.ironcalc.arguments import VALUE, Argument


# function -> (what it computes over the matching rows, the position of the range it computes
# over (None: it counts), the position of the first criteria range)
CONDITIONAL: dict[str, tuple[str, int | None, int]] = {
    "COUNTIF": ("COUNT", None, 0), "COUNTIFS": ("COUNT", None, 0), "SUMIF": ("SUM", 2, 0), "AVERAGEIF": ("AVERAGE", 2, 0),
    "SUMIFS": ("SUM", 0, 1), "AVERAGEIFS": ("AVERAGE", 0, 1), "MAXIFS": ("MAX", 0, 1), "MINIFS": ("MIN", 0, 1),
}


def conditional_call(name: str) -> Callable[[list[Argument]], object]:
    """COUNTIF(S), SUMIF(S), AVERAGEIF(S), MAXIFS, MINIFS with Excel's criteria (engines/functions/criteria.py),
    element by element over one array of criteria (each distinct criterion computed once: an array
    of a table's names repeats them)."""
    kind, values_at, first = CONDITIONAL[name]

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

        return elementwise(one)([criteria[arrays[0]]]) if arrays else one(None)

    return compute


def _shape(arg: Argument) -> tuple[int, int]:
    return len(arg.rows), len(arg.rows[0]) if arg.rows else 0


def criteria_wanted(first: int) -> Callable[[list[str], bool], bool]:
    """A criteria call to bridge: a criterion IronCalc misreads ("<>text" counts only text), an array
    constant of criteria, or, in an array context, criteria that may be an array."""
    def wanted(args: list[str], in_array: bool) -> bool:
        criteria = args[first::2]
        return any(_not_equal_text(c) or c.startswith("{") or (in_array and (is_expression(c) or ":" in c))
                   for c in criteria)

    return wanted


def _not_equal_text(text: str) -> bool:
    """``"<>a"`` or ``"<>"&...``: IronCalc counts only text cells unequal to a text criterion."""
    if text.startswith('"<>"&'):
        return True
    if not (text.startswith('"<>') and text.endswith('"')) or len(text) <= 4:
        return False
    return as_number(text[3:-1]) is None
