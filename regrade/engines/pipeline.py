"""One pipeline per workbook, the same for every full engine.

screen once → analyse (the formula graph built at most once, on demand) → the engine
computes → its own rules and its totals mending (inside :meth:`ComputingEngine.compute`)
→ the rules every engine shares (:mod:`regrade.engines.unrepeatable`). An engine opened
through the registry runs all of it in its worker process, under the workbook's time and
memory limit (:mod:`regrade.engines.isolation`).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Sequence

from regrade.engines.base import EngineBase, EngineSettings
from regrade.engines.unrepeatable import abstain_where_no_engine_can
from regrade.values import CellRef, WorkbookValues
from regrade.workbook.analysis import WorkbookAnalysis


class ComputingEngine(EngineBase):
    """A full engine: it recomputes formulas; :meth:`compute` is its own part of the pipeline."""

    full: ClassVar[bool] = True

    def __init__(self, settings: EngineSettings = EngineSettings()) -> None:
        super().__init__(settings)

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        analysis = WorkbookAnalysis(path)
        if analysis.failure is not None:
            return WorkbookValues(failure=analysis.failure)
        values = self.compute(analysis, cells)
        return abstain_where_no_engine_can(analysis, values)

    def compute(self, analysis: WorkbookAnalysis, cells: Sequence[CellRef]) -> WorkbookValues:
        """The engine's values of ``cells``, its own rules applied; never raises for a bad file."""
        raise NotImplementedError
