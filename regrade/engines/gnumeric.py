"""gnumeric: ``ssconvert --recalc``, the recalculation some value-only graders run.

The workbook is recalculated into a temporary copy, whose cached values are then
read with openpyxl. gnumeric lacks AGGREGATE and other modern functions and
answers ``#NAME?`` for them: regrade reports that as an abstention
(``unsupported-function``), which is exactly the blindness a gnumeric-based grader
has. A formula gnumeric cannot parse (structured references) is written back as
``_xlfngnumeric.ERROR(...)``: an abstention too (``parse-error``). Unlike IronCalc and
LibreOffice, gnumeric does not mark unknown functions in the formula text, so an
``IFERROR`` around one goes unnoticed. gnumeric gives ``#NUM!`` for SUBTOTAL 101-111 (the
functions skipping hidden rows) and counts the rows a filter hides in 1-11: a graded
``=SUBTOTAL(n, ref, ...)`` is computed by regrade from gnumeric's values of its
references, and another cell whose value depends on such a SUBTOTAL abstains. Standing
for a grader's recalculation (``EngineSettings(as_grader=True)``: ``--shallow gnumeric``, the
``gnumeric-recalc`` grader), gnumeric keeps its own SUBTOTALs, as that grader sees them.
``INDEX`` over a one-row range gives ``#REF!`` in gnumeric where Excel gives a value
(docs/engines.md): a known infidelity, left for the consensus to outvote.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from regrade.processes.cpu_time import wall_backstop_s
from regrade.engines.base import EngineSettings
from regrade.engines.cached import CachedAreas, CachedEngine
from regrade.engines.pipeline import ComputingEngine
from regrade.engines.rules import abstention
from regrade.engines.tools import version_output
from regrade.engines.totals import TotalsDefects, mend_totals, skips_hidden_rows
from regrade.values import CellRef, ExcelError, WorkbookFailure, WorkbookValues
from regrade.workbook.analysis import WorkbookAnalysis
from regrade.workbook.sheets import mentions, resolve_sheet


def _ssconvert_version() -> str | None:
    output = version_output("ssconvert")
    if output is None:
        return None
    number = next((w for w in output.replace("'", " ").split() if w[:1].isdigit()), "(unknown version)")
    return f"gnumeric {number}"


class GnumericEngine(ComputingEngine):
    name = "gnumeric"
    full = True
    # 77% of Excel's cells in SpreadsheetBench answers, the lone dissent on 9,800 of 63,832
    # (regrade conformance): it reproduces gnumeric-based graders, it does not vote by default
    in_default_consensus = False

    def __init__(self, settings: EngineSettings = EngineSettings()) -> None:
        super().__init__(settings)
        self.timeout_s = settings.timeout_s
        self.mends = not settings.as_grader  # a grader's recalculation keeps its defects

    def version(self) -> str:
        return _ssconvert_version() or "not installed"

    def unavailable_reason(self) -> str | None:
        if _ssconvert_version() is None:
            return "ssconvert is not on PATH: apt-get install gnumeric"
        return None

    def compute(self, analysis: WorkbookAnalysis, cells: Sequence[CellRef]) -> WorkbookValues:
        path = analysis.path
        with tempfile.TemporaryDirectory(prefix="regrade-gnumeric-") as scratch:
            recalculated = Path(scratch) / "recalculated.xlsx"
            try:
                run = subprocess.run(
                    ["ssconvert", "--recalc", "--export-type=Gnumeric_Excel:xlsx2", str(path.resolve()), str(recalculated)],
                    capture_output=True, text=True, timeout=wall_backstop_s(self.timeout_s), cwd=scratch,  # CPU: its worker
                    env={"HOME": scratch, "PATH": "/usr/bin:/bin"},
                )
            except subprocess.TimeoutExpired:
                return WorkbookValues(failure=WorkbookFailure(
                    "timeout", f"gnumeric was still at work after {wall_backstop_s(self.timeout_s):g} s"))
            if run.returncode < 0:
                return WorkbookValues(failure=WorkbookFailure("crashed", f"ssconvert died with signal {-run.returncode}"))
            if run.returncode != 0 or not recalculated.is_file():
                detail = (run.stderr.strip().splitlines() or ["no output"])[-1]
                return WorkbookValues(failure=WorkbookFailure("load-failed", f"gnumeric cannot convert it: {detail}"))
            values = CachedEngine().evaluate(recalculated, cells)
            if values.failure is not None:
                return WorkbookValues(failure=WorkbookFailure("load-failed", values.failure.detail))
            for ref, value in values.cells.items():
                if value == ExcelError("#NAME?"):
                    values.cells[ref] = abstention("gnumeric-name-error")
                elif "_xlfngnumeric.ERROR(" in values.formulas.get(ref, ""):
                    values.cells[ref] = abstention("gnumeric-parse-error")
            _mend_totals(analysis, recalculated, values, compute=self.mends)
        return values


# gnumeric lacks AGGREGATE (#NAME?), answers #NUM! for SUBTOTAL(101..111, ...) and counts the
# rows a filter hides in 1-11.
_DEFECTS = TotalsDefects(hidden=True, filtered=True, computes_lacking=True)


def _mend_totals(analysis: WorkbookAnalysis, recalculated: Path, values: WorkbookValues, compute: bool) -> None:
    """With ``compute``, the totals gnumeric gets wrong are mended (:func:`regrade.engines.totals.mend_totals`).
    Without it (gnumeric standing for a grader's recalculation), cells that depend on SUBTOTAL
    101-111 abstain, as that grader cannot compute them, and filtered rows stay counted, as it counts them."""
    if not values.formulas or not mentions(analysis.path, (b"SUBTOTAL(", b"AGGREGATE(")):
        return
    graph = analysis.graph()
    if graph is None:
        return
    if compute:
        mend_totals(graph, values, CachedAreas(recalculated).read, _DEFECTS)
        return
    for ref in values.formulas:
        sheet = resolve_sheet(ref.sheet, graph.sheets)
        if sheet is not None and skips_hidden_rows(graph, CellRef(sheet, ref.row, ref.column)):
            values.cells[ref] = abstention("grader-lacks-subtotal-hidden")
