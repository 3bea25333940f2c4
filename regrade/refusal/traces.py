"""What a run left for each test case of a refusal-slice pack: an output, an abstention, and the
covariates its harness logged. Read from an outputs folder or a manifest.

- **An outputs folder**: test case ``n`` of task ``id`` is an output ``<n>_<id>_output.xlsx``, or
  an abstention: ``<n>_<id>_abstain.json`` (or ``.txt``) holding the reason. No covariates.
- **A manifest** (CSV or JSON Lines, one row per case; paths relative to the manifest):
  ``condition, task_id, case``, then ``output_path`` where the case wrote one and
  ``abstained`` (true/false, 1/0, yes/no) where it stopped, ``abstain_reason`` optionally; and
  any of the covariates ``retries``, ``tool_calls``, ``wall_s``, ``tokens``. A covariate a row
  leaves empty is absent for that case, never 0.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from regrade.results.records import passed_value
from regrade.runs.cases import RunError, read_rows

ABSTAIN_SUFFIXES = ("_abstain.json", "_abstain.txt")
COVARIATES = ("retries", "tool_calls", "wall_s", "tokens")


@dataclass(frozen=True)
class Trace:
    """What one test case left: its output (or None), whether it abstained, its covariates."""

    output: Path | None
    abstained: bool
    covariates: dict[str, float] = field(default_factory=dict)


RunTraces = dict[tuple[str, int], Trace]  # (task id, case) -> what it left


def folder_traces(folder: Path, cases: list[tuple[str, int]]) -> RunTraces:
    """Each case's trace in an outputs folder."""
    found: RunTraces = {}
    for task_id, case in cases:
        output = folder / f"{case}_{task_id}_output.xlsx"
        abstained = any((folder / f"{case}_{task_id}{suffix}").is_file() for suffix in ABSTAIN_SUFFIXES)
        found[(task_id, case)] = Trace(output if output.is_file() else None, abstained)
    return found


def manifest_traces(manifest: Path) -> dict[str, RunTraces]:
    """Each condition's traces in a manifest (see the module docstring)."""
    if not manifest.is_file():
        raise RunError(f"manifest {manifest} does not exist")
    found: dict[str, RunTraces] = {}
    for number, row in enumerate(read_rows(manifest), start=1):
        missing = [c for c in ("condition", "task_id", "case") if row.get(c) in (None, "")]
        if missing:
            raise RunError(f"{manifest} row {number} lacks {', '.join(missing)}")
        try:
            abstained = row.get("abstained") not in (None, "") and passed_value(row["abstained"])
            case = int(row["case"])
            covariates = {name: float(row[name]) for name in COVARIATES if row.get(name) not in (None, "")}
        except ValueError as exc:
            raise RunError(f"{manifest} row {number}: {exc}") from None
        output = manifest.parent / str(row["output_path"]) if row.get("output_path") not in (None, "") else None
        traces = found.setdefault(str(row["condition"]), {})
        key = (str(row["task_id"]), case)
        if key in traces:
            raise RunError(f"{manifest} row {number}: task {key[0]} case {case} of condition {row['condition']} "
                           "is given twice")
        traces[key] = Trace(output if output is not None and output.is_file() else None, bool(abstained), covariates)
    return found


def covariate_summary(traces: RunTraces) -> dict[str, dict[str, float | int] | None]:
    """Per covariate: the median and total over the cases that logged it, and how many did;
    None where no case did (absent, never 0)."""
    summary: dict[str, dict[str, float | int] | None] = {}
    for name in COVARIATES:
        values = [t.covariates[name] for t in traces.values() if name in t.covariates]
        summary[name] = ({"median": statistics.median(values), "total": sum(values), "cases": len(values)}
                         if values else None)
    return summary
