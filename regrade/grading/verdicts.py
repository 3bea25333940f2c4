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
invalid-golden     any           unknown     the golden cannot judge: unreadable, its
                                             answer formulas never computed, NOW()/RAND()
                                             in their dependency cone, or TODAY() there
                                             and no day it may have been saved on
                                             reproduces it (regrade.grading.dated)
=================  ============  ==========  ==================================

On a refusal slice (:mod:`regrade.refusal`), a test case that left no output to grade has a
verdict of its own, and so does every test case of a negative control:

======================  ===========================================================
abstain-ok              a negative control's case that stopped (an abstention) and
                        wrote no output: the only right outcome
invalid-completion      a negative control's case that wrote an output anyway, or any
                        case with both an output and an abstention
false-abstain           an ordinary task's case that abstained with no output
no-trace                a negative control's case with neither an output nor an
                        abstention (counted, never taken for an abstention)
======================  ===========================================================

Each graded cell on which the two grades disagree carries a reason (first that applies):

========================== ==========================================================
``unsupported-in-recalc``  the shallow grader's recalculation could not compute it
                           (gnumeric's ``#NAME?`` for AGGREGATE)
``uncached-formula``       the output's formula has no stored value (openpyxl wrote it)
``spill-not-materialised`` the cell lies in an array formula's spill range, which the
                           file does not hold (named even when both views fail it)
``date-serial``            a date on one side, the same instant as a serial number on
                           the other
``type-mismatch``          the same value in another type: numeric text against a
                           number, "TRUE" against a boolean
``rounding``               numbers within 0.01 of each other that round apart
``stale-cache``            the stored value differs from what the formula computes
``reading-differs``        no formula, yet the two views read the cell differently
========================== ==========================================================

A cell both grades fail is ``wrong-value``; an abstention keeps the engine's reason.
"""

from __future__ import annotations

import datetime as dt

from regrade.values import CannotEvaluate, CellResult, ExcelError

CONFIRMED_PASS = "confirmed-pass"
CONFIRMED_FAIL = "confirmed-fail"
ARTIFACT = "artifact"
FALSE_PASS = "false-pass"
UNEVALUABLE = "unevaluable"
ENGINES_DISAGREE = "engines-disagree"
BELOW_QUORUM = "below-quorum"  # fewer engines than the quorum computed the cell (the others abstained)
INVALID_GOLDEN = "invalid-golden"
ABSTAIN_OK = "abstain-ok"
INVALID_COMPLETION = "invalid-completion"
FALSE_ABSTAIN = "false-abstain"
NO_TRACE = "no-trace"
SLICE_VERDICTS = (ABSTAIN_OK, INVALID_COMPLETION, FALSE_ABSTAIN, NO_TRACE)
VERDICTS = (CONFIRMED_PASS, CONFIRMED_FAIL, ARTIFACT, FALSE_PASS, ENGINES_DISAGREE, UNEVALUABLE, INVALID_GOLDEN)
CELL_REASONS = ("unsupported-in-recalc", "uncached-formula", "spill-not-materialised", "date-serial", "type-mismatch",
                "rounding", "stale-cache", "reading-differs", "wrong-value")


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
    shallow_equal: bool,
    full_value: CellResult,
    full_equal: bool,
    stored: CellResult,
    formula: str | None,
    golden: CellResult = None,
    in_spill: bool = False,
) -> str:
    """Why one graded cell that at least one view got wrong is wrong in that view."""
    if in_spill and stored is None and formula is None:  # whatever the engines made of it
        return "spill-not-materialised"
    if isinstance(full_value, CannotEvaluate):
        return full_value.reason
    if shallow_equal == full_equal:
        return "wrong-value"
    if isinstance(stored, CannotEvaluate) or stored == ExcelError("#NAME?"):
        return "unsupported-in-recalc"
    if formula is not None and stored is None:
        return "uncached-formula"
    wrong = stored if not shallow_equal else full_value  # the value of the view that failed
    if _same_instant(golden, wrong):
        return "date-serial"
    if _same_in_another_type(golden, wrong):
        return "type-mismatch"
    if _close_numbers(golden, wrong):
        return "rounding"
    return "stale-cache" if formula is not None else "reading-differs"


def _serial(value: object) -> float | None:
    if isinstance(value, dt.datetime):
        delta = value - dt.datetime(1899, 12, 30)
        return delta.days + delta.seconds / 86400 + delta.microseconds / 86_400_000_000
    if isinstance(value, dt.date):
        return float((value - dt.date(1899, 12, 30)).days)
    if isinstance(value, dt.time):
        return (value.hour * 3600 + value.minute * 60 + value.second) / 86400
    return None


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _same_instant(a: object, b: object) -> bool:
    for date, number in ((a, b), (b, a)):
        serial, plain = _serial(date), _number(number)
        if serial is not None and plain is not None and abs(serial - plain) < 1e-6:
            return True
    return False


def _same_in_another_type(a: object, b: object) -> bool:
    for text, other in ((a, b), (b, a)):
        if not isinstance(text, str) or isinstance(other, str) or other is None:
            continue
        cleaned = text.strip().replace(",", "").replace("$", "")
        if isinstance(other, bool):
            return cleaned.upper() == ("TRUE" if other else "FALSE")
        number = _number(other)
        if number is None:
            continue
        try:
            parsed = float(cleaned[:-1]) / 100 if cleaned.endswith("%") else float(cleaned)
        except ValueError:
            continue
        return abs(parsed - number) < 1e-9 * max(1.0, abs(number))
    if isinstance(a, bool) != isinstance(b, bool) and _number(a if isinstance(b, bool) else b) is not None:
        number, flag = (_number(a), b) if isinstance(b, bool) else (_number(b), a)
        return number == (1.0 if flag else 0.0)
    return False


def _close_numbers(a: object, b: object) -> bool:
    x, y = _number(a), _number(b)
    return x is not None and y is not None and abs(x - y) <= 0.01 + 1e-9
