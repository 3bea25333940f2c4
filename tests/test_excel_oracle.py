"""The Excel 365 oracle (fixtures/oracles/excel365, from Formulon's tests/oracle): written as
Excel's capture laid it out, and every engine and the consensus compared with Excel's values."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest

from regrade.audit.conformance import conformance
from regrade.audit.excel_oracle import (
    OracleCase, by_suite, load_suites, locale_dependent, locale_neutral, stored_formula, write_workbooks,
)
from regrade.engines.registry import open_engine
from regrade.grading.policies import get_policy
from tests.conftest import ROOT, require_engines

pytestmark = pytest.mark.slow  # the fast tier (-m 'not slow') leaves this module out

ORACLE = ROOT / "fixtures" / "oracles" / "excel365"
THREE = ("ironcalc", "libreoffice", "formulon")


def test_the_oracle_holds_what_its_readme_says():
    suites = load_suites(ORACLE)
    assert len(suites) == 59 and sum(map(len, suites.values())) == 2321  # 2,355 cases, 34 skipped by the capture
    assert (ORACLE / "LICENSE").read_text().startswith("                                 Apache License")
    versions = {json.loads(p.read_text())["environment"]["excel_version"] for p in ORACLE.glob("*.golden.json")}
    assert "16.108.1" in versions


def test_formulas_are_stored_as_excel_stores_them():
    assert stored_formula("=XLOOKUP(1,A1:A3,B1:B3)") == "=_xlfn.XLOOKUP(1,A1:A3,B1:B3)"
    assert stored_formula("=FILTER(A1:A3,A1:A3>1)") == "=_xlfn._xlws.FILTER(A1:A3,A1:A3>1)"
    assert stored_formula("=SUM(A1:OFFSET(A1,4,0))") == "=SUM(A1:OFFSET(A1,4,0))"  # OFFSET is ECMA-376's own
    assert stored_formula('=IFERROR(_xlfn.CONCAT("a","b"),"x")') == '=IFERROR(_xlfn.CONCAT("a","b"),"x")'


def test_cases_a_locale_may_change_are_told_apart():
    def case(formula, **setup):
        return OracleCase("s", "c", formula, {a: {"kind": "text", "value": v} for a, v in setup.items()},
                          {"kind": "number", "value": 0})

    assert locale_dependent(case('=COUNTIF(A1:A3,"あ")')) == "text that is not ASCII"
    assert locale_dependent(case("=DOLLAR(1234.5)")).startswith("DOLLAR")
    assert locale_dependent(case('=VALUE("10-12-1999")')) == "a date or time typed as text"
    assert locale_dependent(case('=TEXT(45383,"aaa")')) == "a TEXT format naming days, numerals or a locale"
    assert locale_dependent(case("=SUM(A1:A3)", A1="10")) is None


def test_each_case_is_a_sheet_with_its_formula_in_z1_caching_excel_s_value(tmp_path):
    suites = {"countif_edges": load_suites(ORACLE)["countif_edges"]}
    [file] = write_workbooks(suites, tmp_path)
    cases = suites["countif_edges"]
    values = openpyxl.load_workbook(file.path, data_only=True)
    formulas = openpyxl.load_workbook(file.path)
    assert len(file.cells or ()) == len(cases) == len(values.worksheets)
    for ref, case in zip(file.cells or (), cases):
        assert ref.coordinate == "Z1"
        expected = case.expect.get("value", case.expect.get("code"))
        assert values[ref.sheet]["Z1"].value == (float(expected) if case.expect["kind"] == "number" else expected)
        assert formulas[ref.sheet]["Z1"].value.text == stored_formula(case.formula)
    mixed = formulas[file.cells[6].sheet]  # countif_text_true_over_mixed: "TRUE" entered among booleans
    assert mixed["A5"].value is True  # as Excel parses an entered text: the oracle counts it among the TRUEs


def test_engines_and_the_consensus_against_excel_s_captured_values(tmp_path):
    """Every locale-neutral case with the three default engines: each engine's right share is a
    floor (it may rise; a fall is a regression), and no cell the consensus decides differs from
    Excel's value (measured 2026-12-05: docs/conformance.md)."""
    require_engines(*THREE)
    suites, left_out = locale_neutral(load_suites(ORACLE))
    assert sum(left_out.values()) == 347
    files = write_workbooks(suites, tmp_path)
    engines = [open_engine(name) for name in THREE]
    try:
        report = conformance(files, engines, get_policy("spreadsheetbench"), quorum=2)
    finally:
        for engine in engines:
            engine.close()
    right = {t.name: t.agree / (t.compared - t.abstain) for t in report.engines}
    assert all(t.compared == 1974 for t in report.engines)
    assert right["formulon"] >= 0.999 and right["ironcalc"] >= 0.947 and right["libreoffice"] >= 0.911
    c = report.consensus
    decided = c.compared - c.abstain - c.disagree
    assert decided >= 1711 and c.agree == decided  # no decided cell differs from Excel (1,729 before hazards bound every engine)
    assert not [m for m in report.mismatches if m["engine"] == "consensus"]
    rows = by_suite(report.by_file, list(THREE))
    assert len(rows) == len(files) and {"suite", "consensus_right", "consensus_undecided"} <= set(rows[0])


@pytest.mark.parametrize("flags", [("--excel-oracle", "--all-formulas"), ("--ja-jp-cases",)])
def test_conformance_options_that_cannot_go_together_are_usage_errors(flags):
    from click.testing import CliRunner

    from regrade.cli import main

    result = CliRunner().invoke(main, ["conformance", str(ORACLE), *flags])
    assert result.exit_code == 2


def test_a_folder_without_oracle_cases_is_a_usage_error(tmp_path: Path):
    from click.testing import CliRunner

    from regrade.cli import main

    result = CliRunner().invoke(main, ["conformance", str(tmp_path), "--excel-oracle"])
    assert result.exit_code == 2 and "holds no *.golden.json oracle cases" in result.output
