"""The rules as data: every rule fires on its own probe workbook, on every engine it names."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from regrade.engines.base import EngineSettings
from regrade.engines.registry import get_engine
from regrade.engines.rules import BY_ID, RULES
from regrade.values import CannotEvaluate, CellRef
from tests.conftest import require_engines

CASES = [(rule.id, engine) for rule in RULES for engine in rule.engines]


@pytest.mark.parametrize("rule_id, engine_name", CASES, ids=[f"{r}-{e}" for r, e in CASES])
def test_each_rule_fires_on_its_probe(rule_id, engine_name):
    rule = BY_ID[rule_id]
    require_engines(engine_name)
    sheet, coordinate = rule.probe_cell.split("!")
    from openpyxl.utils.cell import coordinate_to_tuple

    row, column = coordinate_to_tuple(coordinate)
    ref = CellRef(sheet, row, column)
    settings = EngineSettings(as_grader=rule_id.startswith("grader-"))
    if engine_name in rule.past_bridge_budget:
        settings = replace(settings, bridge_work=0)
    engine = get_engine(engine_name, settings)
    try:
        values = engine.evaluate(rule.probe, [ref])
    finally:
        engine.close()
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
    from regrade.runner import RescoreSettings, rescore_run
    from regrade.runs.cases import Case

    rule = BY_ID["ironcalc-computed-name"]  # B1 = SUM(Days), Days = {0,1,2}: 3 by hand
    golden = openpyxl.Workbook()
    golden.active.title = "Sheet1"
    golden.active["B1"] = 3
    golden.save(tmp_path / "golden.xlsx")
    case = Case(condition="c", task_id="t", case=1, output_path=rule.probe, answer_path=tmp_path / "golden.xlsx",
                answer_position="B1")
    [record] = rescore_run([case], RescoreSettings("spreadsheetbench", "cached", ("ironcalc",), 60.0))
    assert record["verdict"] == "unevaluable"
    [cell] = record["cells"]
    assert cell["engines"]["ironcalc"]["rule"] == "ironcalc-computed-name"
    assert abstentions([record]) == [{"rule": "ironcalc-computed-name", "engine": "ironcalc", "cells": 1, "cases": 1}]


# Excel's value of a departure's probe, by hand: the engines the rule does not name compute it.
# offset-computed-array: SUMPRODUCT(SUBTOTAL(9,OFFSET(A1,ROW(A1:A3)-ROW(A1),0))) sums one
# reference per element, A1+A2+A3 = 1+2+3 = 6. formulon-row-of-structured-reference:
# SUMPRODUCT(ROW(Sales[Qty])) over Sales[Qty] = B2:B3 is 2+3 = 5.
COMPUTED_ELSEWHERE = [("offset-computed-array", "libreoffice", 6.0),
                      ("formulon-row-of-structured-reference", "ironcalc", 5.0),
                      ("formulon-row-of-structured-reference", "libreoffice", 5.0)]


@pytest.mark.parametrize("rule_id, engine_name, excel", COMPUTED_ELSEWHERE)
def test_an_engine_a_departure_does_not_name_computes_its_probe_as_excel_does(rule_id, engine_name, excel):
    require_engines(engine_name)
    rule = BY_ID[rule_id]
    assert engine_name not in rule.engines
    from openpyxl.utils.cell import coordinate_to_tuple

    sheet, coordinate = rule.probe_cell.split("!")
    ref = CellRef(sheet, *coordinate_to_tuple(coordinate))
    engine = get_engine(engine_name)
    try:
        assert engine.evaluate(rule.probe, [ref]).cells[ref] == excel
    finally:
        engine.close()
