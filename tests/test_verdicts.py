"""Verdicts and the reason given for every cell on which the two grades disagree."""

import datetime as dt

from openpyxl.worksheet.formula import ArrayFormula

from regrade.values import CannotEvaluate, ExcelError
from regrade.engines.cached import CachedEngine
from regrade.engines.ironcalc.engine import IronCalcEngine
from regrade.grading.policies import get_policy
from regrade.grading.rescore import rescore_case
from regrade.runs.cases import Case
from regrade.grading.verdicts import VERDICTS, cell_reason, classify


def test_the_full_vocabulary():
    assert VERDICTS == ("confirmed-pass", "confirmed-fail", "artifact", "false-pass", "engines-disagree",
                        "unevaluable", "invalid-golden")
    assert classify(False, True) == "artifact" and classify(True, False) == "false-pass"
    assert classify(False, None, "engines-disagree") == "engines-disagree"


def shallow_failed(stored, golden, formula="=X1", full=None, in_spill=False):
    """The reason for a cell the shallow grade failed and the full grade passed."""
    return cell_reason(False, golden if full is None else full, True, stored, formula, golden, in_spill)


def test_reasons_name_what_went_wrong_in_the_value_only_view():
    assert shallow_failed(ExcelError("#NAME?"), 6.5) == "unsupported-in-recalc"  # gnumeric's AGGREGATE
    assert shallow_failed(CannotEvaluate("unsupported-function", "x"), 6.5) == "unsupported-in-recalc"
    assert shallow_failed(None, 6.5) == "uncached-formula"
    assert shallow_failed(None, 6.5, formula=None, in_spill=True) == "spill-not-materialised"
    # 2024-01-02 12:00 is serial 45293.5; the value rules round a date to 45294 (half up) and keep 45293.5
    assert shallow_failed(45293.5, dt.datetime(2024, 1, 2, 12)) == "date-serial"
    assert shallow_failed("TRUE", True) == "type-mismatch"
    assert shallow_failed("50%", 0.5) == "type-mismatch"
    assert shallow_failed(2.3449, 2.35) == "rounding"  # 2.34 against 2.35 after rounding
    assert shallow_failed(7.0, 9.0) == "stale-cache"
    assert shallow_failed(7.0, 9.0, formula=None) == "reading-differs"


def test_reasons_when_both_views_fail_or_the_engines_abstain():
    assert cell_reason(False, 7.0, False, 8.0, "=A1", 9.0) == "wrong-value"
    assert cell_reason(False, CannotEvaluate("engines-disagree", "a=1; b=2"), False, 8.0, "=A1", 9.0) == "engines-disagree"


def test_an_unwritten_spill_range_is_named(workbook, tmp_path):
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sheet1"
    for row, value in enumerate((10, 20, 30), start=1):
        sheet.cell(row, 2, value)
    sheet["D1"] = ArrayFormula("D1:D3", "=B1:B3*2")  # openpyxl writes no value for D2:D3
    output = tmp_path / "output.xlsx"
    book.save(output)
    golden = workbook({"B1": 10, "B2": 20, "B3": 30, "D1": 20, "D2": 40, "D3": 60}, name="golden.xlsx")
    case = Case(condition="x", task_id="t", case=1, output_path=output, answer_path=golden, answer_position="D1:D3")
    result = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), [IronCalcEngine()])
    reasons = {str(c.ref): c.reason for c in result.cells}
    assert reasons["Sheet1!D1"] == "uncached-formula"
    assert reasons["Sheet1!D2"] == reasons["Sheet1!D3"] == "spill-not-materialised"


def test_the_answer_on_a_sheet_named_otherwise_is_wrong_sheet(workbook):
    golden = workbook({"A1": 5}, name="golden.xlsx", title="Sheet1")
    output = workbook({"A1": 5}, name="output.xlsx", title="sheet1")
    case = Case(condition="x", task_id="t", case=1, output_path=output, answer_path=golden, answer_position="Sheet1!A1")
    official = rescore_case(case, get_policy("spreadsheetbench-official"), CachedEngine(), [IronCalcEngine()])
    assert (official.verdict, official.reasons) == ("confirmed-fail", ["wrong-sheet"])  # exact names, as the official grader
    assert "'sheet1' (the golden says 'Sheet1')" in official.message
    lenient = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), [IronCalcEngine()])
    assert lenient.verdict == "confirmed-pass"
