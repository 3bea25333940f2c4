"""What a run left for each test case of a refusal-slice pack: an output, an abstention, and the
covariates its harness logged. One convention, read from every run format regrade reads:

- **An outputs folder**: test case ``n`` of task ``id`` is an output ``<n>_<id>_output.xlsx``, or
  an abstention: ``<n>_<id>_abstain.json`` (or ``.txt``) holding the reason. No covariates.
- **A manifest** (CSV or JSON Lines, one row per case; paths relative to the manifest):
  ``condition, task_id, case``, then ``output_path`` where the case wrote one and
  ``abstained`` (true/false, 1/0, yes/no) where it stopped; and any of the covariates
  ``retries``, ``tool_calls``, ``wall_s``, ``tokens``, ``cost_usd``. A covariate a row leaves
  empty is absent for that case, never 0.
- **A Harbor job** (:mod:`regrade.refusal.harness_traces`): each trial's artifacts hold its
  outputs and its abstention files, named as in an outputs folder (harbor mirrors
  ``/app/output``); covariates from its ``result.json`` and the agent's trajectory.
- **inspect_ai logs** (:mod:`regrade.refusal.harness_traces`): a sample per task, its store
  holding ``abstained`` (true), ``abstain_reason`` and ``outputs`` (the workbooks it wrote);
  covariates from its usage, events, working time and error retries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from regrade.paired.refusal import COVARIATES
from regrade.results.records import passed_value
from regrade.runs.cases import RunError, read_rows

ABSTAIN_SUFFIXES = ("_abstain.json", "_abstain.txt")


@dataclass(frozen=True)
class Trace:
    """What one test case left: its output (or None), whether it abstained, its covariates."""

    output: Path | None
    abstained: bool
    covariates: dict[str, float] = field(default_factory=dict)


RunTraces = dict[tuple[str, int, int], Trace]  # (task id, case, trial) -> what it left


@dataclass
class ConditionTraces:
    """One condition's traces, with what its harness said of the run: the settings its own
    records name (for checking against a locked protocol) and what it could not match."""

    traces: RunTraces
    settings: dict[str, object] = field(default_factory=dict)  # model, temperature, retry_cap, tools ...
    notes: list[str] = field(default_factory=list)


def folder_traces(folder: Path, cases: list[tuple[str, int]]) -> ConditionTraces:
    """Each case's trace in an outputs folder."""
    return ConditionTraces({(task_id, case, 1): named_trace(folder, task_id, case) for task_id, case in cases})


def named_trace(folder: Path, task_id: str, case: int, covariates: dict[str, float] | None = None) -> Trace:
    """A case's trace among files named by the convention, in ``folder``."""
    output = folder / f"{case}_{task_id}_output.xlsx"
    abstained = any((folder / f"{case}_{task_id}{suffix}").is_file() for suffix in ABSTAIN_SUFFIXES)
    return Trace(output if output.is_file() else None, abstained, covariates or {})


def manifest_traces(manifest: Path) -> dict[str, ConditionTraces]:
    """Each condition's traces in a manifest (see the module docstring)."""
    if not manifest.is_file():
        raise RunError(f"manifest {manifest} does not exist")
    found: dict[str, ConditionTraces] = {}
    for number, row in enumerate(read_rows(manifest), start=1):
        missing = [c for c in ("condition", "task_id", "case") if row.get(c) in (None, "")]
        if missing:
            raise RunError(f"{manifest} row {number} lacks {', '.join(missing)}")
        try:
            abstained = row.get("abstained") not in (None, "") and passed_value(row["abstained"])
            case = int(row["case"])
            trial = int(row.get("trial") or 1)
            covariates = {name: float(row[name]) for name in COVARIATES if row.get(name) not in (None, "")}
        except ValueError as exc:
            raise RunError(f"{manifest} row {number}: {exc}") from None
        output = manifest.parent / str(row["output_path"]) if row.get("output_path") not in (None, "") else None
        traces = found.setdefault(str(row["condition"]), ConditionTraces({})).traces
        key = (str(row["task_id"]), case, trial)
        if key in traces:
            raise RunError(f"{manifest} row {number}: task {key[0]} case {case} trial {trial} of condition "
                           f"{row['condition']} is given twice")
        traces[key] = Trace(output if output is not None and output.is_file() else None, bool(abstained), covariates)
    return found
