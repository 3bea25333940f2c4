"""The rules as data: every rule fires on its own probe workbook, on every engine it names."""

from __future__ import annotations

import json
from dataclasses import replace

import openpyxl
import pytest

from regrade.engines.base import EngineSettings
from regrade.engines.rules import BY_ID, DEPARTING_ENGINES, RULES
from regrade.values import CannotEvaluate, CellRef
from tests.conftest import require_engines

CASES = [(rule.id, engine) for rule in RULES for engine in rule.engines]


@pytest.mark.parametrize("rule_id, engine_name", CASES, ids=[f"{r}-{e}" for r, e in CASES])
def test_each_rule_fires_on_its_probe(rule_id, engine_name, shared_engine):
    rule = BY_ID[rule_id]
    sheet, coordinate = rule.probe_cell.split("!")
    from openpyxl.utils.cell import coordinate_to_tuple

    row, column = coordinate_to_tuple(coordinate)
    ref = CellRef(sheet, row, column)
    settings = EngineSettings(as_grader=rule_id.startswith("grader-"))
    if engine_name in rule.past_bridge_budget:
        settings = replace(settings, bridge_work=0)
    values = shared_engine(engine_name, settings).evaluate(rule.probe, [ref])
    assert values.failure is None, values.failure
    value = values.cells[ref]
    assert isinstance(value, CannotEvaluate), f"{engine_name} computed {value!r} on {rule.probe.name}"
    assert value.rule == rule_id, value
    assert value.reason == rule.reason


def test_rule_ids_are_stable_kebab_case_and_every_field_is_filled():
    for rule in RULES:
        assert rule.id == rule.id.lower() and " " not in rule.id and "_" not in rule.id
        assert rule.engines and rule.trigger and rule.why and rule.evidence
        assert rule.probe.is_file(), f"no probe for {rule.id}: python3 fixtures/make_rule_probes.py"


def test_regrade_rules_lists_the_table_as_json():
    from click.testing import CliRunner

    from regrade.cli import main

    result = CliRunner().invoke(main, ["rules", "--format", "json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert [row["id"] for row in listed] == [rule.id for rule in RULES]
    assert {"id", "engines", "why", "evidence", "single_task"} <= set(listed[0])
    assert isinstance(listed[0]["engines"], list)
    ironcalc_only = CliRunner().invoke(main, ["rules", "--engine", "libreoffice", "--format", "json"])
    assert all("libreoffice" in row["engines"] for row in json.loads(ironcalc_only.output))


def test_results_and_diff_count_abstentions_by_rule_id(tmp_path):
    import openpyxl

    from regrade.paired.diff import abstentions
    from regrade.run import RescoreSettings, rescore_run
    from regrade.runs.cases import Case

    rule = BY_ID["ironcalc-computed-name"]  # B1 = SUM(Days), Days = {0,1,2}: 3 by hand
    golden = openpyxl.Workbook()
    golden.active.title = "Sheet1"
    golden.active["B1"] = 3
    golden.save(tmp_path / "golden.xlsx")
    case = Case(condition="c", task_id="t", case=1, output_path=rule.probe, answer_path=tmp_path / "golden.xlsx",
                answer_position="B1")
    [record] = rescore_run([case], RescoreSettings("spreadsheetbench", "cached", ("ironcalc",), 60.0))
    assert record.verdict == "unevaluable"
    [cell] = record.cells
    assert cell.engines["ironcalc"]["rule"] == "ironcalc-computed-name"
    assert abstentions([record]) == [{"rule": "ironcalc-computed-name", "engine": "ironcalc", "cells": 1, "cases": 1}]


# Excel's value of a departure's probe, by hand: the engines the rule does not name compute it.
# offset-computed-array: SUMPRODUCT(SUBTOTAL(9,OFFSET(A1,ROW(A1:A3)-ROW(A1),0))) sums one
# reference per element, A1+A2+A3 = 1+2+3 = 6. formulon-row-of-structured-reference:
# SUMPRODUCT(ROW(Sales[Qty])) over Sales[Qty] = B2:B3 is 2+3 = 5.
# libreoffice-logical-as-number: SUM(A1:A3) over 10, TRUE, 30 skips the logical, 40 (Excel's SUM
# documentation; the Excel 365 oracle's aggregate/sum_range_skips_bool). ironcalc-textjoin-empty-text:
# TEXTJOIN(",",TRUE,"a","","c") skips the empty text, "a,c" (the oracle's text/textjoin_ignore_empty_true).
# ironcalc-offset-negative-size: OFFSET(C1,2,0,-2,1) is C2:C3 reaching up from C3, 10 + 20 = 30 (LibreOffice
# gives Err:502 there and abstains by libreoffice-engine-error).
# ironcalc-text-fraction: TEXT(1.5,"# ?/?") is "1 1/2".
COMPUTED_ELSEWHERE = [("offset-computed-array", "libreoffice", 6.0),
                      ("libreoffice-logical-as-number", "ironcalc", 40.0),
                      ("libreoffice-logical-as-number", "formulon", 40.0),
                      ("ironcalc-textjoin-empty-text", "libreoffice", "a,c"),
                      ("ironcalc-textjoin-empty-text", "formulon", "a,c"),
                      ("ironcalc-offset-negative-size", "formulon", 30.0),
                      ("ironcalc-text-fraction", "libreoffice", "1 1/2"),
                      ("ironcalc-text-fraction", "formulon", "1 1/2"),
                      ("formulon-row-of-structured-reference", "ironcalc", 5.0),
                      ("formulon-row-of-structured-reference", "libreoffice", 5.0)]


@pytest.mark.parametrize("rule_id, engine_name, excel", COMPUTED_ELSEWHERE)
def test_an_engine_a_departure_does_not_name_computes_its_probe_as_excel_does(rule_id, engine_name, excel,
                                                                            shared_engine):
    rule = BY_ID[rule_id]
    assert engine_name not in rule.engines
    from openpyxl.utils.cell import coordinate_to_tuple

    sheet, coordinate = rule.probe_cell.split("!")
    ref = CellRef(sheet, *coordinate_to_tuple(coordinate))
    assert shared_engine(engine_name).evaluate(rule.probe, [ref]).cells[ref] == excel


CLEARANCES = [(rule.id, clearance.engine, cell) for rule in RULES for clearance in rule.cleared for cell in clearance.cells]


@pytest.mark.parametrize("rule_id, engine_name, cell", CLEARANCES, ids=[f"{r}-{e}" for r, e, _ in CLEARANCES])
def test_a_cleared_engine_computes_the_cells_that_clear_it_as_excel_did(rule_id, engine_name, cell, tmp_path,
                                                                         shared_engine):
    """A hazard's clearance holds only while the engine still computes Excel's captured values there."""
    from regrade.audit.conformance import conformance
    from regrade.audit.excel_oracle import clearance_files
    from regrade.grading.policies import get_policy

    engine = shared_engine(engine_name)
    report = conformance(clearance_files((cell,), tmp_path), [engine], get_policy("spreadsheetbench"))
    [tally] = report.engines
    assert tally.compared > 0 and tally.agree == tally.compared, (tally, report.mismatches)


def test_a_hazard_binds_every_departing_engine_it_does_not_clear():
    hazards = [rule for rule in RULES if rule.hazard]
    assert {"date-from-text", "date-text-in-criteria", "approximate-match-over-computed-array"} <= {r.id for r in hazards}
    for rule in hazards:
        cleared = {c.engine for c in rule.cleared}
        assert set(rule.engines) | cleared == set(DEPARTING_ENGINES) and not set(rule.engines) & cleared, rule.id
        assert all(c.cells for c in rule.cleared), rule.id
    assert not [rule.id for rule in RULES if rule.cleared and not rule.hazard]


def test_an_engine_shown_wrong_on_a_hazard_by_excel_s_own_value_is_not_cleared(tmp_path):
    """TIMEVALUE("1:30PM") is #VALUE! in Excel 365 (the oracle); IronCalc and LibreOffice give
    0.5625, so date-from-text binds both, and Formulon, right on every case, is cleared."""
    assert set(BY_ID["date-from-text"].engines) == {"ironcalc", "libreoffice"}
    from regrade.audit.excel_oracle import clearance_files

    [file] = clearance_files(("excel365:datevalue_timevalue/timevalue_no_space_before_ampm",), tmp_path)
    require_engines("ironcalc")
    from regrade.engines.registry import open_engine

    engine = open_engine("ironcalc")
    try:
        [ref] = file.cells or ()
        assert engine.evaluate(file.path, [ref]).cells[ref].rule == "date-from-text"
    finally:
        engine.close()


# Where Excel tells a logical from a number (its documentation of SUM, COUNTIF, comparison and &)
LOGICAL_LITERALS = [('=TRUE>"zzz"', True), ('=TRUE&"x"', True), ("=IF(A1=TRUE,1,2)", True),
                    ('=COUNTIF(A1:A8,"<>TRUE")', True), ("=COUNTIF(A1:A8,FALSE)", True), ('=TEXT(TRUE,"0")', True),
                    ("=VLOOKUP(A1,B:C,2,FALSE)", False), ("=IF(A1>5,TRUE,FALSE)", False), ('=MATCH(TRUE,A1:A5>3,0)', False),
                    ('="TRUE"&A1', False), ("=AND(A1,TRUE())", False)]


@pytest.mark.parametrize("formula, writes", LOGICAL_LITERALS)
def test_a_logical_literal_is_found_where_excel_tells_it_from_a_number(formula, writes):
    from regrade.engines.libreoffice.logicals import writes_a_logical_literal

    assert writes_a_logical_literal(formula) is writes


def test_logical_constants_are_read_from_the_sheet_xml_and_formulas_giving_one_are_not(tmp_path):
    from regrade.workbook.sheets import logical_constants

    book = openpyxl.Workbook()
    book.active.title = "Data"
    book.active["A2"], book.active["B3"], book.active["C1"], book.active["D1"] = True, False, 1, "=1>0"
    book.save(tmp_path / "b.xlsx")
    assert logical_constants(tmp_path / "b.xlsx") == {"Data": {(2, 1), (3, 2)}}
    assert logical_constants(tmp_path / "missing.xlsx") == {}


# Microsoft's SUMIF: the sum range's top left cell starts a range of the criteria range's shape
SUM_RANGES = [('SUMIF(A1:A3,"x",B1)', "anchor"), ('SUMIF(Data!$A$1:$C$1,"x",A2)', "anchor"),
              ('AVERAGEIF(A:A,"x",B:B)', None), ('SUMIF(A1:A3,"x",B1:B2)', "other"), ('SUMIF(A1:A3,"x",B1:B3)', None),
              ('SUMIF(A1,"x",B1)', None), ('SUMIF(A1:A3,"x",OFFSET(B1,0,0,3))', None), ('SUMIF(A1:A3,"x")', None)]


@pytest.mark.parametrize("call_text, kind", SUM_RANGES)
def test_a_sum_range_of_another_shape_than_its_range_is_found(call_text, kind):
    from regrade.engines.departures import sum_range_anchor, sum_range_of_another_shape
    from regrade.workbook.calls import calls

    call = calls("=" + call_text)[-1]
    assert (sum_range_anchor(call), sum_range_of_another_shape(call)) == (kind == "anchor", kind == "other")
