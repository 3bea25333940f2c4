"""One pipeline per workbook, the same for every full engine.

screen once → the linked copy, when the workbook caches other workbooks' values
(:mod:`regrade.workbook.external`) → nothing more when the rules every engine shares
(:mod:`regrade.engines.unrepeatable`, which read formulas, never values) make an abstention of
every graded cell: those are the answer, and the file is not computed → the cone copy, when
the workbook asks for much work beyond what the graded cells need (:mod:`regrade.workbook.cone_copy`) → analyse (the formula graph built at most once, on demand) → the engine
computes → its own rules and its totals mending (inside :meth:`ComputingEngine.compute`)
→ its values as Excel would store them (:func:`regrade.values.as_stored`: ``#CALC!`` is
saved as ``#VALUE!``) → the rules every engine shares (:mod:`regrade.engines.unrepeatable`). An engine opened
through the registry runs all of it in its worker process, under the workbook's time and
memory limit (:mod:`regrade.engines.isolation`). Everything before the engine computes is the
same for every engine: in a case worker, the first engine to prepare a workbook leaves it for
the others (:mod:`regrade.engines.preparation`).
"""

from __future__ import annotations

import importlib
import time
from contextlib import nullcontext
from importlib import metadata
from pathlib import Path
from typing import ClassVar, Sequence

from regrade.engines.base import EngineBase, EngineSettings
from regrade.engines.preparation import Preparation, leave, prepared_cpu_s, preparation_key, taken
from regrade.engines.unrepeatable import abstain_where_no_engine_can, shared_abstentions
from regrade.values import CannotEvaluate, CellRef, WorkbookValues, as_stored
from regrade.workbook.analysis import WorkbookAnalysis
from regrade.workbook.cone_copy import cone_workbook
from regrade.workbook.external import linked_workbook


class ComputingEngine(EngineBase):
    """A full engine: it recomputes formulas; :meth:`compute` is its own part of the pipeline."""

    full: ClassVar[bool] = True
    narrow_to_cone: bool = True  # compute the cone copy of a heavy workbook; False: bench/cone_copy.py's baseline

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        analysis = WorkbookAnalysis(path)
        if analysis.failure is not None:
            return WorkbookValues(failure=analysis.failure)
        if self.settings.as_grader:  # a grader's recalculation reads no external link's cache
            return abstain_where_no_engine_can(analysis, self.compute(analysis, cells))
        key = preparation_key(path, cells) if self.narrow_to_cone else None
        if (found := taken(key)) is not None:  # another engine of this case prepared it
            prepared, folder = found
            if prepared.abstained:
                return WorkbookValues(sheet_names=prepared.sheet_names, cells={ref: prepared.unrepeatable[ref] for ref in cells})
            ready = analysis if prepared.computed is None else WorkbookAnalysis(folder / prepared.computed)
            return _finished(self.compute(ready, cells), prepared.unrepeatable)
        started = time.process_time()
        with linked_workbook(path) as linked:
            if linked != path:
                analysis = WorkbookAnalysis(linked)
            unrepeatable = shared_abstentions(analysis, cells)  # worked out once, before computing
            if cells and all(ref in unrepeatable for ref in cells):  # nothing an engine computes would be read
                graph = analysis.graph()
                names = list(graph.sheets) if graph is not None else []
                leave(key, Preparation(time.process_time() - started, None, unrepeatable, True, names))
                return WorkbookValues(sheet_names=names, cells={ref: unrepeatable[ref] for ref in cells})
            narrowed = cone_workbook(linked, analysis.graph, cells) if self.narrow_to_cone else nullcontext(linked)
            with narrowed as computed:
                leave(key, Preparation(time.process_time() - started, None, unrepeatable),
                      computed if computed != path else None)
                values = self.compute(analysis if computed == linked else WorkbookAnalysis(computed), cells)
            return _finished(values, unrepeatable)

    def prepared_cpu_s(self, path: Path, cells: Sequence[CellRef]) -> float:
        """The CPU another engine of this case spent preparing ``path`` for ``cells``, which this
        one takes instead of preparing it (:mod:`regrade.engines.preparation`); 0 if none did."""
        return prepared_cpu_s(path, cells) if self.narrow_to_cone and not self.settings.as_grader else 0.0

    def compute(self, analysis: WorkbookAnalysis, cells: Sequence[CellRef]) -> WorkbookValues:
        """The engine's values of ``cells``, its own rules applied; never raises for a bad file."""
        raise NotImplementedError


def _finished(values: WorkbookValues, unrepeatable: dict[CellRef, CannotEvaluate]) -> WorkbookValues:
    """An engine's values as Excel would store them, with the abstentions every engine shares."""
    values.cells = {ref: as_stored(value) for ref, value in values.cells.items()}
    if values.failure is None:
        values.cells.update({ref: made for ref, made in unrepeatable.items() if ref in values.cells})
    return values


class PythonPackageEngine(ComputingEngine):
    """A full engine that is a Python package: its availability and version.

    The package is imported when the engine is made, so that forked workers inherit it
    instead of importing it once per workbook.
    """

    package: ClassVar[str]  # the import name, which is also the name on PyPI here

    def __init__(self, settings: EngineSettings = EngineSettings()) -> None:
        super().__init__(settings)
        try:
            importlib.import_module(self.package)
        except ImportError:
            pass

    def version(self) -> str:
        try:
            return f"{self.package} {metadata.version(self.package)}"
        except metadata.PackageNotFoundError:
            return "not installed"

    def unavailable_reason(self) -> str | None:
        try:
            importlib.import_module(self.package)
        except ImportError as exc:
            return f"the {self.package} package is not installed ({exc}); pip install {self.package}"
        return None
