"""The records of a results file as pydantic models: provenance first, then one record per case.

A results file (JSON Lines, :mod:`regrade.results.files`) is the contract between ``regrade rescore``
and everything that reads it (``table``, ``diff``, the Python API, other people's scripts).
These models say its fields and their types; ``Results.read`` validates a file against them,
so a field that is missing or of the wrong type is an error naming the line, not a KeyError later.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from regrade.results.files import ResultsError, read_results

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


class CaseRecord(BaseModel):
    """One graded output: who, which task and case, both grades, the verdict and its reasons."""

    model_config = ConfigDict(extra="allow")

    record: Literal["case"] = "case"
    stack: str
    benchmark: str
    condition: str
    task_id: str
    case: int
    trial: int = 1
    output_path: str
    answer_path: str
    original_pass: bool | None = None
    original_grader: str | None = None  # what gave original_pass (Harbor's verifier reward, the manifest ...)
    shallow_pass: bool | None
    full_pass: bool | None
    verdict: str
    reasons: list[str]
    message: str = ""
    decided_by_one: int = 0
    cells: list[CellRecord] = []


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
    def from_records(cls, provenance: dict | None, records: list[dict], where: str = "results") -> Results:
        try:
            made = Provenance.model_validate(provenance) if provenance is not None else None
        except ValidationError as exc:
            raise ResultsError(f"{where}: provenance record: {_first(exc)}") from None
        cases = []
        for number, record in enumerate(records, start=1):
            try:
                cases.append(CaseRecord.model_validate(record))
            except ValidationError as exc:
                raise ResultsError(f"{where}: case record {number}: {_first(exc)}") from None
        return cls(provenance=made, cases=cases)

    def records(self) -> list[dict]:
        """The case records as plain dicts, as the results file holds them."""
        return [case.model_dump() for case in self.cases]

    def frame(self) -> pd.DataFrame:
        """One row per case (cells left out: see :func:`regrade.api.diff` for them)."""
        return pd.DataFrame([case.model_dump(exclude={"cells"}) for case in self.cases])


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}"
