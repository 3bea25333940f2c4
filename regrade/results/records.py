"""The records of a results file as pydantic models: provenance first, then one record per case.

A results file (JSON Lines, :mod:`regrade.results.files`) is the contract between ``regrade rescore``
and everything that reads it (``table``, ``diff``, the Python API, other people's scripts).
These models say its fields and their types; ``Results.read`` validates a file against them,
so a field that is missing or of the wrong type is an error naming the line, not a KeyError later.

The records are typed from end to end: a rescore makes :class:`CaseRecord` objects, and the
summary, the paired tables, the diff, the report and the audits read their attributes. What
the paired tables take is an :class:`Outcome`, of which a CaseRecord is one; another grader's
outcomes file or an inspect_ai log gives Outcomes too (:func:`as_outcomes`: a row's ``passed``
is its original grade).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from regrade.results.files import ResultsError, read_results, require_rescored

if TYPE_CHECKING:  # imported where a DataFrame is made: reading records needs no pandas
    import pandas as pd

PASS_WORDS = {"true": True, "1": True, "pass": True, "yes": True, "false": False, "0": False, "fail": False, "no": False}


def passed_value(value: object) -> bool:
    """A grade as outcome files write it: a boolean, 0 or 1, or (in any case) true/false,
    pass/fail, yes/no. Anything else is a ValueError: a text is never read as a pass for being non-empty."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in PASS_WORDS:
        return PASS_WORDS[value.strip().lower()]
    raise ValueError(f"{value!r} is not a pass or a fail (use true/false, 1/0, pass/fail or yes/no)")


JsonValue = Any  # a cell value as JSON (regrade.results.files.json_value): a number, a text (an error is its code), a boolean, null, or {"cannot_evaluate": ...}


class Provenance(BaseModel):
    """What made a results file: versions, settings, engines and the sha256 of every input file."""

    model_config = ConfigDict(extra="allow")

    record: Literal["provenance"] = "provenance"
    format_version: int
    regrade_version: str
    git_revision: str | None = None
    python: str
    created: str
    settings: dict[str, Any]
    engines: dict[str, str]
    inputs: dict[str, str | None]
    left_out: dict[str, list[str]] = {}  # the dataset's tasks not graded, by why (regrade.runs.load.LeftOut)


class CellRecord(BaseModel):
    """One graded cell on which the shallow and full grades were compared."""

    model_config = ConfigDict(extra="allow")

    cell: str
    formula: str | None = None
    golden: JsonValue = None
    shallow: JsonValue = None
    full: JsonValue = None
    reason: str | None = None
    engines: dict[str, JsonValue] = {}
    decided_by: int | None = None  # engines that computed the cell and agreed; 0 undecided; None: no engine ran


class Outcome(BaseModel):
    """One graded unit as the paired tables take it: who, which task, case and trial, and its
    grades. ``verdict`` is None for an outcome that is no regrade result (another grader's
    outcomes file, an inspect_ai sample), which has its original grade only."""

    model_config = ConfigDict(extra="allow")

    stack: str = "default"
    benchmark: str = ""
    condition: str
    task_id: str
    case: int = 1
    trial: int = 1
    original_pass: bool | None = None
    original_grader: str | None = None  # what gave original_pass (Harbor's verifier reward, the manifest ...)
    shallow_pass: bool | None = None
    full_pass: bool | None = None
    verdict: str | None = None
    reasons: list[str] = []
    # on a refusal slice (regrade.refusal): the task's kind, what the harness logged for the case
    # (retries, tool_calls, wall_s, tokens, cost_usd; a trial's or sample's on its first case), and
    # the locked protocol's channel (scored, exploratory, or unlocked: none given), with why a
    # run that contradicts its protocol is exploratory
    slice_kind: Literal["ordinary", "negative"] | None = None
    covariates: dict[str, float] = {}
    channel: Literal["scored", "exploratory", "unlocked"] | None = None
    drift: list[str] = []

    @field_validator("task_id", "condition", "stack", "benchmark", mode="before")
    @classmethod
    def _as_text(cls, value: object) -> object:
        """A task id written as a number (``123``) is the text the dataset names it by."""
        return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value

    @field_validator("case", "trial", mode="before")
    @classmethod
    def _one_when_absent(cls, value: object) -> object:
        return 1 if value in (None, "") else value

    def grade(self, grading: str) -> bool | None:
        """The grade by ``grading``: original (the run's own, else the value-only grade), shallow or full."""
        if grading == "original":
            return self.original_pass if self.original_pass is not None else bool(self.shallow_pass)
        if grading == "shallow":
            return self.shallow_pass
        if grading == "full":
            return self.full_pass
        raise ValueError(f"grading is original, shallow or full, not {grading!r}")

    @property
    def rescored(self) -> bool:
        """A regrade result (a verdict, shallow and full grades), not another grader's outcome."""
        return self.verdict is not None


class CaseRecord(Outcome):
    """One graded output: who, which task and case, both grades, the verdict and its reasons."""

    record: Literal["case"] = "case"
    stack: str  # a results file names them, where another grader's outcomes may not
    benchmark: str
    case: int
    output_path: str
    answer_path: str
    shallow_pass: bool | None
    full_pass: bool | None
    verdict: str
    reasons: list[str]
    message: str = ""
    decided_by_one: int = 0
    cells: list[CellRecord] = []

    def as_json(self) -> dict[str, Any]:
        """The record as the results file holds it: ``"record": "case"``, who and which case, the
        files, the grades, the verdict, the cells (then any other field)."""
        fields = self.model_dump(exclude={"record"})
        for name, unset in _SLICE_FIELDS.items():  # a record outside a refusal slice reads as before
            if fields.get(name) == unset:
                fields.pop(name, None)
        return {"record": "case", **{name: fields.pop(name) for name in _FILE_ORDER if name in fields}, **fields}


_FILE_ORDER = ("stack", "benchmark", "condition", "task_id", "case", "trial", "output_path", "answer_path", "original_pass",
               "original_grader", "shallow_pass", "full_pass", "verdict", "reasons", "message", "decided_by_one", "cells")
_SLICE_FIELDS: dict[str, Any] = {"slice_kind": None, "covariates": {}, "channel": None, "drift": []}  # left out of a record without them


def as_outcomes(rows: Iterable[Outcome | Mapping[str, Any]], where: str = "outcomes") -> list[Outcome]:
    """Typed outcomes from records read or made elsewhere, each an :class:`Outcome` (a regrade
    results record keeps its verdict and grades; its other fields ride along): a row without a
    verdict has its ``passed`` (true/false, 1/0, pass/fail, yes/no) as its original grade. A row
    that is none is a :class:`ResultsError` naming it."""
    typed: list[Outcome] = []
    for number, row in enumerate(rows, start=1):
        if isinstance(row, Outcome):
            typed.append(row)
            continue
        fields = {k: v for k, v in row.items() if k != "passed"}
        try:
            if "passed" in row and row.get("original_pass") is None and row.get("verdict") is None:
                fields["original_pass"] = None if row["passed"] is None else passed_value(row["passed"])
            typed.append(Outcome.model_validate(fields))
        except ValidationError as exc:
            raise ResultsError(f"{where}: record {number}: {_first(exc)}") from None
        except ValueError as exc:
            raise ResultsError(f"{where}: record {number} (task {row.get('task_id')}, condition "
                               f"{row.get('condition')}): {exc}") from None
    return typed


class Results(BaseModel):
    """A whole results file."""

    provenance: Provenance | None
    cases: list[CaseRecord]

    @classmethod
    def read(cls, path: str | Path) -> Results:
        """A results file (a path or its text), validated record by record."""
        provenance, records = read_results(Path(path))
        return cls.from_records(provenance, records, str(path))

    @classmethod
    def from_records(cls, provenance: dict[str, Any] | None, records: Sequence[CaseRecord | dict[str, Any]],
                     where: str = "results") -> Results:
        try:
            made = Provenance.model_validate(provenance) if provenance is not None else None
        except ValidationError as exc:
            raise ResultsError(f"{where}: provenance record: {_first(exc)}") from None
        cases = []
        for number, record in enumerate(records, start=1):
            try:
                cases.append(record if isinstance(record, CaseRecord) else CaseRecord.model_validate(record))
            except ValidationError as exc:
                raise ResultsError(f"{where}: case record {number}: {_first(exc)}") from None
        return cls(provenance=made, cases=cases)

    @classmethod
    def read_rescored(cls, path: Path) -> Results:
        """A ``regrade rescore`` results file; any other (another grader's outcomes) is a
        :class:`ResultsError` saying so."""
        provenance, records = read_results(path)
        require_rescored(path, records)
        return cls.from_records(provenance, records, str(path))

    def frame(self) -> pd.DataFrame:
        """One row per case (cells left out: see :func:`regrade.api.diff` for them)."""
        import pandas as pd

        return pd.DataFrame([case.model_dump(exclude={"cells"}) for case in self.cases])


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}"
