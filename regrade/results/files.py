"""Results files: JSON Lines, a provenance record first, then one record per case.

A results file is written to a temporary name beside the target and renamed into
place only when complete, so an interrupted run never leaves a truncated file
where a complete one was.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Iterable, Iterator

from regrade.grading.rescore import CaseResult
from regrade.results.provenance import FORMAT_VERSION, regrade_version
from regrade.runs.cases import Case
from regrade.values import CannotEvaluate, CellResult, ExcelError


class ResultsError(Exception):
    """A results file that cannot be read."""


def json_value(value: CellResult | object) -> object:
    """A cell value as JSON: errors as their code, abstentions as an object, dates as ISO text."""
    if isinstance(value, ExcelError):
        return value.code
    if isinstance(value, CannotEvaluate):
        return {"cannot_evaluate": value.reason, "rule": value.rule, "detail": value.detail}
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds() / 86400
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def case_fields(case: Case) -> dict:
    """What identifies a case in a results record."""
    return {
        "record": "case",
        "stack": case.stack,
        "benchmark": case.benchmark,
        "condition": case.condition,
        "task_id": case.task_id,
        "case": case.case,
        "trial": case.trial,
        "output_path": str(case.output_path),
        "answer_path": str(case.answer_path),
        "original_pass": case.original_pass,
        "original_grader": case.original_grader,
    }


def grading_fields(result: CaseResult) -> dict:
    """How a case was graded: what the results cache keeps (it depends on content, not on names)."""
    return {
        "shallow_pass": result.shallow_pass,
        "full_pass": result.full_pass,
        "verdict": result.verdict,
        "reasons": result.reasons,
        "message": result.message,
        "decided_by_one": result.decided_by_one,
        "cells": [
            {
                "cell": str(c.ref),
                "formula": c.formula,
                "golden": json_value(c.golden),
                "shallow": json_value(c.shallow),
                "full": json_value(c.full),
                "reason": c.reason,
                "engines": {name: json_value(value) for name, value in c.engines.items()},
                "decided_by": c.decided_by,
            }
            for c in result.cells
        ],
    }


def write_jsonl(path: Path, records: Iterable[dict]) -> int:
    """Write records atomically; returns how many were written."""
    count = 0
    with atomic_file(path) as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            count += 1
    return count


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[IO[str]]:
    """A text file that appears at ``path`` complete, or not at all (a hidden ``.partial`` beside it meanwhile)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", suffix=".partial", delete=False
    )
    try:
        os.chmod(handle.name, 0o666 & ~_umask())  # a temporary file is private; the result is not
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_results(path: Path) -> tuple[dict | None, list[dict]]:
    """The provenance record (if any) and the case records of a results file."""
    if not path.is_file():
        raise ResultsError(f"results file {path} does not exist")
    provenance, cases = None, []
    with path.open(encoding="utf-8") as handle:
        try:
            lines = list(handle)
        except UnicodeDecodeError:
            raise ResultsError(f"{path} is not a results file (JSON Lines text): is it a workbook or another binary "
                               "file?") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            _refuse_one_document(path, lines)
            raise ResultsError(f"{path} line {number} is not JSON: {exc}") from exc
        if not isinstance(record, dict):
            _refuse_one_document(path, lines)
            raise ResultsError(f"{path} line {number} is not a JSON object")
        kind = record.get("record", "case")
        if kind == "provenance":
            provenance = record
        elif kind == "case":
            cases.append(record)
    if not cases:
        raise ResultsError(f"{path} holds no case records")
    return provenance, cases


def _refuse_one_document(path: Path, lines: list[str]) -> None:
    """A :class:`ResultsError` saying so where the file is one JSON document (a benchmark's
    dataset.json, a JSON report) rather than JSON Lines of records."""
    try:
        document = json.loads("".join(lines))
    except json.JSONDecodeError:
        return
    what = f"a list of {len(document)} items" if isinstance(document, list) else type(document).__name__
    hint = " (is it a benchmark's dataset.json? that goes to regrade rescore --dataset)" \
        if isinstance(document, list) and document and isinstance(document[0], dict) and "answer_position" in document[0] \
        else ""
    raise ResultsError(f"{path} is one JSON document ({what}), not JSON Lines{hint}: this reads results files "
                       "(regrade rescore -o) and outcomes files, one JSON record per line (or CSV)")


def require_rescored(path: Path, records: list[dict]) -> None:
    """A :class:`ResultsError` unless every record is a rescore result (with a verdict)."""
    if not all("verdict" in r for r in records):
        raise ResultsError(f"{path} holds records without a verdict: not the output of `regrade rescore` (another "
                           "grader's outcomes go to `regrade table`; a results file of an old regrade needs rescoring)")


def results_warnings(path: Path, provenance: dict | None) -> list[str]:
    """What a reader of a results file should know before trusting its numbers: a file of another
    format version or regrade version, or one that does not say what made it."""
    if provenance is None:
        return [f"warning: {path} has no provenance record: which regrade and settings made it is unknown"]
    warnings = []
    if provenance.get("format_version") != FORMAT_VERSION:
        warnings.append(f"warning: {path} is results format {provenance.get('format_version')}, this regrade reads "
                        f"format {FORMAT_VERSION}: fields may be missing or mean something else")
    if provenance.get("regrade_version") != regrade_version():
        warnings.append(f"warning: {path} was made by regrade {provenance.get('regrade_version')}, this is "
                        f"{regrade_version()}: its verdicts may differ from what this version gives")
    return warnings
