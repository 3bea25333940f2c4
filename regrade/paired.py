"""Paired tables: each treatment condition against the baseline, task by task.

A task passes when every one of its test cases passes (SpreadsheetBench's hard
restriction). Against the baseline each task paired on ``task_id`` is one of:

- gain: baseline fail, treatment pass;    - regression: baseline pass, treatment fail;
- retained: pass in both;                 - residual: fail in both.

Two gradings are tabled. ``original``: the run's own grade (``original_pass``) where
given, else regrade's shallow (value-only) grade. ``regraded``: the full grade where
an engine could evaluate the case, else the original grade (an unevaluable case is
not corrected). A case with no grade at all (its golden or position unreadable)
counts as a fail, as the official grader counts an exception.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

GRADINGS = ("original", "regraded")


class PairingError(ValueError):
    """Outcomes that cannot be paired."""


@dataclass(frozen=True)
class Comparison:
    stack: str
    benchmark: str
    condition: str
    baseline: str
    grading: str
    n: int
    pass_rate_baseline: float
    pass_rate_treatment: float
    gains: int
    regressions: int
    retained: int
    residual: int
    unpaired: int

    @property
    def net(self) -> int:
        return self.gains - self.regressions


def case_grade(record: dict, grading: str) -> bool:
    original = record.get("original_pass")
    if original is None:
        original = bool(record.get("shallow_pass"))
    if grading == "original":
        return bool(original)
    full = record.get("full_pass")
    return bool(original) if full is None else bool(full)


def task_outcomes(records: list[dict], grading: str) -> dict[tuple[str, str, str], dict[str, bool]]:
    """Pass/fail per task, keyed by (stack, benchmark, condition) then task id."""
    if grading not in GRADINGS:
        raise PairingError(f"unknown grading {grading!r}; choose one of {GRADINGS}")
    trials = {r.get("trial", 1) for r in records}
    if len(trials) > 1:
        raise PairingError(
            f"the outcomes hold {len(trials)} trials per task; regrade does not yet pair several trials"
        )
    outcomes: dict[tuple[str, str, str], dict[str, bool]] = defaultdict(dict)
    for record in records:
        group = (str(record.get("stack", "default")), str(record.get("benchmark", "")), str(record["condition"]))
        task = str(record["task_id"])
        passed = case_grade(record, grading)
        outcomes[group][task] = outcomes[group].get(task, True) and passed
    return outcomes


def paired_table(records: list[dict], baseline: str = "none") -> list[Comparison]:
    """Every (stack, benchmark, condition != baseline) against the baseline, in both gradings."""
    rows: list[Comparison] = []
    for grading in GRADINGS:
        outcomes = task_outcomes(records, grading)
        bases = {(s, b): tasks for (s, b, c), tasks in outcomes.items() if c == baseline}
        if not bases:
            conditions = sorted({c for (_, _, c) in outcomes})
            raise PairingError(f"no baseline condition {baseline!r} in the outcomes (conditions: {', '.join(conditions)})")
        for (stack, benchmark, condition), tasks in sorted(outcomes.items()):
            if condition == baseline or (stack, benchmark) not in bases:
                continue
            rows.append(_compare(stack, benchmark, condition, baseline, grading, bases[(stack, benchmark)], tasks))
    return rows


def _compare(
    stack: str, benchmark: str, condition: str, baseline: str, grading: str,
    base: dict[str, bool], treated: dict[str, bool],
) -> Comparison:
    shared = sorted(set(base) & set(treated))
    pairs = [(base[t], treated[t]) for t in shared]
    n = len(pairs)
    return Comparison(
        stack=stack,
        benchmark=benchmark,
        condition=condition,
        baseline=baseline,
        grading=grading,
        n=n,
        pass_rate_baseline=sum(b for b, _ in pairs) / n if n else 0.0,
        pass_rate_treatment=sum(t for _, t in pairs) / n if n else 0.0,
        gains=sum(1 for b, t in pairs if not b and t),
        regressions=sum(1 for b, t in pairs if b and not t),
        retained=sum(1 for b, t in pairs if b and t),
        residual=sum(1 for b, t in pairs if not b and not t),
        unpaired=len(set(base) ^ set(treated)),
    )
