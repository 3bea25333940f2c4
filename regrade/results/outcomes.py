"""Outcomes: the case records of a regrade results file, or any grader's pass/fail per task (CSV
or JSON Lines), read into the typed records the paired tables take (:class:`Outcome`)."""

from __future__ import annotations

import csv
from pathlib import Path

from regrade.results.files import ResultsError, read_results
from regrade.results.records import Outcome, as_outcomes, passed_value

OUTCOME_COLUMNS = ("stack", "benchmark", "condition", "task_id", "passed")


def read_outcomes(path: Path) -> tuple[dict | None, list[Outcome]]:
    """Case records of a regrade results file, or per-task outcomes from any grader.

    An outcomes file is CSV or JSON Lines with ``stack, benchmark, condition, task_id,
    passed`` and optional ``case`` and ``trial``; ``passed`` is true/false, 1/0 or pass/fail.
    """
    if not path.is_file():
        raise ResultsError(f"results file {path} does not exist")
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8-sig", newline="") as handle:
            rows = list(csv.DictReader(handle))
        return None, as_outcomes(_outcome_rows(path, rows), str(path))
    provenance, records = read_results(path)
    if records and all("verdict" in r for r in records):
        return provenance, as_outcomes(records, str(path))
    return provenance, as_outcomes(_outcome_rows(path, records), str(path))


def _outcome_rows(path: Path, rows: list[dict]) -> list[dict]:
    if not rows:
        raise ResultsError(f"{path} holds no outcomes")
    out = []
    for number, row in enumerate(rows, start=1):
        missing = [c for c in OUTCOME_COLUMNS if row.get(c) in (None, "")]
        if missing:
            raise ResultsError(f"{path} row {number} lacks {', '.join(missing)}")
        try:
            record = {**row, "passed": passed_value(row["passed"])}
        except ValueError as exc:
            raise ResultsError(f"{path} row {number}: passed {exc}") from None
        for optional in ("case", "trial"):
            if record.get(optional) in (None, ""):
                record.pop(optional, None)
            else:
                try:
                    record[optional] = int(record[optional])
                except ValueError:
                    raise ResultsError(f"{path} row {number}: {optional} {row[optional]!r} is not a whole number") from None
        out.append(record)
    return out
