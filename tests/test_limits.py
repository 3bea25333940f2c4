"""Everything done for one workbook runs under that workbook's limit, and verdicts do not
depend on the machine's load."""

from __future__ import annotations

import multiprocessing
import time

import openpyxl

from regrade.runner import RescoreSettings, case_limit_s, rescore_run
from regrade.runs.cases import Case
from tests.conftest import require_engines

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
    assert "timeout" not in record["reasons"], record["message"]
    assert record["full_pass"] is True, record  # all 800 sums, computed by both engines
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
    assert record["verdict"] == "unevaluable" and record["reasons"] == ["timeout"], record
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
