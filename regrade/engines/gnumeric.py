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
for a grader's recalculation (``mends=False``: ``--shallow gnumeric``, the
``gnumeric-recalc`` grader), gnumeric keeps its own SUBTOTALs, as that grader sees them.
``INDEX`` over a one-row range gives ``#REF!`` in gnumeric where Excel gives a value
(DESIGN §3): a known infidelity, left for the consensus to outvote.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from regrade.values import CannotEvaluate, CellRef, ExcelError, WorkbookFailure, WorkbookValues
from regrade.engines.cached import CachedEngine, read_area
from regrade.workbook.cones import Area, load_graph
from regrade.engines.isolation import DEFAULT_TIMEOUT_S
from regrade.engines.readings import number_value
from regrade.workbook.screening import refusal
from regrade.workbook.sheets import mentions, resolve_sheet
from regrade.engines.totals import computed_total, meets_a_filter, skips_hidden_rows
from regrade.engines.tools import version_output
from regrade.engines.unrepeatable import abstain_where_no_engine_can


def _ssconvert_version() -> str | None:
    output = version_output("ssconvert")
    if output is None:
        return None
    number = next((w for w in output.replace("'", " ").split() if w[:1].isdigit()), "(unknown version)")
    return f"gnumeric {number}"


class GnumericEngine:
    name = "gnumeric"
    full = True
    # 77% of Excel's cells in SpreadsheetBench answers, the lone dissent on 9,800 of 63,832
    # (regrade conformance): it reproduces gnumeric-based graders, it does not vote by default
    in_default_consensus = False

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S, mends: bool = True):
        self.timeout_s = timeout_s
        self.mends = mends  # off when gnumeric stands for a grader's recalculation: it keeps its defects

    def version(self) -> str:
        return _ssconvert_version() or "not installed"

    def unavailable_reason(self) -> str | None:
        if _ssconvert_version() is None:
            return "ssconvert is not on PATH: apt-get install gnumeric"
        return None

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        if (refused := refusal(path)) is not None:
            return refused
        with tempfile.TemporaryDirectory(prefix="regrade-gnumeric-") as scratch:
            recalculated = Path(scratch) / "recalculated.xlsx"
            try:
                run = subprocess.run(
                    ["ssconvert", "--recalc", "--export-type=Gnumeric_Excel:xlsx2", str(path.resolve()), str(recalculated)],
                    capture_output=True, text=True, timeout=self.timeout_s, cwd=scratch,
                    env={"HOME": scratch, "PATH": "/usr/bin:/bin"},
                )
            except subprocess.TimeoutExpired:
                return WorkbookValues(failure=WorkbookFailure("timeout", f"gnumeric took longer than {self.timeout_s:g} s"))
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
                    values.cells[ref] = CannotEvaluate("unsupported-function", "gnumeric gives #NAME? (an unknown function or name)")
                elif "_xlfngnumeric.ERROR(" in values.formulas.get(ref, ""):
                    values.cells[ref] = CannotEvaluate("parse-error", "gnumeric could not parse the formula")
            _mend_totals(path, recalculated, values, compute=self.mends)
        return abstain_where_no_engine_can(path, values)


def _mend_totals(path: Path, recalculated: Path, values: WorkbookValues, compute: bool) -> None:
    """gnumeric lacks AGGREGATE (#NAME?), answers #NUM! for SUBTOTAL(101..111, ...) and
    counts the rows a filter hides in 1-11. With ``compute``, a graded cell whose value
    depends on one of these is computed by regrade when it is such a call over references
    itself, and abstains otherwise (:mod:`regrade.engines.totals`). Without it (gnumeric standing
    for a grader's recalculation), cells that depend on 101-111 abstain, as that grader cannot
    compute them, and filtered rows stay counted, as it counts them."""
    if not values.formulas or not mentions(path, (b"SUBTOTAL(", b"AGGREGATE(")):
        return
    graph = load_graph(path)
    if graph is None:
        return

    def read(area: Area) -> list[list[object]]:
        return read_area(recalculated, area.sheet, area.min_row, area.min_col, area.max_row, area.max_col)

    for ref in values.formulas:
        sheet = resolve_sheet(ref.sheet, graph.sheets)
        cell = (sheet, ref.row, ref.column)
        if sheet is None:
            continue
        if not compute:
            if skips_hidden_rows(graph, cell):
                values.cells[ref] = CannotEvaluate("unsupported-function", "gnumeric lacks SUBTOTAL 101-111 (it gives #NUM!)")
            continue
        misses = skips_hidden_rows(graph, cell) or meets_a_filter(graph, cell)
        if not (misses or isinstance(values.cells.get(ref), CannotEvaluate)):
            continue
        computed = computed_total(graph, cell, read)
        if computed is not None:
            values.cells[ref] = number_value(computed, values.number_formats.get(ref)) if isinstance(computed, float) else computed
        elif misses:
            values.cells[ref] = CannotEvaluate(
                "unsupported-function", "gnumeric gets SUBTOTAL wrong here (#NUM! for 101-111; it counts filtered rows)")
