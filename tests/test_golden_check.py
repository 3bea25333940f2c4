"""Each engine checked against the golden before it judges (regrade.grading.golden_check).

The golden's cached values on its graded formula cells are Excel's results for the task's own
formulas: an engine that does not reproduce one does not vote on that cell, and where no
engine reproduces it the golden is in doubt (invalid-golden), not the output."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from regrade.grading.golden_check import GOLDEN_NOT_REPRODUCED, golden_in_doubt, withheld
from regrade.grading.policies import get_policy
from regrade.grading.consensus import consensus
from regrade.grading.rescore import rescore_case
from regrade.engines.registry import open_engine
from regrade.runs.cases import Case
from regrade.values import CannotEvaluate, CellRef, WorkbookValues
from regrade.workbook import cell_xml
from tests.conftest import DEMO, require_engines

TASK = "59511"  # F2:F6 =ROUNDUP(E2/1000,0) ...; Excel cached 1, 2, 3, 8, 9 (E2:E6 300, 2000, 3000, 7200, 8500)
F2 = CellRef("Sheet1", 2, 6)


def answer(case: int = 1) -> Path:
    return DEMO / "dataset" / "spreadsheet" / TASK / f"{case}_{TASK}_answer.xlsx"


def stale_golden(target: Path) -> Path:
    """Excel's answer with input E2 changed to 5300 after Excel computed: F2 still caches 1,
    where ROUNDUP(5300/1000, 0) is 6 (a stale cache, as in SpreadsheetBench's 45738)."""
    sheets = cell_xml.read_sheets(answer(), ["Sheet1"])
    e2 = sheets.cell(CellRef("Sheet1", 2, 5))
    assert e2 is not None
    sheets.write_edited(answer(), target, {CellRef("Sheet1", 2, 5): cell_xml.with_number(e2, "5300")})
    return target


def test_an_engine_withheld_on_a_cell_leaves_it_to_the_others():
    policy = get_policy("spreadsheetbench")
    stored = WorkbookValues(sheet_names=["Sheet1"], cells={F2: None}, formulas={F2: "=ROUNDUP(E2/1000,0)"})
    computed = {name: WorkbookValues(sheet_names=["Sheet1"], cells={F2: value}, formulas={F2: "=ROUNDUP(E2/1000,0)"})
                for name, value in (("ironcalc", 1.0), ("libreoffice", 1.0), ("formulon", 0.0))}
    departures = {"ironcalc": {}, "libreoffice": {}, "formulon": {F2: "formulon computes 0 on the golden's F2"}}
    agreed = consensus(policy, stored, withheld(computed, departures), quorum=2)
    assert agreed.view.cells[F2] == 1.0 and agreed.decided_by[F2] == 2  # formulon did not vote
    assert agreed.by_engine[F2]["formulon"] == CannotEvaluate(GOLDEN_NOT_REPRODUCED, "formulon computes 0 on the "
                                                                                     "golden's F2")
    assert golden_in_doubt(departures, ["ironcalc", "libreoffice", "formulon"]) == []
    every = {name: {F2: "departs"} for name in departures}
    assert golden_in_doubt(every, list(every)) == [F2]


@pytest.mark.slow  # several engine starts: seconds on two cores
def test_a_stale_golden_is_in_doubt_not_the_output(tmp_path):
    require_engines("ironcalc", "libreoffice")
    golden = stale_golden(tmp_path / f"1_{TASK}_answer.xlsx")
    output = tmp_path / f"1_{TASK}_output.xlsx"
    shutil.copyfile(answer(), output)  # Excel's own answer: F2 = ROUNDUP(300/1000, 0) = 1, as the golden caches
    case = Case(condition="none", task_id=TASK, case=1, output_path=output, answer_path=golden,
                answer_position="F2:F6")
    policy = get_policy("spreadsheetbench")
    engines = [open_engine(name) for name in ("ironcalc", "libreoffice")]
    shallow = open_engine("cached", as_grader=True)
    try:
        result = rescore_case(case, policy, shallow, engines, quorum=2)
        assert (result.verdict, result.reasons) == ("invalid-golden", ["golden-not-reproduced"])
        assert "Sheet1!F2" in result.message
        itself = tmp_path / f"2_{TASK}_output.xlsx"
        shutil.copyfile(golden, itself)  # the golden graded against itself: every engine computes 6, Excel cached 1
        against_itself = rescore_case(case.model_copy(update={"output_path": itself}), policy, shallow, engines,
                                      quorum=2)
        assert against_itself.verdict == "invalid-golden"  # not a confirmed-fail of a correct output
        # the output itself, recomputed, is what Excel's answer was: every engine computes F2 = 1 there
        # and 6 on the golden; without the check the engines' agreement on the output would pass it
        # against a cache the golden's own inputs contradict
        plain = rescore_case(Case(condition="none", task_id=TASK, case=1, output_path=output, answer_path=answer(),
                                  answer_position="F2:F6"), policy, shallow, engines, quorum=2)
        assert plain.verdict == "confirmed-pass"  # the same output against Excel's true golden
    finally:
        for engine in (*engines, shallow):
            engine.close()
