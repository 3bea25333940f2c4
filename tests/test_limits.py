"""Everything done for one workbook runs under that workbook's limit, and verdicts do not
depend on the machine's load."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time

import openpyxl
import pytest

from regrade.processes.cpu_time import process_tree_cpu_seconds
from regrade.engines.base import EngineSettings
from regrade.engines.ironcalc.engine import IronCalcEngine
from regrade.engines.isolation import IsolatedEngine
from regrade.run import RescoreSettings, case_limit_s, rescore_run
from regrade.runs.cases import Case
from regrade.values import CellRef
from tests.conftest import require_engines

pytestmark = pytest.mark.slow  # the fast tier (-m 'not slow') leaves this module out

ROWS = 12_500  # four columns: 50,000 stored cells
FORMULAS = 800  # each reading an area of its own


def _large_output(path):
    """About 50,000 stored cells, a text date among them (so the text-date rule reads the areas
    its formulas read), and 800 formulas in F, each summing a distinct 40-row area of A:C and
    coercing (+1): the shape of the SpreadsheetBench answer that stalled a run for ten minutes."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sheet1"
    for row in range(1, ROWS + 1):
        sheet.cell(row, 1, row)
        sheet.cell(row, 2, 2 * row)
        sheet.cell(row, 3, 1)
        sheet.cell(row, 4, "01/09/2020" if row == ROWS else f"note {row}")
    for row in range(1, FORMULAS + 1):
        sheet.cell(row, 6, f"=SUM(A{row}:C{row + 39})+1")
    book.save(path)


def _golden(path):
    """The answer, by hand: F(r) = the sum over i = r..r+39 of (i + 2i + 1), plus 1,
    = 3 (40 r + 780) + 40 + 1 = 120 r + 2381 (F1 = 2501: 820 + 1640 + 40 + 1)."""
    book = openpyxl.Workbook()
    book.active.title = "Sheet1"
    for row in range(1, FORMULAS + 1):
        book.active.cell(row, 6, 120 * row + 2381)
    book.save(path)


def _case(tmp_path) -> Case:
    _large_output(tmp_path / "out.xlsx")
    _golden(tmp_path / "golden.xlsx")
    return Case(condition="c", task_id="large", case=1, output_path=tmp_path / "out.xlsx",
                answer_path=tmp_path / "golden.xlsx", answer_position=f"F1:F{FORMULAS}")


def test_a_large_workbook_reading_many_areas_is_judged_within_its_limit(tmp_path):
    # 800 graded formulas over 800 distinct areas of a 50,000-cell sheet: the text-date rule
    # measured the sheet once per area (45 s at 732d15e, in the calling process for LibreOffice)
    require_engines("ironcalc", "libreoffice")
    case = _case(tmp_path)
    settings = RescoreSettings("spreadsheetbench", "cached", ("ironcalc", "libreoffice"), 30.0)
    started = time.monotonic()
    [record] = rescore_run([case], settings)
    elapsed = time.monotonic() - started
    assert "timeout" not in record.reasons, record.message
    assert record.full_pass is True, record  # all 800 sums, computed by both engines
    assert elapsed < case_limit_s(settings)  # a limit, not a speed: the case was judged, not cut off


def test_work_outside_the_engines_is_cut_at_the_case_limit(tmp_path, monkeypatch):
    import regrade.grading.rescore as rescore_module

    case = _case(tmp_path)
    real = rescore_module.load_golden

    def slow_golden(path):  # the golden's reading stalls, as a workbook made to be slow would
        time.sleep(60)
        return real(path)

    monkeypatch.setattr(rescore_module, "load_golden", slow_golden)
    settings = RescoreSettings("spreadsheetbench", "cached", ("ironcalc",), 1.0)
    started = time.monotonic()
    [record] = rescore_run([case], settings)
    assert record.verdict == "unevaluable" and record.reasons == ["timeout"], record
    assert time.monotonic() - started < 30  # cut at the case's limit (4 s), not after the 60 s sleep


def _burn(stop):
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def test_the_same_case_gives_the_same_record_on_a_busy_machine(tmp_path):
    """No wall-clock threshold decides a value: with both cores busy, the records are identical."""
    require_engines("ironcalc")
    case = _case(tmp_path)
    settings = RescoreSettings("spreadsheetbench", "cached", ("ironcalc",), 60.0)
    [quiet] = rescore_run([case], settings)
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,)) for _ in range(2)]
    for burner in burners:
        burner.start()
    try:
        [busy] = rescore_run([case], settings)
    finally:
        stop.set()
        for burner in burners:
            burner.join(10)
    assert busy == quiet


def test_the_cpu_time_of_a_process_counts_its_descendants():
    """A child spending about a second of CPU (and its own child, half as much) is counted
    in its parent's tree while they run: the limits see soffice's work, not only its worker's."""
    code = ("import subprocess, sys, time\n"
            "def burn(s):\n"
            "    end = time.process_time() + s\n"
            "    while time.process_time() < end: pass\n"
            "grandchild = subprocess.Popen([sys.executable, '-c', 'import time\\nend = time.process_time() + 0.5\\n"
            "while time.process_time() < end: pass\\ntime.sleep(30)'])\n"
            "burn(1.0); print('ready', flush=True); time.sleep(30)")
    before = process_tree_cpu_seconds(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # the grandchild's half second, however the cores are shared
        spent = process_tree_cpu_seconds(os.getpid()) - before
        assert 1.5 <= spent < 5, spent
        assert 0.5 <= process_tree_cpu_seconds(child.pid) - 1.0 < 3  # its own second and the grandchild's half
    finally:
        subprocess.run(["pkill", "-P", str(child.pid)])
        child.kill()
        child.wait()


class SpendsHalfASecond(IronCalcEngine):
    """Spends half a second of CPU time on each workbook, then computes it."""

    def evaluate(self, path, cells):
        end = time.process_time() + 0.5
        while time.process_time() < end:
            pass
        return super().evaluate(path, cells)


def test_an_engine_limit_counts_cpu_time_so_a_busy_machine_does_not_stretch_it(tmp_path):
    """Half a second of CPU under a 1 s limit, with twice as many busy processes as cores: the
    worker's share of a core is under a half, so it needs more than 1 s of wall clock, and
    still answers (a wall-clock limit would have called it a timeout)."""
    book = openpyxl.Workbook()
    book.active["A1"], book.active["A2"] = 4, "=A1*A1"
    book.save(tmp_path / "book.xlsx")
    engine = IsolatedEngine(SpendsHalfASecond(EngineSettings(timeout_s=1.0)))
    a2 = CellRef("Sheet", 2, 1)
    assert engine.evaluate(tmp_path / "book.xlsx", [a2]).cells == {a2: 16.0}  # the worker started, idle
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,)) for _ in range(2 * (os.cpu_count() or 1))]
    for burner in burners:
        burner.start()
    try:
        started = time.monotonic()
        values = engine.evaluate(tmp_path / "book.xlsx", [a2])
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        for burner in burners:
            burner.join(10)
        engine.close()
    assert values.failure is None and values.cells == {a2: 16.0}, values.failure
    assert elapsed > 1.0, f"the machine was not busy enough to show it ({elapsed:.2f} s)"
