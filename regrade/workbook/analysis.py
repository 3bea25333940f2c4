"""What one workbook's pipeline knows about the file, each part worked out at most once.

An engine's evaluation of a workbook is one pipeline (:mod:`regrade.engines.pipeline`):
screen the file once, analyse it, compute, apply the rules, mend the totals. Every step
asks this object, so the screening runs once and the formula graph, which costs a full
openpyxl load, is built at most once, and only when a step needs it.
"""

from __future__ import annotations

from pathlib import Path

from regrade.values import WorkbookFailure
from regrade.workbook.cones import FormulaGraph, load_graph
from regrade.workbook.screening import Screening, screen


class WorkbookAnalysis:
    """The screening of one workbook and, on demand, its formula graph."""

    def __init__(self, path: Path):
        self.path = path
        self.screening: Screening = screen(path)
        self._graph: FormulaGraph | None = None
        self._graph_read = False

    @property
    def failure(self) -> WorkbookFailure | None:
        """Why no engine may open the file (hostile, broken, missing), or None."""
        return self.screening.failure

    def graph(self) -> FormulaGraph | None:
        """The formula graph, built on first use; None when openpyxl cannot read the file."""
        if not self._graph_read:
            self._graph, self._graph_read = load_graph(self.path), True
        return self._graph
