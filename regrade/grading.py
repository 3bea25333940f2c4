"""Grading one case: the golden's values against one engine's view of the output.

A :class:`Grade` says whether the output passes under a policy with one engine's
values: ``passed`` is True, False, or None when the engine abstained on a graded
cell or could not evaluate the workbook (never a fail in disguise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import openpyxl

from engines.base import EXCEL_ERROR_CODES, CannotEvaluate, CellRef, CellResult, Engine, ExcelError, WorkbookValues
from regrade.compare import Policy, SheetExtent, TargetError

# A workbook failure that is the output's own fault: the grade is a genuine fail.
OUTPUT_FAULTS = frozenset({"missing-file", "unreadable-output"})


@dataclass(frozen=True)
class CellOutcome:
    """One graded cell that did not simply match: a mismatch or an abstention."""

    ref: CellRef
    golden: CellResult
    value: CellResult
    formula: str | None

    @property
    def abstained(self) -> bool:
        return isinstance(self.value, CannotEvaluate)


@dataclass
class Grade:
    engine: str
    passed: bool | None
    reason: str | None = None
    message: str = ""
    cells: list[CellOutcome] = field(default_factory=list)
    formulas: dict[CellRef, str] = field(default_factory=dict)
    values: dict[CellRef, CellResult] = field(default_factory=dict)


@dataclass
class Golden:
    """The golden workbook's sheets and cached values (Excel's own results)."""

    path: Path
    extents: list[SheetExtent]
    book: openpyxl.Workbook

    def value(self, ref: CellRef) -> CellResult:
        value = self.book[ref.sheet].cell(ref.row, ref.column).value
        if isinstance(value, str) and value in EXCEL_ERROR_CODES:
            return ExcelError(value)
        return value


class GoldenError(Exception):
    """The golden workbook cannot be read."""


def load_golden(path: Path) -> Golden:
    if not path.is_file():
        raise GoldenError(f"golden file {path} does not exist")
    try:
        book = openpyxl.load_workbook(path, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds on a broken file
        raise GoldenError(f"golden file {path} cannot be read: {exc}") from exc
    extents = [SheetExtent(ws.title, ws.max_row, ws.max_column) for ws in book.worksheets]
    return Golden(path, extents, book)


def grade(policy: Policy, targets: list[CellRef], golden: Golden, engine: str, values: WorkbookValues) -> Grade:
    """Compare an engine's values of the output with the golden under ``policy``."""
    if values.failure is not None:
        fault = values.failure.reason in OUTPUT_FAULTS
        reason = "missing-output" if values.failure.reason == "missing-file" else values.failure.reason
        return Grade(engine, False if fault else None, reason, values.failure.detail)
    result = Grade(engine, True, formulas=values.formulas, values=values.cells)
    missing_sheets: set[str] = set()
    for ref in targets:
        if ref not in values.cells or (policy.exact_sheet_names and ref.sheet not in values.sheet_names):
            missing_sheets.add(ref.sheet)
            continue
        expected, actual = golden.value(ref), values.cells[ref]
        if isinstance(actual, CannotEvaluate) or not policy.equal(expected, actual):
            result.cells.append(CellOutcome(ref, expected, actual, values.formulas.get(ref)))
    mismatches = [c for c in result.cells if not c.abstained]
    if missing_sheets:
        result.passed, result.reason = False, "missing-sheet"
        result.message = f"the output has no sheet {', '.join(sorted(map(repr, missing_sheets)))}"
    elif mismatches:
        result.passed, result.reason = False, "wrong-value"
        result.message = f"{len(mismatches)} of {len(targets)} graded cells differ from the golden"
    elif result.cells:
        abstentions = sorted({f"{c.value.reason}: {c.value.detail}" for c in result.cells if isinstance(c.value, CannotEvaluate)})
        result.passed, result.reason = None, result.cells[0].value.reason  # type: ignore[union-attr]
        result.message = f"{engine} cannot evaluate {len(result.cells)} graded cells ({'; '.join(abstentions)})"
    return result
