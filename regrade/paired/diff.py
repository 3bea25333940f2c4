"""Shallow against full grading, from a results file: what the value-only grader got wrong.

The summary is the one the Regression Tax study reports: of the value-only
failures whose answer cells hold formulas, how many were already correct
(column ``artifact``), genuinely wrong (``confirmed-fail``), or could not be evaluated;
with the engine disagreements, the invalid goldens, and the passes that were
wrong (``false-pass``). Overall and per (stack, benchmark, condition), with the graded cells
that one engine decided alone (``decided_by_one``: the others abstained; none at quorum 2).
A results file from before the quorum has no such count: the column is empty there.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

from regrade.grading.verdicts import ARTIFACT, CONFIRMED_FAIL, ENGINES_DISAGREE, FALSE_PASS, INVALID_GOLDEN, UNEVALUABLE
from regrade.results.records import CaseRecord

SUMMARY_COLUMNS = ["stack", "benchmark", "condition", "cases", "failures", "formula_failures", "artifact",
                   "genuinely_wrong", "unevaluable", "engines_disagree", "invalid_golden", "false_pass",
                   "decided_by_one"]
CELL_COLUMNS = ["stack", "benchmark", "condition", "task_id", "case", "cell", "formula", "shallow", "engines", "golden",
                "reason"]
ALL = "(all)"
Listing = Literal["summary", "cells", "rules"]


@dataclass
class DiffListing:
    """What ``regrade diff`` prints and ``regrade.api.diff`` returns as a DataFrame: one listing's
    rows and columns, the results file's provenance, and what a reader should know of it."""

    by: Listing
    rows: list[dict[str, Any]]
    columns: list[str]
    provenance: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)


def listing(records: Iterable[CaseRecord], by: Listing = "summary") -> tuple[list[dict[str, Any]], list[str]]:
    """The rows and columns of one listing: per condition (``summary``), every differing cell
    with its reason (``cells``), or the engines' abstentions by rule (``rules``)."""
    if by == "cells":
        return differing_cells(records), CELL_COLUMNS
    if by == "rules":
        return abstentions(records), ABSTENTION_COLUMNS
    if by != "summary":
        raise ValueError(f"by is summary, cells or rules, not {by!r}")
    return summary(records), SUMMARY_COLUMNS


def summary(records: Iterable[CaseRecord]) -> list[dict]:
    """One row per (stack, benchmark, condition), then one for everything."""
    groups: dict[tuple[str, str, str], list[CaseRecord]] = defaultdict(list)
    everything: list[CaseRecord] = []
    for record in records:
        groups[(record.stack, record.benchmark, record.condition)].append(record)
        everything.append(record)
    rows = [_row(key, group) for key, group in sorted(groups.items())]
    if len(groups) > 1:
        rows.append(_row((ALL, ALL, ALL), everything))
    return rows


def _row(key: tuple[str, str, str], records: list[CaseRecord]) -> dict:
    failures = [r for r in records if r.shallow_pass is False]
    formula_failures = [r for r in failures if any(c.formula for c in r.cells)]
    count = lambda verdict: sum(r.verdict == verdict for r in formula_failures)  # noqa: E731
    return {
        "stack": key[0], "benchmark": key[1], "condition": key[2],
        "cases": len(records),
        "failures": len(failures),
        "formula_failures": len(formula_failures),
        "artifact": count(ARTIFACT),
        "genuinely_wrong": count(CONFIRMED_FAIL),
        "unevaluable": count(UNEVALUABLE),
        "engines_disagree": count(ENGINES_DISAGREE),
        "invalid_golden": count(INVALID_GOLDEN),
        "false_pass": sum(r.verdict == FALSE_PASS for r in records),
        "decided_by_one": (sum(r.decided_by_one for r in records)
                           if all("decided_by_one" in r.model_fields_set for r in records) else None),
    }


def sentence(row: dict) -> str:
    """The study's sentence for one summary row."""
    return (f"Of {row['formula_failures']} formula-bearing failures ({row['failures']} failures in {row['cases']} cases), "
            f"{row['artifact']} were already correct (artifact), {row['genuinely_wrong']} genuinely wrong, "
            f"{row['unevaluable']} unevaluable, {row['engines_disagree']} split the engines and "
            f"{row['invalid_golden']} had a golden that cannot judge; {row['false_pass']} passes were wrong."
            + ("" if row["decided_by_one"] is None else f" {row['decided_by_one']} graded cells were decided by one engine alone."))


def differing_cells(records: Iterable[CaseRecord]) -> list[dict]:
    """Every graded cell that either grading failed, with the reason: where the shallow and the
    full grade differ, why; ``wrong-value`` where both failed it."""
    rows = []
    for record in records:
        for cell in record.cells:
            engines = "; ".join(f"{name}={_text(value)}" for name, value in sorted(cell.engines.items()))
            rows.append({
                "stack": record.stack, "benchmark": record.benchmark, "condition": record.condition,
                "task_id": record.task_id, "case": record.case, "cell": cell.cell, "formula": cell.formula,
                "shallow": _text(cell.shallow), "engines": engines or _text(cell.full),
                "golden": _text(cell.golden), "reason": cell.reason,
            })
    return rows


ABSTENTION_COLUMNS = ["rule", "engine", "cells", "cases"]


def abstentions(records: Iterable[CaseRecord]) -> list[dict]:
    """The engines' abstentions on graded cells, counted by rule id (by reason where no rule
    made one: a timeout, a workbook an engine could not load): cells and cases per rule."""
    cells: dict[tuple[str, str], int] = defaultdict(int)
    cases: dict[tuple[str, str], set[tuple]] = defaultdict(set)
    for record in records:
        for cell in record.cells:
            for engine, value in cell.engines.items():
                if isinstance(value, dict) and "cannot_evaluate" in value:
                    key = (value.get("rule") or value["cannot_evaluate"], engine)
                    cells[key] += 1
                    cases[key].add((record.condition, record.task_id, record.case, record.trial))
    return [{"rule": rule, "engine": engine, "cells": count, "cases": len(cases[(rule, engine)])}
            for (rule, engine), count in sorted(cells.items(), key=lambda item: (-item[1], item[0]))]


def _text(value: object) -> object:
    if isinstance(value, dict) and "cannot_evaluate" in value:
        return f"(cannot evaluate: {value.get('rule') or value['cannot_evaluate']})"
    return value
