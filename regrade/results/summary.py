"""What a rescore run found, in a few lines: the headline, what was not judged and why, what to run next.

Nothing about a case that could not be judged is left inside the results file alone: the
summary counts cases whose output was missing, whose golden cannot judge, and those the
engines could not decide, by reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from regrade.grading.verdicts import ARTIFACT, ENGINES_DISAGREE, INVALID_GOLDEN, SLICE_VERDICTS, UNEVALUABLE, VERDICTS
from regrade.results.records import CaseRecord, Outcome
from regrade.workbook.screening import HOSTILE_REASONS

MISSING_OUTPUT = "missing-output"
SHOWN_VERDICTS = (*VERDICTS, MISSING_OUTPUT)  # a missing output is a failure of the run, not a judged one


def shown_verdict(record: Outcome) -> str:
    """The verdict a table shows: ``missing-output`` for a case with no output (its recorded
    verdict is confirmed-fail, so that the paired table counts it as a failure), else the verdict."""
    return MISSING_OUTPUT if MISSING_OUTPUT in record.reasons else str(record.verdict)


def shown_verdicts(records: Sequence[Outcome]) -> tuple[str, ...]:
    """The verdicts a count lists: every one, and a refusal slice's (abstain-ok ...) where its
    records are among ``records``."""
    return (*SHOWN_VERDICTS, *SLICE_VERDICTS) if any(r.slice_kind for r in records) else SHOWN_VERDICTS


def verdict_counts(records: Sequence[CaseRecord]) -> list[dict[str, object]]:
    """Cases per shown verdict (:func:`shown_verdict`), each of :func:`shown_verdicts` listed."""
    counts = Counter(shown_verdict(r) for r in records)
    return [{"verdict": v, "cases": counts.get(v, 0)} for v in shown_verdicts(records)]


def broken_outputs(records: Sequence[CaseRecord]) -> Counter[str]:
    """Outputs that are no workbook a spreadsheet program opens (random bytes, a truncated zip,
    an encrypted or renamed .xls file ...), by reason: genuine failures (confirmed-fail), counted."""
    return Counter(reason for r in records for reason in r.reasons if reason in HOSTILE_REASONS)


@dataclass
class OwnGrades:
    """The run's own grades (``original_pass``: a Harbor reward, a manifest's column) against the
    full grade, by trial of a task (the unit a run's grader grades): a trial passes in full when
    every case does, fails when one case fails, and is undecided otherwise."""

    graders: list[str] = field(default_factory=list)
    failed: int = 0  # trials the run's grader failed
    failed_but_pass: int = 0  # ... that pass in full
    passed: int = 0
    passed_but_fail: int = 0
    undecided: int = 0  # trials with a grade of their own that the full grade could not decide

    @property
    def line(self) -> str:
        return (f"Against the run's own grades ({', '.join(self.graders)}), by trial: {self.failed_but_pass} of "
                f"{self.failed} it failed pass when recomputed in full, {self.passed_but_fail} of {self.passed} it "
                f"passed fail in full" + (f", {self.undecided} could not be decided" if self.undecided else "") + ".")


def own_grades(records: Sequence[CaseRecord]) -> OwnGrades | None:
    """:class:`OwnGrades` of the records that carry the run's own grade, or None when none does."""
    trials: dict[tuple[str, str, str, str, int], list[CaseRecord]] = {}
    for r in records:
        if r.original_pass is not None:
            trials.setdefault((r.stack, r.benchmark, r.condition, r.task_id, r.trial), []).append(r)
    if not trials:
        return None
    result = OwnGrades(graders=sorted({r.original_grader or "the run's grades" for t in trials.values() for r in t}))
    for cases in trials.values():
        fulls = [r.full_pass for r in cases]
        full = False if any(f is False for f in fulls) else True if all(f is True for f in fulls) else None
        own = bool(cases[0].original_pass)
        result.passed += own
        result.failed += not own
        if full is None:
            result.undecided += 1
        else:
            result.failed_but_pass += (not own) and full
            result.passed_but_fail += own and not full
    return result


@dataclass
class RunSummary:
    cases: int = 0
    value_only_failures: int = 0
    artifacts: int = 0
    not_judged: Counter[str] = field(default_factory=Counter)  # by reason: missing-output, invalid-golden, unevaluable: <reason>
    broken: Counter[str] = field(default_factory=Counter)  # outputs no spreadsheet program opens, by reason (confirmed-fail)
    seconds: float | None = None
    left_out: dict[str, int] = field(default_factory=dict)  # the dataset's tasks not graded, by why (LeftOut)
    conditions: list[str] = field(default_factory=list)  # the run's conditions, in name order
    own: OwnGrades | None = None  # the run's own grades against the full grade, where it has them

    @property
    def headline(self) -> str:
        value_only = f"{self.artifacts} of {self.value_only_failures} value-only failures were grader artifacts " \
                     "(correct when recomputed)"
        if self.own is None:
            return value_only
        return f"{self.own.line[:-1]}; the benchmark's value-only grader, as regrade reproduces it: {value_only}"

    def lines(self, results: Path | None = None, quiet: bool = False) -> list[str]:
        """The summary for stderr, ending with the commands to run next on ``results``; with
        ``quiet`` only what a reader must not miss (:meth:`warnings`)."""
        if quiet:
            return self.warnings()
        timing = f" in {self.seconds:.0f} s" if self.seconds is not None else ""
        lines = [f"{self.cases} cases graded{timing}.", self.headline + ".", *self.warnings()]
        if results is not None:
            if "none" in self.conditions or len(self.conditions) < 2:
                lines.append(f"Next: regrade table {results}   (paired before/after tables)")
            else:
                lines.append(f"Next: regrade table {results} --baseline CONDITION   (paired before/after tables; no "
                             f"condition is named none, so name the baseline: {', '.join(self.conditions)})")
            lines.append(f"      regrade diff {results} --cells   (every cell either grading failed, and why)")
            lines.append(f"      regrade report {results} -o report.html   (one HTML page to share)")
        return lines

    def warnings(self) -> list[str]:
        """What could not be judged, was missing, broken or left out: said even with -q."""
        lines = []
        judged_not = sum(self.not_judged.values())
        if judged_not:
            parts = ", ".join(f"{count} {reason}" for reason, count in sorted(self.not_judged.items(),
                                                                               key=lambda item: (-item[1], item[0])))
            lines.append(f"{judged_not} of {self.cases} cases were not judged: {parts}.")
        missing = self.not_judged.get(MISSING_OUTPUT, 0)
        if missing * 2 > self.cases and not self.left_out.get("without_outputs"):
            lines.append(f"Most cases ({missing} of {self.cases}) had no output: if the run covered part of the "
                         "benchmark, run again with --tasks-with-outputs (finished cases come from the cache).")
        return lines + self.broken_and_left_out()

    def broken_and_left_out(self) -> list[str]:
        """The outputs no spreadsheet program opens and the tasks of the dataset left out, a line each
        (the report's summary says them too)."""
        lines = []
        if self.broken:
            parts = ", ".join(f"{count} {reason}" for reason, count in sorted(self.broken.items()))
            lines.append(f"{sum(self.broken.values())} outputs are no workbook a spreadsheet program opens ({parts}): "
                         "genuine failures, counted as confirmed-fail.")
        if any(self.left_out.values()):
            parts = ", ".join(f"{count} {why.replace('_', ' ')}" for why, count in self.left_out.items() if count)
            lines.append(f"Tasks of the dataset left out: {parts}.")
        return lines


def summarise(records: Sequence[CaseRecord], seconds: float | None = None, left_out: dict[str, list[str]] | None = None) -> RunSummary:
    """The summary of a run's case records (``left_out``: the dataset's tasks not graded, by why)."""
    conditions = {r.condition for r in records}
    summary = RunSummary(cases=len(records), seconds=seconds, broken=broken_outputs(records),
                         left_out={why: len(tasks) for why, tasks in (left_out or {}).items()},
                         conditions=sorted(conditions), own=own_grades(records))
    for record in records:
        if record.shallow_pass is False:
            summary.value_only_failures += 1
        verdict = record.verdict
        summary.artifacts += verdict == ARTIFACT
        reasons = record.reasons
        if MISSING_OUTPUT in reasons:
            summary.not_judged[MISSING_OUTPUT] += 1
        elif verdict == INVALID_GOLDEN:
            summary.not_judged[INVALID_GOLDEN] += 1
        elif verdict in (UNEVALUABLE, ENGINES_DISAGREE):
            summary.not_judged[f"{verdict}: {reasons[0]}" if reasons and verdict == UNEVALUABLE else verdict] += 1
    return summary
