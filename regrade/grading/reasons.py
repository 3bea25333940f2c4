"""What every verdict and reason id means, in one sentence each: the ids are stable, the words may change.

A results file names verdicts and reasons by id (``artifact``, ``uncached-formula``); the
report, the docs and anyone reading a results file look them up here. An engine's
abstention names its rule id (``regrade rules``); :func:`meaning` gives that rule's ``why``,
which says more than the kind in :data:`REASONS` that an id like ``external-link`` shares.
"""

from __future__ import annotations

from regrade.engines.rules import RULES

VERDICT_MEANINGS: dict[str, str] = {
    "confirmed-pass": "both the value-only grade and the full engines pass it: a real pass",
    "confirmed-fail": "both grades fail it: a genuine failure",
    "artifact": "the value-only grade fails it, the full engines pass it: the grader failed a correct output",
    "false-pass": "the value-only grade passes it, the full engines fail it: the grader passed a wrong output",
    "engines-disagree": "the full engines computed different values for a graded cell",
    "unevaluable": "no engine could compute a graded cell (the engines abstain, never guess)",
    "invalid-golden": "the golden cannot judge: unreadable, its answer formulas never computed, or volatile",
}

TRANSITION_MEANINGS: dict[str, str] = {  # a task against the baseline, in the paired table
    "gain": "the task fails under the baseline and passes under the condition",
    "regression": "the task passes under the baseline and fails under the condition",
    "retained": "the task passes under both",
    "residual": "the task fails under both",
}

REASONS: dict[str, str] = {
    # a graded cell on which the two grades disagree
    "unsupported-in-recalc": "the value-only grader's recalculation could not compute it (gnumeric's #NAME? for AGGREGATE)",
    "uncached-formula": "the output's formula has no stored value (openpyxl wrote it), so the value-only grader read nothing",
    "spill-not-materialised": "the cell lies in an array formula's spill range, which the file does not hold",
    "date-serial": "a date on one side, the same instant as a serial number on the other",
    "type-mismatch": "the same value in another type: numeric text against a number, \"TRUE\" against a boolean",
    "rounding": "numbers within 0.01 of each other that the policy's rounding puts apart",
    "rounding-boundary": "equal to the golden to Excel's 15 significant digits, yet the policy's rounding puts them "
                         "apart: the engines cannot say which side Excel lands on",
    "stale-cache": "the stored value differs from what the formula computes",
    "reading-differs": "no formula, yet the two views read the cell differently",
    "wrong-value": "both grades fail the cell: its value is not the golden's",
    # why no value: the kinds of an engine's abstention
    "unsupported-function": "the engine lacks a function, or a form of one, that the cell needs",
    "unsupported-name": "the engine cannot evaluate a defined name the cell reads",
    "engine-departure": "the engine computes it, but not as Excel does, in a way regrade cannot mend",
    "engine-error": "the engine failed on the formula",
    "parse-error": "the engine could not parse the formula",
    "external-link": "the formula reads another workbook, which no engine here has",
    "locale-date": "a date written as text in the saving Excel's locale, which no engine here can repeat",
    "implicit-intersection": "an implicit intersection no engine here repeats as the saving Excel did",
    "undocumented-behaviour": "Excel's behaviour here is undocumented, so no engine's value can be trusted",
    "timeout": "the engine spent more than its time limit (CPU seconds) on this workbook",
    "memory-limit": "the engine needed more memory than the limit on this workbook",
    "crashed": "the engine's worker died on this workbook",
    "load-failed": "the engine could not load the workbook",
    "below-quorum": "fewer engines than the quorum computed the cell (the others abstained)",
    "golden-not-reproduced": "the engine computes this cell of the golden otherwise than Excel cached it, so it does "
                             "not vote on it in the task's outputs; where no engine reproduces it, the golden is in "
                             "doubt",
    # a whole case
    "missing-output": "the run has no output file for this case (graded as a failure)",
    "unreadable-output": "the output is not a workbook any reader accepts (a folder, empty, a corrupt zip ...)",
    "encrypted": "the workbook is password-protected",
    "legacy-format": "a binary .xls workbook under another name",
    "too-large": "the file is over the size limit",
    "zip-bomb": "the file inflates past the limits (too many parts, or compressed beyond any real workbook)",
    "hostile-xml": "an XML part declares a document type (entity expansion, external entities): Excel never writes one",
    "missing-sheet": "the answer sheet is not in the output",
    "wrong-sheet": "the answer sheet is in the output under another name (the exact-name official policy fails it)",
    "invalid-position": "the task's answer_position cannot be read",
    "official-grader-error": "the official grader raised an exception on this case (it counts as a failure)",
    "uncached-golden": "the golden's answer formulas were never computed: it has no values to compare with",
    "dated-golden": "the golden depends on TODAY(); the output was judged as of the day its cached values were computed",
    "save-day-unknown": "the golden depends on TODAY() and may have been computed on more than one day, which "
                        "changes the output's verdict",
    "missing-file": "a file the case names does not exist",
    "internal-error": "regrade itself failed on this case (a bug: please report it with the file)",
}


def meaning(reason_id: str) -> str:
    """What ``reason_id`` (a verdict, a reason or a rule id) means; a plain note when it is unknown."""
    if reason_id in VERDICT_MEANINGS:
        return VERDICT_MEANINGS[reason_id]
    if reason_id in TRANSITION_MEANINGS:
        return TRANSITION_MEANINGS[reason_id]
    rule = next((r for r in RULES if r.id == reason_id), None)
    if rule is not None:  # a rule says more than the kind of abstention it shares a name with
        return rule.why
    if reason_id in REASONS:
        return REASONS[reason_id]
    return "no description: see docs/grading.md"
