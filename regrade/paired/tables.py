"""Paired tables: each treatment condition against the baseline, task by task, with statistics.

A task passes when every one of its test cases passes (SpreadsheetBench's hard
restriction; ``unit="case"`` pairs test cases instead). Against the baseline each
task paired on ``task_id`` is one of:

- gain: baseline fail, treatment pass;    - regression: baseline pass, treatment fail;
- retained: pass in both;                 - residual: fail in both.

Two gradings are tabled. ``original``: the run's own grade (``original_pass``, or
``passed`` in an outcomes file) where given, else regrade's shallow (value-only)
grade, its reproduction of the benchmark's grader; each comparison says which
(``original_from``: ``run``, ``value-only`` or ``mixed``). ``regraded``: the full grade where an engine could evaluate the case, else the
original grade (an unevaluable case is not corrected). A case with no grade at all
(its golden or position unreadable) counts as a fail, as the official grader counts
an exception.

Several trials per (condition, task): the pass rate of a condition is the mean of its
per-trial pass rates (as SkillsBench reports); pairing uses each task's majority over
its trials, a tie counting as a fail. With two or more baseline trials the noise
floor is estimated: the share of tasks on which two baseline trials disagree, and the
gains and regressions that much noise alone would produce (half of n times that share
each).

Statistics per comparison (:mod:`regrade.paired.stats`): delta = net / n with a Newcombe
(default) or Wald interval, the exact (default) or mid-p McNemar p-value, and the p-value
adjusted over the family of comparisons of the same grading (Bonferroni by default, or Holm).
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from regrade.messages import first_few
from regrade.results.files import ResultsError
from regrade.results.records import Outcome, as_outcomes
from regrade.paired.stats import CORRECTIONS, INTERVALS, TESTS, adjust, mcnemar, mean_interval, newcombe_interval, wald_interval

GRADINGS = ("original", "regraded")
MISSING_OUTPUT = "missing-output"
ORIGINAL_SOURCES = ("run", "value-only", "mixed")
UNITS = ("task", "case")
AGGREGATES = ("hard", "soft")

Group = tuple[str, str, str]  # stack, benchmark, condition


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
    without_output: int  # paired units with no output in either condition (every case missing-output)
    original_from: str  # what the original grading is: the run's own grades, regrade's value-only ones, or mixed
    delta: float
    ci_lower: float | None
    ci_upper: float | None
    ci_method: str
    p_value: float
    test: str
    p_adjusted: float
    correction: str
    family_size: int
    regression_tax: float | None
    normalized_gain: float | None
    trials_baseline: int
    trials_treatment: int
    noise_discordance: float | None
    noise_gains: float | None
    noise_regressions: float | None

    @property
    def net(self) -> int:
        return self.gains - self.regressions

    def as_row(self) -> dict:
        return {**asdict(self), "net": self.net}


@dataclass(frozen=True)
class Outcomes:
    """Per unit (task, or task/case) score of one group, per trial: 1 or 0, or with
    ``soft`` the fraction of the task's test cases that pass."""

    by_trial: dict[int, dict[str, float]]
    soft: bool = False

    def majority(self) -> dict[str, float]:
        """Each unit's score over the trials: the majority (a tie is a fail), or with ``soft`` the mean."""
        units = set().union(*self.by_trial.values())
        votes = {u: [t[u] for t in self.by_trial.values() if u in t] for u in units}
        if self.soft:
            return {u: sum(v) / len(v) for u, v in votes.items()}
        return {u: 1.0 if sum(v) * 2 > len(v) else 0.0 for u, v in votes.items()}

    def mean_pass_rate(self, units: set[str]) -> float:
        rates = [sum(t[u] for u in units if u in t) / len([u for u in units if u in t])
                 for t in self.by_trial.values() if any(u in t for u in units)]
        return sum(rates) / len(rates) if rates else 0.0


Records = Sequence[Outcome | Mapping[str, Any]]  # typed outcomes, or rows typed at the door (as_outcomes)


def typed(records: Records) -> list[Outcome]:
    """The records as :class:`Outcome` objects; a row that is none is a :class:`PairingError`."""
    try:
        return as_outcomes(records)
    except ResultsError as exc:
        raise PairingError(str(exc)) from None


def case_grade(record: Outcome, grading: str) -> bool:
    """A case's grade: ``original`` (the run's own, else the value-only grade) or ``regraded``
    (the full grade where regrade decided one, else the original)."""
    original = bool(record.grade("original"))
    if grading == "original":
        return original
    return original if record.full_pass is None else record.full_pass


def _group(record: Outcome) -> Group:
    return (record.stack, record.benchmark, record.condition)


def _unit(record: Outcome, unit: str) -> str:
    return record.task_id if unit == "task" else f"{record.task_id}/{record.case}"


def units_without_output(records: Sequence[Outcome], unit: str = "task") -> dict[Group, set[str]]:
    """Per group, the units none of whose cases has an output (reason ``missing-output``)."""
    has_output: dict[Group, dict[str, bool]] = defaultdict(dict)
    for record in records:
        key = _unit(record, unit)
        missing = MISSING_OUTPUT in record.reasons
        group = has_output[_group(record)]
        group[key] = group.get(key, False) or not missing
    return {g: {u for u, found in units.items() if not found} for g, units in has_output.items()}


def original_sources(records: Sequence[Outcome]) -> dict[Group, set[str]]:
    """Per group, where its original grades come from: ``run`` (the run's own: original_pass,
    or passed in an outcomes file) and/or ``value-only`` (regrade's reproduction of the grader)."""
    found: dict[Group, set[str]] = defaultdict(set)
    for record in records:
        found[_group(record)].add("run" if record.original_pass is not None else "value-only")
    return found


def group_outcomes(records: Records, grading: str, unit: str = "task", soft: bool = False) -> dict[Group, Outcomes]:
    """Score per unit and trial, per (stack, benchmark, condition)."""
    outcomes = typed(records)
    if grading not in GRADINGS:
        raise PairingError(f"unknown grading {grading!r}; choose one of {GRADINGS}")
    if unit not in UNITS:
        raise PairingError(f"unknown unit {unit!r}; choose one of {UNITS}")
    cases: dict[Group, dict[int, dict[str, list[bool]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for number, record in enumerate(outcomes, start=1):
        missing = [k for k in ("condition", "task_id") if getattr(record, k) == ""]
        if missing:
            raise PairingError(f"record {number} lacks {', '.join(missing)}")
        cases[_group(record)][record.trial][_unit(record, unit)].append(case_grade(record, grading))
    score = (lambda passes: sum(passes) / len(passes)) if soft else (lambda passes: float(all(passes)))
    return {group: Outcomes({trial: {u: score(p) for u, p in units.items()} for trial, units in trials.items()}, soft)
            for group, trials in cases.items()}


def paired_table(
    records: Records,
    baseline: str = "none",
    ci: str = "newcombe",
    alpha: float = 0.05,
    correction: str = "bonferroni",
    unit: str = "task",
    aggregate: str = "hard",
    test: str = "exact",
) -> list[Comparison]:
    """Every (stack, benchmark, condition != baseline) against the baseline, in both gradings.

    ``aggregate="soft"`` scores a task by the fraction of its test cases that pass: a gain
    (regression) is then a task whose score rose (fell), delta is the mean change of score
    with a normal interval, and the p-value is the sign test (exact or mid-p) on those counts.
    """
    if aggregate not in AGGREGATES:
        raise PairingError(f"unknown aggregate {aggregate!r}; choose one of {AGGREGATES}")
    soft = aggregate == "soft"
    if ci not in INTERVALS:
        raise PairingError(f"unknown interval {ci!r}; choose one of {INTERVALS}")
    if correction not in CORRECTIONS:
        raise PairingError(f"unknown correction {correction!r}; choose one of {CORRECTIONS}")
    if test not in TESTS:
        raise PairingError(f"unknown test {test!r}; choose one of {TESTS}")
    if not 0 < alpha < 1:
        raise PairingError(f"alpha must lie between 0 and 1, not {alpha}")
    records = typed(records)
    rows: list[Comparison] = []
    without_output = units_without_output(records, unit)
    sources = original_sources(records)
    for grading in GRADINGS:
        outcomes = group_outcomes(records, grading, unit, soft)
        bases = {(s, b): o for (s, b, c), o in outcomes.items() if c == baseline}
        if not bases:
            conditions = sorted({c for (_, _, c) in outcomes})
            raise PairingError(f"no baseline condition {baseline!r} in the outcomes (conditions: {', '.join(conditions)}); "
                               f"name the one to pair against with --baseline (baseline= in Python)")
        family = [_counts(bases[(s, b)], o) + ((s, b, c),) for (s, b, c), o in sorted(outcomes.items())
                  if c != baseline and (s, b) in bases]
        p_values = [mcnemar(f[1]["regressions"], f[1]["gains"], test) for f in family]
        adjusted = adjust(p_values, correction)
        for (base, counts, (stack, benchmark, condition)), p, p_adj in zip(family, p_values, adjusted):
            base_group = (stack, benchmark, baseline)
            counts["without_output"] = len(counts["shared"] & without_output.get(base_group, set())
                                           & without_output.get((stack, benchmark, condition), set()))
            found = sources[base_group] | sources[(stack, benchmark, condition)]
            counts["original_from"] = found.pop() if len(found) == 1 else "mixed"
            rows.append(_comparison(stack, benchmark, condition, baseline, grading, base, counts, ci, alpha,
                                    (p, test), p_adj, correction, len(family)))
    return rows


def unpaired_units(records: Records, baseline: str = "none", unit: str = "task") -> dict[Group, list[str]]:
    """Per (stack, benchmark, condition), the tasks (or test cases) found in it or in its
    baseline but not in both: left out of the pairs, so out of ``n``."""
    outcomes = group_outcomes(records, "original", unit)
    bases = {(s, b): set(o.majority()) for (s, b, c), o in outcomes.items() if c == baseline}
    found: dict[Group, list[str]] = {}
    for (stack, benchmark, condition), o in sorted(outcomes.items()):
        if condition == baseline or (stack, benchmark) not in bases:
            continue
        alone = sorted(bases[(stack, benchmark)] ^ set(o.majority()), key=_natural)
        if alone:
            found[(stack, benchmark, condition)] = alone
    return found


def table_warnings(comparisons: list[Comparison], records: Records, baseline: str = "none",
                   unit: str = "task") -> list[str]:
    """What a reader of the table must be told: units in only one condition of a pair (out of
    n), and comparisons most of whose units have no output in either condition (a run over
    part of the benchmark, tabled as if over all of it)."""
    warnings = []
    groups: dict[tuple[str, str], set[str]] = defaultdict(set)
    records = typed(records)
    for record in records:
        group = _group(record)
        groups[group[:2]].add(group[2])
    for (stack, benchmark), conditions in sorted(groups.items()):
        if baseline not in conditions:
            warnings.append(f"warning: {stack} / {benchmark} has no condition {baseline} to pair against, so "
                            f"{', '.join(sorted(conditions))} {'is' if len(conditions) == 1 else 'are'} in no "
                            "comparison. Conditions pair within one stack (agent/model) and benchmark: to compare "
                            "runs of different agents, models or tasks, give them one label (regrade table "
                            "--stack NAME --benchmark NAME), or name another --baseline")
    for (stack, benchmark, condition), alone in unpaired_units(records, baseline, unit).items():
        warnings.append(f"warning: {stack} / {benchmark} / {condition}: {len(alone)} {unit}s are in only one of it "
                        f"and {baseline}, so out of n ({first_few(alone, 5)})")
    for c in comparisons:
        if c.grading == "original" and c.without_output * 2 > c.n:
            warnings.append(f"warning: {c.stack} / {c.benchmark} / {c.condition}: {c.without_output} of its {c.n} "
                            f"{unit}s have no output in it or in {c.baseline}: they count as failures in both. If the "
                            "run covered part of the benchmark, rescore with --tasks-with-outputs")
    return warnings


def _natural(text: str) -> list:
    """Task ids in number order: 9 before 10 (re.split alternates text and digits)."""
    return [int(part) if index % 2 else part for index, part in enumerate(re.split(r"(\d+)", text))]


def transition(base: float, treated: float) -> str:
    """gain, regression, retained or residual, from two task scores (1/0, or fractions)."""
    if treated > base:
        return "gain"
    if treated < base:
        return "regression"
    return "retained" if base > 0 else "residual"


def _counts(base: Outcomes, treated: Outcomes) -> tuple[Outcomes, dict]:
    b, t = base.majority(), treated.majority()
    shared = sorted(set(b) & set(t))
    kinds = [transition(b[u], t[u]) for u in shared]
    return base, {
        "treated": treated,
        "shared": set(shared),
        "differences": [t[u] - b[u] for u in shared],
        "gains": kinds.count("gain"),
        "regressions": kinds.count("regression"),
        "retained": kinds.count("retained"),
        "residual": kinds.count("residual"),
        "unpaired": len(set(b) ^ set(t)),
    }


def _comparison(stack: str, benchmark: str, condition: str, baseline: str, grading: str, base: Outcomes,
                counts: dict, ci: str, alpha: float, p: tuple[float, str], p_adjusted: float, correction: str,
                family_size: int) -> Comparison:
    shared = counts["shared"]
    n = len(shared)
    gains, regressions, retained, residual = (counts[k] for k in ("gains", "regressions", "retained", "residual"))
    p0 = base.mean_pass_rate(shared)
    p1 = counts["treated"].mean_pass_rate(shared)
    lower = upper = None
    delta = (gains - regressions) / n if n else 0.0
    if n and base.soft:
        delta = sum(counts["differences"]) / n
        lower, upper = mean_interval(counts["differences"], alpha)
        ci = "normal"
    elif n:
        interval = newcombe_interval if ci == "newcombe" else wald_interval
        lower, upper = interval(retained, regressions, gains, residual, alpha)
    discordance = _noise_discordance(base, shared)
    return Comparison(
        stack=stack, benchmark=benchmark, condition=condition, baseline=baseline, grading=grading, n=n,
        pass_rate_baseline=p0, pass_rate_treatment=p1,
        gains=gains, regressions=regressions, retained=retained, residual=residual, unpaired=counts["unpaired"],
        without_output=counts["without_output"], original_from=counts["original_from"],
        delta=delta, ci_lower=lower, ci_upper=upper, ci_method=ci,
        p_value=p[0], test=p[1], p_adjusted=p_adjusted, correction=correction, family_size=family_size,
        regression_tax=regressions / gains if gains else None,
        normalized_gain=(p1 - p0) / (1 - p0) if p0 < 1 else None,
        trials_baseline=len(base.by_trial), trials_treatment=len(counts["treated"].by_trial),
        noise_discordance=discordance,
        noise_gains=None if discordance is None else n * discordance / 2,
        noise_regressions=None if discordance is None else n * discordance / 2,
    )


def _noise_discordance(base: Outcomes, units: set[str]) -> float | None:
    """How often two baseline trials disagree on a task (mean over pairs of trials)."""
    trials = list(base.by_trial.values())
    if len(trials) < 2:
        return None
    shares = []
    for first, second in itertools.combinations(trials, 2):
        common = [u for u in units if u in first and u in second]
        if common:
            shares.append(sum(first[u] != second[u] for u in common) / len(common))
    return sum(shares) / len(shares) if shares else None


def changed_transitions(records: Records, baseline: str = "none", unit: str = "task",
                        aggregate: str = "hard") -> list[dict]:
    """Tasks whose transition against the baseline differs between the original and regraded gradings."""
    soft = aggregate == "soft"
    records = typed(records)
    before, after = group_outcomes(records, "original", unit, soft), group_outcomes(records, "regraded", unit, soft)
    changes = []
    for (stack, benchmark, condition), treated in sorted(before.items()):
        base = before.get((stack, benchmark, baseline))
        if condition == baseline or base is None:
            continue
        b0, t0 = base.majority(), treated.majority()
        b1, t1 = after[(stack, benchmark, baseline)].majority(), after[(stack, benchmark, condition)].majority()
        for task in sorted(set(b0) & set(t0)):
            was, now = transition(b0[task], t0[task]), transition(b1[task], t1[task])
            if was != now:
                changes.append({"stack": stack, "benchmark": benchmark, "condition": condition, "task_id": task,
                                "original": was, "regraded": now})
    return changes


def aggregate(rows: list[Comparison]) -> dict[str, dict]:
    """Per grading: total gains, total regressions and the share of gains offset by regressions."""
    totals: dict[str, dict] = {}
    for grading in GRADINGS:
        chosen = [r for r in rows if r.grading == grading]
        gains, regressions = sum(r.gains for r in chosen), sum(r.regressions for r in chosen)
        totals[grading] = {"gains": gains, "regressions": regressions,
                           "share_offset": regressions / gains if gains else None}
    return totals


def count_changes(rows: list[Comparison]) -> list[dict]:
    """Per comparison, each count regraded minus original."""
    original = {(r.stack, r.benchmark, r.condition): r for r in rows if r.grading == "original"}
    changes = []
    for row in rows:
        before = original.get((row.stack, row.benchmark, row.condition))
        if row.grading != "regraded" or before is None:
            continue
        changes.append({"stack": row.stack, "benchmark": row.benchmark, "condition": row.condition,
                        **{k: getattr(row, k) - getattr(before, k) for k in ("gains", "regressions", "retained", "residual")},
                        "net": row.net - before.net,
                        "delta": row.delta - before.delta})
    return changes
