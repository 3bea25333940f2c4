"""A golden whose answer depends on TODAY(), judged as of the day its cached values were computed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import openpyxl
import pytest

from regrade.engines.registry import open_engine
from regrade.grading.dated import DATED_GOLDEN, SAVE_DAY_UNKNOWN
from regrade.grading.policies import get_policy
from regrade.grading.rescore import rescore_case
from regrade.grading.verdicts import ARTIFACT, CONFIRMED_FAIL, CONFIRMED_PASS, INVALID_GOLDEN, UNEVALUABLE
from regrade.runs.cases import Case
from regrade.workbook.today import dated_formula, save_days, write_dated_copy
from tests.conftest import require_engines
from tests.hostile_corpus import cell_rows, formula_cell, package, worksheet

POLICY = get_policy("spreadsheetbench")
SAVED = "2024-05-23T06:10:29Z"  # 18:10 on 22 May at UTC-12, 20:10 on 23 May at UTC+14
CORE = ('<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        '<dcterms:modified xsi:type="dcterms:W3CDTF">{saved}</dcterms:modified></cp:coreProperties>')


def saved_book(path: Path, cells: str, saved: str = SAVED) -> Path:
    """A workbook as Excel saves one: Sheet1 row 1 holds ``cells``, the save time is ``saved``."""
    path.write_bytes(package([("Sheet1", worksheet(cell_rows(cells)))],
                             extra={"docProps/core.xml": CORE.format(saved=saved)}))
    return path


def output(path: Path, formula: object) -> Path:
    book = openpyxl.Workbook()
    book.active.title = "Sheet1"
    book.active["B1"] = formula  # a formula: openpyxl writes no cached value
    book.save(path)
    return path


def test_the_save_days_are_those_the_utc_save_time_falls_on_from_utc_minus_12_to_plus_14(tmp_path):
    assert save_days(saved_book(tmp_path / "a.xlsx", "")) == [dt.date(2024, 5, 22), dt.date(2024, 5, 23)]
    noon = saved_book(tmp_path / "b.xlsx", "", "2024-05-23T11:00:00Z")  # 23:00 on the 22nd .. 01:00 on the 24th
    assert save_days(noon) == [dt.date(2024, 5, 22), dt.date(2024, 5, 23), dt.date(2024, 5, 24)]
    assert save_days(output(tmp_path / "c.xlsx", "=1")) != []  # openpyxl records its own save time
    missing = tmp_path / "d.xlsx"
    missing.write_bytes(package([("Sheet1", worksheet(cell_rows("")))]))
    assert save_days(missing) == []


def test_a_dated_copy_replaces_today_outside_quoted_text(tmp_path):
    day = dt.date(2024, 5, 23)
    assert dated_formula('DATEDIF(A1,TODAY(),"y")&"TODAY()"&today( )', day) == \
        'DATEDIF(A1,DATE(2024,5,23),"y")&"TODAY()"&DATE(2024,5,23)'
    golden = saved_book(tmp_path / "golden.xlsx", formula_cell("B1", "DAY(TODAY())", "23"))
    before = golden.read_bytes()
    assert write_dated_copy(golden, tmp_path / "copy.xlsx", day)
    assert openpyxl.load_workbook(tmp_path / "copy.xlsx")["Sheet1"]["B1"].value == "=DAY(DATE(2024,5,23))"
    assert golden.read_bytes() == before
    assert not write_dated_copy(output(tmp_path / "plain.xlsx", "=1+1"), tmp_path / "none.xlsx", day)


@pytest.fixture(scope="module")
def engines():
    require_engines("ironcalc", "libreoffice", "formulon")
    opened = [open_engine(name) for name in ("ironcalc", "libreoffice", "formulon")]
    yield opened
    for engine in opened:
        engine.close()


def rescored(tmp_path: Path, engines, golden_formula: str, cached: str, output_formula: object):
    golden = saved_book(tmp_path / "golden.xlsx", formula_cell("B1", golden_formula, cached))
    case = Case(condition="none", task_id="t", case=1, output_path=output(tmp_path / "out.xlsx", output_formula),
                answer_path=golden, answer_position="B1")
    return rescore_case(case, POLICY, open_engine("cached"), engines, 2)


# DAY(TODAY()) cached as 23: of the two days, only 23 May reproduces it (the 22nd gives 22).
@pytest.mark.parametrize("output_formula, verdict", [
    ("=DAY(TODAY())", ARTIFACT),  # uncached: the value-only grader fails it; 23 as of 23 May
    ("=DAY(TODAY())+1", CONFIRMED_FAIL),  # 24
    (23, CONFIRMED_PASS),  # a constant is what it is
])
def test_the_output_is_judged_as_of_the_day_that_reproduces_the_golden(tmp_path, engines, output_formula, verdict):
    result = rescored(tmp_path, engines, "DAY(TODAY())", "23", output_formula)
    assert result.verdict == verdict, result.message
    assert DATED_GOLDEN in result.reasons and "as of 2024-05-23," in result.message  # not the 22nd


def test_a_golden_no_save_day_reproduces_stays_invalid(tmp_path, engines):
    result = rescored(tmp_path, engines, "DAY(TODAY())", "5", "=DAY(TODAY())")  # computed on the 5th, saved later
    assert result.verdict == INVALID_GOLDEN and "no day it may have been saved on" in result.message


def test_where_the_reproducing_days_give_different_verdicts_the_case_is_not_judged(tmp_path, engines):
    # YEAR(TODAY()) is 2024 on the 22nd and the 23rd; the output's DAY(TODAY())+2002 is 2024 only on the 22nd
    result = rescored(tmp_path, engines, "YEAR(TODAY())", "2024", "=DAY(TODAY())+2002")
    assert (result.verdict, result.reasons) == (UNEVALUABLE, [SAVE_DAY_UNKNOWN])


def test_now_and_rand_are_not_dated(tmp_path, engines):
    result = rescored(tmp_path, engines, "INT(NOW())-INT(NOW())+DAY(TODAY())", "23", "=DAY(TODAY())")
    assert result.verdict == INVALID_GOLDEN and "no day" not in result.message


def test_a_golden_past_the_engines_work_budget_is_not_dated(tmp_path):
    require_engines("ironcalc", "libreoffice", "formulon")
    # A2:A3 is 2 referenced cells, over a budget of 1 (a count, never a clock)
    frugal = [open_engine(name, bridge_work=1) for name in ("ironcalc", "libreoffice", "formulon")]
    try:
        result = rescored(tmp_path, frugal, "DAY(TODAY())+SUM(A2:A3)", "23", "=DAY(TODAY())+SUM(A2:A3)")
    finally:
        for engine in frugal:
            engine.close()
    assert result.verdict == INVALID_GOLDEN and "too large" in result.message


def test_a_goldens_formulas_are_counted_and_walked_once_for_all_its_outputs(tmp_path, monkeypatch):
    # the controls of a generated audit, and the conditions of a task, share one golden: what it
    # asks of the golden's formulas (the work count, the volatile cone) is found once, not per output
    import regrade.grading.grade as grade_module
    from regrade.workbook import cones

    require_engines("ironcalc", "libreoffice", "formulon")
    counted, walked = [], []
    real_count, real_cone = grade_module.referenced_cells, cones.FormulaGraph.cone
    monkeypatch.setattr(grade_module, "referenced_cells", lambda text: counted.append(text) or real_count(text))
    monkeypatch.setattr(cones.FormulaGraph, "cone", lambda self, refs: walked.append(refs) or real_cone(self, refs))
    frugal = [open_engine(name, bridge_work=1) for name in ("ironcalc", "libreoffice", "formulon")]
    golden = saved_book(tmp_path / "golden.xlsx", formula_cell("B1", "DAY(TODAY())+SUM(A2:A3)", "23"))
    try:
        verdicts = []
        for index, formula in enumerate(("=DAY(TODAY())+SUM(A2:A3)", "=1", "=2")):
            case = Case(condition="none", task_id="t", case=1, output_path=output(tmp_path / f"out{index}.xlsx", formula),
                        answer_path=golden, answer_position="B1")
            verdicts.append(rescore_case(case, POLICY, open_engine("cached"), frugal, 2).verdict)
            if index == 0:
                first = (len(counted), len(walked))
    finally:
        for engine in frugal:
            engine.close()
    assert verdicts == [INVALID_GOLDEN] * 3  # too large to date (a budget of 1 referenced cell)
    assert first[0] == 1 and first[1] >= 1  # the golden's one formula counted; its cone walked
    assert (len(counted), len(walked)) == first  # the other two outputs asked nothing again
