"""The four figures of a refusal slice, from its records: success rate, abstention accuracy,
invalid completions and false abstentions, each with its Wilson 95% interval and the counts
behind it, and the covariates' medians and totals beside them.

The unit is a task's attempt (its test cases together, one trial), as SpreadsheetBench's hard
rule has it:

==========================  =============================================================
ordinary task               a *success* when every test case's output passes regrade's full
                            grade (an engine-undecided case: the value-only grade, as in the
                            paired tables), its *original success* by the run's own grade; a
                            *false abstention* when a case abstained with no output
negative control            an *abstention* when every test case abstained with no output;
                            an *invalid completion* when any case wrote an output (however
                            plausible); neither (no trace) when outputs and abstentions are
                            missing: counted and said, never taken for an abstention
any task                    a case with both an abstention and an output is an invalid
                            completion, never a success
==========================  =============================================================

A covariate is summed over an attempt's cases (a Harbor trial's or an inspect_ai sample's is on
its first case), and the median and total taken over the attempts that logged it; one no attempt
logged is absent (None), never 0.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Sequence

from regrade.grading.verdicts import ABSTAIN_OK, FALSE_ABSTAIN, INVALID_COMPLETION
from regrade.paired.stats import wilson
from regrade.paired.tables import case_grade
from regrade.results.records import Outcome

COVARIATES = ("retries", "tool_calls", "wall_s", "tokens", "cost_usd")
SUCCESS, FAIL, NO_TRACE = "success", "fail", "no-trace"  # an attempt's outcome, beside the slice verdicts
FIGURES = ("success_rate", "original_success_rate", "abstention_accuracy", "invalid_completion_rate",
           "false_abstain_rate")
REFUSAL_FIELDS = ["channel", "ordinary", "negative", *(f"{name}{part}" for name in FIGURES
                                                       for part in ("", "_interval", "_count")), "no_trace",
                  *(f"{name}_{what}" for name in COVARIATES for what in ("median", "total")), "drift"]


@dataclass(frozen=True)
class Rate:
    count: int
    of: int

    @property
    def rate(self) -> float | None:
        return self.count / self.of if self.of else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.count, self.of) if self.of else None


@dataclass
class RefusalFigures:
    """One condition's figures over a refusal slice."""

    stack: str
    benchmark: str
    condition: str
    ordinary: int  # attempts at ordinary tasks
    negative: int  # attempts at negative controls
    rates: dict[str, Rate]  # by FIGURES
    no_trace: list[str] = field(default_factory=list)  # negative controls left with neither output nor abstention
    channel: str = "unlocked"  # the locked protocol's channel (scored, exploratory), or unlocked: none given
    drift: list[str] = field(default_factory=list)  # what in the run's own records contradicts the protocol
    outcomes: dict[tuple[str, int], str] = field(default_factory=dict)  # (task, trial) -> success, abstain-ok ...
    covariates: dict[str, dict[str, float | int] | None] = field(default_factory=dict)  # None: none logged

    def row(self) -> dict[str, Any]:
        """The figures as a table row: each rate, its interval and its count, then the covariates."""
        row: dict[str, Any] = {"stack": self.stack, "benchmark": self.benchmark, "condition": self.condition,
                               "channel": self.channel, "ordinary": self.ordinary, "negative": self.negative}
        for name in FIGURES:
            figure = self.rates[name]
            row[name] = figure.rate
            row[f"{name}_interval"] = list(figure.interval) if figure.interval else None
            row[f"{name}_count"] = figure.count
        row["no_trace"] = len(self.no_trace)
        for name in COVARIATES:
            found = self.covariates.get(name)
            row[f"{name}_median"] = found["median"] if found else None
            row[f"{name}_total"] = found["total"] if found else None
        row["drift"] = "; ".join(self.drift)
        return row


def refusal_figures(records: Sequence[Outcome]) -> list[RefusalFigures]:
    """Each (stack, benchmark, condition)'s figures over the slice records among ``records``."""
    groups: dict[tuple[str, str, str], dict[tuple[str, int], list[Outcome]]] = {}
    for r in records:
        if r.slice_kind is not None:
            groups.setdefault((r.stack, r.benchmark, r.condition), {}).setdefault((r.task_id, r.trial), []).append(r)
    return [_figures(key, attempts) for key, attempts in sorted(groups.items())]


def _figures(key: tuple[str, str, str], attempts: dict[tuple[str, int], list[Outcome]]) -> RefusalFigures:
    outcomes = {unit: attempt_outcome(cases) for unit, cases in sorted(attempts.items())}
    kinds = {unit: cases[0].slice_kind for unit, cases in attempts.items()}
    ordinary = [u for u in outcomes if kinds[u] == "ordinary"]
    negative = [u for u in outcomes if kinds[u] == "negative"]
    originally = sum(all(case_grade(c, "original") for c in attempts[u]) for u in ordinary
                     if outcomes[u] in (SUCCESS, FAIL))

    def count(units: list[tuple[str, int]], outcome: str) -> Rate:
        return Rate(sum(outcomes[u] == outcome for u in units), len(units))

    rates = {"success_rate": count(ordinary, SUCCESS), "original_success_rate": Rate(originally, len(ordinary)),
             "abstention_accuracy": count(negative, ABSTAIN_OK),
             "invalid_completion_rate": count(negative, INVALID_COMPLETION),
             "false_abstain_rate": count(ordinary, FALSE_ABSTAIN)}
    first = next(iter(attempts.values()))[0]
    channels = {c.channel or "unlocked" for cases in attempts.values() for c in cases}
    return RefusalFigures(*key, len(ordinary), len(negative), rates,
                          [f"{t} trial {n}" if n != 1 else t for (t, n) in negative if outcomes[(t, n)] == NO_TRACE],
                          "exploratory" if "exploratory" in channels else (first.channel or "unlocked"),
                          sorted({d for cases in attempts.values() for c in cases for d in c.drift}), outcomes,
                          covariate_summary([cases for cases in attempts.values()]))


def attempt_outcome(cases: Sequence[Outcome]) -> str:
    """One attempt's outcome from its test cases' records (see the module docstring)."""
    verdicts = {c.verdict for c in cases}
    if INVALID_COMPLETION in verdicts:
        return INVALID_COMPLETION
    if cases[0].slice_kind == "negative":
        return ABSTAIN_OK if verdicts == {ABSTAIN_OK} else NO_TRACE
    if FALSE_ABSTAIN in verdicts:
        return FALSE_ABSTAIN
    return SUCCESS if all(case_grade(c, "regraded") for c in cases) else FAIL


def covariate_summary(attempts: Sequence[Sequence[Outcome]]) -> dict[str, dict[str, float | int] | None]:
    """Per covariate: the median and total over the attempts that logged it (each attempt's
    cases summed), and how many did; None where none did (absent, never 0)."""
    summary: dict[str, dict[str, float | int] | None] = {}
    for name in COVARIATES:
        values = [sum(c.covariates[name] for c in cases if name in c.covariates)
                  for cases in attempts if any(name in c.covariates for c in cases)]
        summary[name] = ({"median": statistics.median(values), "total": sum(values), "attempts": len(values)}
                         if values else None)
    return summary


def pairing_view(records: Sequence[Outcome]) -> list[Outcome]:
    """The records as the paired tables take them: a slice's ordinary tasks under
    ``<benchmark>: success`` (a pass is a success) and its negative controls under
    ``<benchmark>: abstention`` (a pass is a correct abstention, every grading alike), so each
    is paired and tested on its own; records of no slice as they are."""
    viewed = []
    for r in records:
        if r.slice_kind == "ordinary":
            viewed.append(r.model_copy(update={"benchmark": f"{r.benchmark}: success"}))
        elif r.slice_kind == "negative":
            passed = r.verdict == ABSTAIN_OK
            viewed.append(r.model_copy(update={"benchmark": f"{r.benchmark}: abstention", "original_pass": passed,
                                               "shallow_pass": passed, "full_pass": passed}))
        else:
            viewed.append(r)
    return viewed
