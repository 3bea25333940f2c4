"""Classifying a case from its shallow (value-only) and full (recomputed) grades.

=================  ============  ==========  ==================================
verdict            shallow grade full grade  meaning
=================  ============  ==========  ==================================
confirmed-pass     pass          pass        a real pass
confirmed-fail     fail          fail        a genuine failure
artifact           fail          pass        the grader failed a correct output
false-pass         pass          fail        the grader passed a wrong output
engines-disagree   any           unknown     the full engines computed different values
unevaluable        any           unknown     no full engine could compute it
=================  ============  ==========  ==================================

Each graded cell on which the two grades disagree carries a reason:

- ``uncached-formula``: the output's formula has no stored value (openpyxl wrote it);
- ``stale-cache``: the stored value differs from what the formula computes;
- ``reading-differs``: no formula, yet the two views read the cell differently.

A cell both grades fail is ``wrong-value``; an abstention keeps the engine's reason.
"""

from __future__ import annotations

from engines.base import CannotEvaluate, CellResult

CONFIRMED_PASS = "confirmed-pass"
CONFIRMED_FAIL = "confirmed-fail"
ARTIFACT = "artifact"
FALSE_PASS = "false-pass"
UNEVALUABLE = "unevaluable"
ENGINES_DISAGREE = "engines-disagree"
VERDICTS = (CONFIRMED_PASS, CONFIRMED_FAIL, ARTIFACT, FALSE_PASS, ENGINES_DISAGREE, UNEVALUABLE)


def classify(shallow_pass: bool, full_pass: bool | None, full_reason: str | None = None) -> str:
    """The verdict; ``full_reason`` tells an engine disagreement from an abstention."""
    if full_pass is None:
        return ENGINES_DISAGREE if full_reason == ENGINES_DISAGREE else UNEVALUABLE
    if shallow_pass and full_pass:
        return CONFIRMED_PASS
    if not shallow_pass and not full_pass:
        return CONFIRMED_FAIL
    return ARTIFACT if full_pass else FALSE_PASS


def cell_reason(
    shallow_equal: bool, full_value: CellResult, full_equal: bool, stored: CellResult, formula: str | None
) -> str:
    """Why one graded cell that at least one view got wrong is wrong in that view."""
    if isinstance(full_value, CannotEvaluate):
        return full_value.reason
    if shallow_equal == full_equal:
        return "wrong-value"
    if formula is None:
        return "reading-differs"
    return "uncached-formula" if stored is None else "stale-cache"

