"""The pipeline on real files: the bundled demo and the failure paths."""

import json

from engines.cached import CachedEngine
from engines.ironcalc_ import IronCalcEngine
from engines.isolation import IsolatedEngine
from regrade.compare import get_policy
from regrade.demo import conditions
from regrade.rescore import rescore_case
from regrade.runs import Case, spreadsheetbench_cases
from tests.conftest import DEMO


def run_demo():
    cases = spreadsheetbench_cases(DEMO / "dataset", conditions(DEMO))
    policy = get_policy("spreadsheetbench")
    shallow, full = IsolatedEngine(CachedEngine()), IsolatedEngine(IronCalcEngine())
    return [rescore_case(c, policy, shallow, full) for c in cases]


def test_every_demo_output_gets_the_verdict_worked_out_by_hand():
    # fixtures/make_demo.py explains each expected verdict beside the output it writes
    expected = json.loads((DEMO / "expected.json").read_text())
    results = run_demo()
    assert len(results) == 45
    got = {(r.case.condition, r.case.output_path.name): r.verdict for r in results}
    want = {(condition, name): v for condition, files in expected.items() for name, v in files.items()}
    assert got == want


def test_reasons_explain_each_disagreement():
    results = {(r.case.condition, r.case.output_path.name): r for r in run_demo()}
    stale = results[("community", "1_59511_output.xlsx")]
    assert stale.reasons == ["stale-cache"]
    # E2=300 and E5=7200: ROUND gives 0 and 7 where ROUNDUP (the cached answer) gave 1 and 8
    assert [(str(c.ref), c.formula, c.golden, c.shallow, c.full) for c in stale.cells] == [
        ("Sheet1!F2", "=ROUND(E2/1000,0)", 1, 1, 0.0),
        ("Sheet1!F5", "=ROUND(E5/1000,0)", 8, 8, 7.0),
    ]
    uncached = results[("anthropic", "1_32293_output.xlsx")]
    assert uncached.reasons == ["uncached-formula"]
    assert [c.shallow for c in uncached.cells] == [None] * 4
    aggregate = results[("anthropic", "1_34469_output.xlsx")]
    assert aggregate.full_pass is None and "unsupported-function" in aggregate.reasons


def test_missing_and_unreadable_outputs_are_per_case_failures(tmp_path):
    golden = DEMO / "dataset" / "spreadsheet" / "59511" / "1_59511_answer.xlsx"
    corrupt = tmp_path / "corrupt.xlsx"
    corrupt.write_bytes(b"PK\x03\x04 truncated")
    policy = get_policy("spreadsheetbench")
    shallow, full = IsolatedEngine(CachedEngine()), IsolatedEngine(IronCalcEngine())
    for output, reason in ((tmp_path / "missing.xlsx", "missing-output"), (corrupt, "unreadable-output")):
        case = Case(condition="x", task_id="59511", case=1, output_path=output, answer_path=golden, answer_position="F2:F6")
        result = rescore_case(case, policy, shallow, full)
        assert (result.verdict, result.shallow_pass, result.full_pass) == ("confirmed-fail", False, False)
        assert reason in result.reasons


def test_unreadable_position_is_a_per_case_error_naming_task_and_text():
    golden = DEMO / "dataset" / "spreadsheet" / "59511" / "1_59511_answer.xlsx"
    case = Case(condition="x", task_id="59511", case=1, output_path=golden, answer_path=golden, answer_position="F2:F6:G")
    result = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), IronCalcEngine())
    assert result.verdict == "unevaluable" and result.reasons == ["invalid-position"]
    assert "59511" in result.message and "F2:F6:G" in result.message


def test_official_policy_fails_whole_columns_whatever_the_values():
    golden = DEMO / "dataset" / "spreadsheet" / "59511" / "1_59511_answer.xlsx"
    case = Case(condition="x", task_id="59511", case=1, output_path=golden, answer_path=golden, answer_position="F:F")
    official = rescore_case(case, get_policy("spreadsheetbench-official"), CachedEngine(), IronCalcEngine())
    assert (official.verdict, official.reasons) == ("confirmed-fail", ["official-grader-error"])
    correct = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), IronCalcEngine())
    assert correct.verdict == "confirmed-pass"  # the answer against itself
