"""What a rescore run found, in a few lines: the headline, what was not judged and why, what to run next.

Nothing about a case that could not be judged is left inside the results file alone: the
summary counts cases whose output was missing, whose golden cannot judge, and those the
engines could not decide, by reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from regrade.grading.verdicts import ARTIFACT, ENGINES_DISAGREE, INVALID_GOLDEN, UNEVALUABLE

MISSING_OUTPUT = "missing-output"


@dataclass
class RunSummary:
    cases: int = 0
    value_only_failures: int = 0
    artifacts: int = 0
    not_judged: Counter = field(default_factory=Counter)  # by reason: missing-output, invalid-golden, unevaluable: <reason>
    seconds: float | None = None

    @property
    def headline(self) -> str:
        return f"{self.artifacts} of {self.value_only_failures} value-only failures were grader artifacts " \
               "(correct when recomputed)"

    def lines(self, results: Path | None = None) -> list[str]:
        """The summary for stderr, ending with the commands to run next on ``results``."""
        timing = f" in {self.seconds:.0f} s" if self.seconds is not None else ""
        lines = [f"{self.cases} cases graded{timing}.", self.headline + "."]
        judged_not = sum(self.not_judged.values())
        if judged_not:
            parts = ", ".join(f"{count} {reason}" for reason, count in sorted(self.not_judged.items(),
                                                                               key=lambda item: (-item[1], item[0])))
            lines.append(f"{judged_not} of {self.cases} cases were not judged: {parts}.")
        if results is not None:
            lines.append(f"Next: regrade table {results}   (paired before/after tables)")
            lines.append(f"      regrade diff {results} --cells   (every cell the two gradings disagree on, and why)")
            lines.append(f"      regrade report {results} -o report.html   (one HTML page to share)")
        return lines


def summarise(records: list[dict], seconds: float | None = None) -> RunSummary:
    """The summary of a run's case records."""
    summary = RunSummary(cases=len(records), seconds=seconds)
    for record in records:
        if record.get("shallow_pass") is False:
            summary.value_only_failures += 1
        verdict = record.get("verdict")
        summary.artifacts += verdict == ARTIFACT
        reasons = record.get("reasons") or []
        if MISSING_OUTPUT in reasons:
            summary.not_judged[MISSING_OUTPUT] += 1
        elif verdict == INVALID_GOLDEN:
            summary.not_judged[INVALID_GOLDEN] += 1
        elif verdict in (UNEVALUABLE, ENGINES_DISAGREE):
            summary.not_judged[f"{verdict}: {reasons[0]}" if reasons and verdict == UNEVALUABLE else verdict] += 1
    return summary
