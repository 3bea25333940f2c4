"""Labelled outputs made from an answer file Excel saved, and how regrade's verdicts score on them."""

from __future__ import annotations

import openpyxl
import pytest

from regrade.audit.labelled import LABELS, labelled_score, make_labelled
from regrade.engines.registry import open_engine
from regrade.grading.policies import get_policy
from regrade.grading.rescore import rescore_case
from regrade.grading.verdicts import ARTIFACT, CONFIRMED_FAIL, CONFIRMED_PASS, FALSE_PASS
from regrade.runs.cases import Case
from tests.conftest import DEMO, require_engines

POLICY = get_policy("spreadsheetbench")
ANSWER = DEMO / "dataset" / "spreadsheet" / "59511" / "1_59511_answer.xlsx"  # F2:F6 = ROUNDUP(E/1000,0), Excel's caches
POSITION = "F2:F6"


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    return make_labelled(ANSWER, POSITION, None, POLICY, tmp_path_factory.mktemp("labelled"), "1_59511_output.xlsx")


def _cells(path, data_only):
    sheet = openpyxl.load_workbook(path, data_only=data_only).active
    return {row: sheet.cell(row, 6).value for row in range(2, 7)}


def test_the_four_outputs_differ_from_excel_s_answer_only_where_their_label_says(labelled):
    assert set(labelled.outputs) == set(LABELS)
    assert labelled.outputs["excel"].read_bytes() == ANSWER.read_bytes()
    excel_values, excel_formulas = _cells(ANSWER, True), _cells(ANSWER, False)
    assert all(v is not None for v in excel_values.values())
    assert _cells(labelled.outputs["uncached"], True) == dict.fromkeys(excel_values)  # no cache left
    assert _cells(labelled.outputs["uncached"], False) == excel_formulas
    changed = labelled.changed
    assert changed is not None and changed.coordinate == "F2"
    stale_formulas = _cells(labelled.outputs["changed-stale"], False)
    assert stale_formulas[2] == f"=({excel_formulas[2][1:]})+1"  # the number Excel cached, plus one
    assert _cells(labelled.outputs["changed-stale"], True) == excel_values  # Excel's old caches kept
    assert _cells(labelled.outputs["changed-uncached"], False) == stale_formulas
    assert _cells(labelled.outputs["changed-uncached"], True) == dict.fromkeys(excel_values)


def test_a_recomputing_grade_gets_every_label_right(labelled):
    require_engines("ironcalc")
    engine = open_engine("ironcalc")
    try:
        records = []
        for label, output in labelled.outputs.items():
            case = Case(condition=label, task_id="59511", case=1, output_path=output, answer_path=ANSWER,
                        answer_position=POSITION)
            result = rescore_case(case, POLICY, open_engine("cached"), [engine])
            records.append({"condition": label, "full_pass": result.full_pass, "verdict": result.verdict})
    finally:
        engine.close()
    assert {r["condition"]: r["verdict"] for r in records} == {
        "excel": CONFIRMED_PASS, "uncached": ARTIFACT, "changed-stale": FALSE_PASS, "changed-uncached": CONFIRMED_FAIL}
    score = labelled_score(records)
    assert (score.cases, score.judged, score.right, score.false_recoveries) == (4, 4, 4, 0)


def test_outputs_of_a_text_answer_are_well_formed_and_recompute_to_their_labels(tmp_path):
    """A text formula: Excel caches its value as <v xml:space="preserve">, and the change joins
    &"x", which the sheet XML must hold escaped."""
    require_engines("ironcalc")
    import zipfile
    from xml.dom import minidom

    from regrade.values import CellRef

    answer = DEMO.parents[1] / "fixtures" / "oracles" / "ironcalc" / "calc_tests" / "MATH_AND_TRIGONOMETRY" / "EXP_SIGN.xlsx"
    made = make_labelled(answer, "A20", None, POLICY, tmp_path, "1_t_output.xlsx")  # A20 = " 10 ", Excel's cache
    assert made.changed == CellRef("EXP_SIGN", 20, 1)
    for label, path in made.outputs.items():
        with zipfile.ZipFile(path) as archive:
            minidom.parseString(archive.read("xl/worksheets/sheet1.xml"))  # raises on ill-formed XML
    cell = lambda label, data_only: openpyxl.load_workbook(made.outputs[label], data_only=data_only)["EXP_SIGN"]["A20"].value
    assert cell("uncached", True) is None and cell("uncached", False) == '=" 10 "'
    assert cell("changed-stale", False) == '=(" 10 ")&"x"' and cell("changed-stale", True) == " 10 "
    assert cell("changed-uncached", True) is None
    shallow, full = open_engine("cached"), open_engine("ironcalc")
    try:
        verdicts = {label: rescore_case(Case(condition=label, task_id="t", case=1, output_path=path, answer_path=answer,
                                             answer_position="A20"), POLICY, shallow, [full]).verdict
                    for label, path in made.outputs.items()}
    finally:
        shallow.close()
        full.close()
    # recomputed: " 10 " for the first two (right), " 10 x" for the changed ones (wrong)
    assert verdicts == {"excel": CONFIRMED_PASS, "uncached": ARTIFACT, "changed-stale": FALSE_PASS,
                        "changed-uncached": CONFIRMED_FAIL}


@pytest.mark.parametrize("answer, position, changed", [
    # Excel caches TIME(23,59,60) as 0:00 and =H27 as TRUE
    ("calc_tests/DATE_AND_TIME/DATE_TIME.xlsx", "Sheet1!C2", "=(TIME(23,59,60))+1/24"),
    ("calc_test_no_export/tables.xlsx", "'Functions Filters'!D27", "=NOT(H27)"),
])
def test_a_time_or_a_boolean_is_changed_within_its_type(tmp_path, answer, position, changed):
    """A time plus a day keeps the time of day (equal under the policy); a time or a boolean
    joined with "x" is a number or a boolean written as text, which engines write differently."""
    require_engines("ironcalc")
    path = DEMO.parents[1] / "fixtures" / "oracles" / "ironcalc" / answer
    made = make_labelled(path, position, None, POLICY, tmp_path, "1_t_output.xlsx")
    ref = made.changed
    book = openpyxl.load_workbook(made.outputs["changed-uncached"])
    assert book[ref.sheet].cell(ref.row, ref.column).value == changed
    shallow, full = open_engine("cached"), open_engine("ironcalc")
    try:
        case = Case(condition="c", task_id="t", case=1, output_path=made.outputs["changed-uncached"],
                    answer_path=path, answer_position=position)
        assert rescore_case(case, POLICY, shallow, [full]).verdict == CONFIRMED_FAIL  # 1:00, FALSE: wrong
    finally:
        shallow.close()
        full.close()
