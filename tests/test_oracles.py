"""Excel oracles beyond SpreadsheetBench (fixtures/oracles), Formulon, and conformance on any folder.

Every file under fixtures/oracles was saved by Excel, so its cached values are Excel's own:
each engine's value is checked against them, cell by cell, by `regrade conformance --all-formulas`.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from regrade.audit.conformance import conformance, folder_files
from regrade.engines.readings import decoded_text
from regrade.engines.registry import open_engine
from regrade.grading.policies import get_policy
from regrade.values import CannotEvaluate, CellRef, ExcelError
from regrade.workbook.origin import application, saved_by_excel
from tests.conftest import ROOT, require_engines

pytestmark = pytest.mark.slow  # the fast tier (-m 'not slow') leaves this module out

ORACLES = ROOT / "fixtures" / "oracles"
THREE = ("ironcalc", "libreoffice", "formulon")


def test_every_oracle_file_says_excel_saved_it():
    files = sorted(ORACLES.rglob("*.xlsx"))
    assert len(files) == 223 + 89  # fixtures/oracles/README.md
    assert all(saved_by_excel(p) for p in files)
    assert application(ORACLES / "poi" / "FormulaEvalTestData_Copy.xlsx") == ("Microsoft Excel", "15.0300")


def _with_app(tmp_path: Path, xml: str | None) -> Path:
    path = tmp_path / "book.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
        if xml is not None:
            archive.writestr("docProps/app.xml", f"<Properties>{xml}</Properties>")
    return path


@pytest.mark.parametrize("xml, excel", [
    ("<Application>Microsoft Excel</Application><AppVersion>16.0300</AppVersion>", True),
    ("<Application>Microsoft Macintosh Excel</Application><AppVersion>16.0300</AppVersion>", True),
    ("<Application>Microsoft Excel Compatible / Openpyxl 3.1.5</Application><AppVersion>3.1</AppVersion>", False),
    ("<Application>LibreOffice/7.3.7.2$Linux_X86_64</Application><AppVersion>15.0000</AppVersion>", False),
    ("<Application>Microsoft Excel</Application>", False),  # no Excel build: not known to be Excel
    (None, False),
])
def test_saved_by_excel_reads_the_application_the_file_names(tmp_path, xml, excel):
    assert saved_by_excel(_with_app(tmp_path, xml)) is excel


def test_a_file_openpyxl_wrote_is_not_an_oracle(workbook):
    assert not saved_by_excel(workbook({"A1": 1, "B1": "=A1*2"}))


def test_escaped_characters_of_cached_text_are_decoded():
    # ECMA-376 Part 1, 22.9.2.19: _xHHHH_ is the character U+HHHH; _x005F_ writes an underscore
    assert decoded_text("_x0001_") == "\x01"
    assert decoded_text("a_x000D__x000A_b") == "a\r\nb"
    assert decoded_text("_x005F_x0001_") == "_x0001_"
    assert decoded_text("no escape") == "no escape" and decoded_text(3.0) == 3.0


def test_formulon_recomputes_a_stale_cache_and_computes_aggregate(workbook):
    require_engines("formulon")
    # written by openpyxl: no cache; AGGREGATE(9,6,...) sums ignoring errors: 1 + 2 = 3
    path = workbook({"A1": 1, "A2": 2, "A3": "=1/0", "B1": "=AGGREGATE(9,6,A1:A3)", "B2": "=A3", "B3": '=EUROCONVERT(1,"DEM","EUR")'})
    engine = open_engine("formulon")
    try:
        values = engine.evaluate(path, [CellRef("Sheet1", 1, 2), CellRef("Sheet1", 2, 2), CellRef("Sheet1", 3, 2)])
    finally:
        engine.close()
    assert values.cells[CellRef("Sheet1", 1, 2)] == 3.0
    assert values.cells[CellRef("Sheet1", 2, 2)] == ExcelError("#DIV/0!")
    assert values.cells[CellRef("Sheet1", 3, 2)].rule == "formulon-lacks-function"


@pytest.fixture(scope="module")
def three_engines():
    require_engines(*THREE)
    engines = [open_engine(name) for name in THREE]
    yield engines
    for engine in engines:
        engine.close()


def test_conformance_on_the_poi_oracles(three_engines):
    report = conformance(folder_files(ORACLES / "poi"), three_engines, get_policy("spreadsheetbench"), quorum=2)
    assert report.files.compared == report.files.examined - report.files.without_formulas  # every file Excel's
    tallies = {t.name: t for t in report.engines}
    # measured 2026-12-01 (docs/conformance.md): 94.93%, 98.14%, 97.09% of the cells each computed
    for name, floor in (("ironcalc", 0.945), ("libreoffice", 0.98), ("formulon", 0.97)):
        tally = tallies[name]
        assert tally.agree / (tally.compared - tally.abstain) >= floor, (name, tally)
    c = report.consensus
    wrong = c.compared - c.agree - c.abstain - c.disagree
    assert c.decided_by_one == 0  # quorum 2: no cell is decided by one engine alone
    # none of 17,855 decided cells wrong (26 before text-format-rejected, 12 before the departures the three
    # engines share: the sign of an exponent after a literal, MODE of one value, DATE in 1900, ADDRESS of a
    # workbook, SUMPRODUCT of single cells)
    assert wrong == 0, [m for m in report.mismatches if m["engine"] == "consensus"][:5]
    assert (c.abstain + c.disagree) / c.compared < 0.06  # 4.1%: mostly one engine's departure, surfaced


def test_formulon_s_subtotals_are_mended_where_rows_are_hidden(tmp_path):
    require_engines("formulon")
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "v"
    for row, value in enumerate([1, 2, 4, 8], start=2):
        sheet.cell(row, 1, value)
    sheet.auto_filter.ref = "A1:A5"
    sheet.auto_filter.add_filter_column(0, ["1", "4"])
    sheet.row_dimensions[3].hidden = sheet.row_dimensions[5].hidden = True  # hidden by the filter
    for row, value in enumerate([100, 200, 400], start=6):
        sheet.cell(row, 3, value)
    sheet.row_dimensions[7].hidden = True  # hidden by hand, outside the filter
    formulas = {
        "B1": ("=SUBTOTAL(9,A2:A5)", 5.0),  # 1 + 4: the filter's hidden rows are skipped
        "B2": ("=SUBTOTAL(109,A2:A5)", 5.0),
        "B3": ("=SUBTOTAL(9,C6:C8)", 700.0),  # 1-11 count a row hidden by hand: 100 + 200 + 400
        "B4": ("=SUBTOTAL(109,C6:C8)", 500.0),  # 101-111 skip it: 100 + 400
        "B5": ("=SUBTOTAL(9,C6:C8,B3)", 700.0),  # B3 is itself a subtotal: not counted
        "B6": ("=AGGREGATE(9,5,C6:C8)", 500.0),  # option 5 skips hidden rows
    }
    for coordinate, (formula, _) in formulas.items():
        sheet[coordinate] = formula
    path = tmp_path / "subtotals.xlsx"
    book.save(path)
    engine = open_engine("formulon")
    try:
        refs = [CellRef("Sheet", row, 2) for row in range(1, 7)]
        values = engine.evaluate(path, refs)
    finally:
        engine.close()
    assert [values.cells[ref] for ref in refs] == [expected for _, expected in formulas.values()]


def test_a_formulon_module_in_this_process_leaves_a_worker_its_memory(workbook):
    require_engines("formulon", "formulas")
    from regrade.engines.registry import get_engine

    path = workbook({"A1": 1, "B1": "=A1*2"})
    b1 = CellRef("Sheet1", 1, 2)
    in_process = get_engine("formulon")  # its module reserves 4 GiB of address space in this process
    assert in_process.evaluate(path, [b1]).cells[b1] == 2.0
    # forked from this process, the limit counted on top of what it inherits; counted from zero,
    # the formulas worker could not even import a module (failed to map segment)
    worker = open_engine("formulas")
    try:
        assert worker.evaluate(path, [b1]).cells[b1] == 2.0
    finally:
        worker.close()


def test_conformance_on_a_folder_compares_every_formula_of_the_files_excel_saved(tmp_path, workbook):
    require_engines("ironcalc")
    import shutil

    # DATE.xlsx (IronCalc's docs example): every formula cell's value is Excel's; the openpyxl file is skipped and counted
    shutil.copyfile(ORACLES / "ironcalc" / "docs" / "DATE.xlsx", tmp_path / "DATE.xlsx")
    (tmp_path / "nested").mkdir()
    workbook({"A1": 1, "B1": "=A1*2"}, name="nested/openpyxl.xlsx")
    engine = open_engine("ironcalc")
    try:
        report = conformance(folder_files(tmp_path), [engine], get_policy("spreadsheetbench"))
    finally:
        engine.close()
    assert (report.files.examined, report.files.compared, report.files.not_excel) == (2, 1, 1)
    from regrade.grading.grade import load_golden

    formulas = load_golden(tmp_path / "DATE.xlsx").all_formulas()
    assert report.engines[0].compared == len(formulas) > 0
    assert [f["group"] for f in report.by_file] == ["DATE.xlsx"]


@pytest.mark.parametrize("engine_name", ["ironcalc", "formulon"])  # LibreOffice lacks DROP
def test_an_error_the_file_has_no_code_for_is_compared_as_excel_stores_it(engine_name):
    require_engines(engine_name)
    from openpyxl import load_workbook

    # Excel saved DROP(A2:A8,-7) (nothing left: #CALC!) as <v>#VALUE!</v>, the kind in rich-value metadata
    path = ORACLES / "ironcalc" / "calc_tests" / "LOOKUP_AND_REFERENCE" / "DROP_TAKE.xlsx"
    assert load_workbook(path, data_only=True)["Sheet1"]["C2"].value == "#VALUE!"
    engine = open_engine(engine_name)
    try:
        cells = [CellRef("Sheet1", 2, 3), CellRef("Sheet1", 2, 5)]  # DROP(A2:A8,-7), DROP(A2:A8,1200)
        values = engine.evaluate(path, cells)
    finally:
        engine.close()
    assert [values.cells[c] for c in cells] == [ExcelError("#VALUE!")] * 2


def test_as_stored_keeps_the_errors_the_file_format_has_codes_for():
    from regrade.values import as_stored

    assert as_stored(ExcelError("#CALC!")) == as_stored(ExcelError("#SPILL!")) == ExcelError("#VALUE!")
    assert as_stored(ExcelError("#N/A")) == ExcelError("#N/A") and as_stored(ExcelError("#GETTING_DATA")) == ExcelError("#GETTING_DATA")
    assert as_stored(3.0) == 3.0 and as_stored("#CALC!") == "#CALC!"  # a text is not an error


@pytest.mark.parametrize("engine_name", THREE)
def test_the_engines_abstain_where_excel_s_own_arithmetic_or_format_codes_decide(engine_name, workbook):
    require_engines(engine_name)
    plain = workbook({"A1": 0.5, "B1": '=TEXT(A1,"0.0%")', "B2": "=1/0"})
    # TAN(PI()/2): Excel caches 1.6324552277619072e16, every engine here 1.633123935319537e16
    # (how the argument is reduced by pi decides the digits next to a pole)
    tan = ORACLES / "ironcalc" / "docs" / "TAN.xlsx"
    # TEXT(123456.789, "|#%e-#|"): Excel caches "|1%e5|", every engine here #VALUE!
    text = ORACLES / "poi" / "NumberFormatApproxTests.xlsx"
    engine = open_engine(engine_name)
    try:
        near_pole = engine.evaluate(tan, [CellRef("Sheet1", 8, 2), CellRef("Sheet1", 7, 2)])  # TAN(PI()/2), TAN(0.5)
        formatted = engine.evaluate(text, [CellRef("Tests", 4, 1)])  # |#%e-#|
        controls = engine.evaluate(plain, [CellRef("Sheet1", 1, 2), CellRef("Sheet1", 2, 2)])
    finally:
        engine.close()
    assert near_pole.cells[CellRef("Sheet1", 8, 2)].rule == "trigonometric-pole"
    assert near_pole.cells[CellRef("Sheet1", 7, 2)] == pytest.approx(0.5463024898437905)  # tan 0.5, by hand: sin/cos
    assert isinstance(formatted.cells[CellRef("Tests", 4, 1)], CannotEvaluate)  # text-format-rejected, LibreOffice's Err:502
    # a format every engine renders, by hand: 0.5 as a percent with one decimal; an error TEXT does not read
    assert list(controls.cells.values()) == ["50.0%", ExcelError("#DIV/0!")]


POI_EVERYTHING = ORACLES / "poi" / "FormulaEvalTestData_Copy.xlsx"


@pytest.mark.parametrize("engine_name", THREE)
def test_the_engines_abstain_where_they_share_a_departure_from_excel_s_functions(engine_name):
    require_engines(engine_name)
    sheet = "EverythingTests"
    # Excel's caches (POI's file, saved by Excel 2013), which all three engines miss alike:
    departs = {
        "F128": "address-of-a-workbook",  # ADDRESS(2,3,3,TRUE,"[Book1]Sheet1"): [Book1]Sheet1!$C2, unquoted
        "I320": "date-in-1900",  # DATE(1900,1,22222): 22222, in a 1900 with a 29 February; the engines 22223
        "M936": "mode-of-a-scalar",  # MODE(B9,2,D7), D7 empty: #VALUE!; the engines 2
        "J1328": "product-of-single-cells",  # SUMPRODUCT(G1330:G1330,I1330:I1330), G1330 "4": #VALUE!; the engines 0
    }
    # ... and cells of the same functions that the rules leave to the engines, with Excel's cached values
    kept = {"D128": "$C$2", "G320": 39083.0, "I936": 1.0, "G1328": 1762.2}  # ADDRESS(2,3), DATE(2007,1,1), MODE(1,1,2,3), SUMPRODUCT(3,B10,C9)
    from openpyxl.utils.cell import coordinate_to_tuple

    refs = {c: CellRef(sheet, *coordinate_to_tuple(c)) for c in [*departs, *kept]}
    exponent = CellRef("Tests", 41, 1)  # TEXT(123456.789,"|#.#|E+|#|"): Excel "|1.2|E|+5|", two engines "|1.2|E+|5|"
    engine = open_engine(engine_name)
    try:
        values = engine.evaluate(POI_EVERYTHING, list(refs.values()))
        formatted = engine.evaluate(ORACLES / "poi" / "NumberFormatApproxTests.xlsx", [exponent])
    finally:
        engine.close()
    for coordinate, rule in departs.items():
        assert getattr(values.cells[refs[coordinate]], "rule", None) == rule, (coordinate, values.cells[refs[coordinate]])
    for coordinate, excel in kept.items():
        assert values.cells[refs[coordinate]] == pytest.approx(excel) if isinstance(excel, float) else values.cells[refs[coordinate]] == excel
    assert isinstance(formatted.cells[exponent], CannotEvaluate)  # IronCalc: text-format-rejected first


def test_a_number_only_binary_rounding_sets_apart_abstains():
    from regrade.grading.policies import rounding_boundary

    policy = get_policy("spreadsheetbench")
    # Excel's SUBTOTAL(109,Table17[Total]) in IronCalc's tables.xlsx caches 17698.495000000003 (17698.5 to
    # 2 places); the engines sum to 17698.495, stored as 17698.494999999999 (17698.49)
    split = rounding_boundary(policy, 17698.495000000003, 17698.495)
    assert isinstance(split, CannotEvaluate) and split.reason == "rounding-boundary"
    assert rounding_boundary(policy, 17698.495000000003, 17698.5) is None  # equal to 2 places
    assert rounding_boundary(policy, 17698.495, 17698.505) is None  # a cent apart: a real difference
    assert rounding_boundary(policy, "17698.495000000003", 17698.495) is None  # a text is not computed arithmetic
    assert rounding_boundary(policy, True, 1.0) is None


def test_excel_s_own_table_total_is_not_called_wrong_over_binary_rounding(tmp_path):
    require_engines(*THREE)
    from regrade.run import RescoreSettings, rescore_run
    from regrade.runs.cases import Case

    answer = ORACLES / "ironcalc" / "calc_test_no_export" / "tables.xlsx"
    case = Case(condition="c", task_id="t", case=1, output_path=answer, answer_path=answer,
                answer_position="'Functions Hidden'!F45")
    [record] = rescore_run([case], RescoreSettings("spreadsheetbench", "cached", THREE, 60.0, quorum=2))
    assert record.shallow_pass is True  # Excel's cache against itself
    assert record.verdict == "unevaluable", record  # not false-pass: the engines' 17698.495 rounds the other way
    assert record.reasons == ["rounding-boundary"], record
