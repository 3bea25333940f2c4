"""LibreOffice and gnumeric on real files; expected values computed by hand beside them."""


import pytest

from regrade.engines.base import EngineSettings
from regrade.values import CannotEvaluate, CellRef, ExcelError
from regrade.engines.gnumeric import GnumericEngine
from regrade.engines.libreoffice.engine import LibreOfficeEngine
from regrade.engines.libreoffice.rewrites import libreoffice_rewrites
from regrade.grading.policies import get_policy
from regrade.grading.consensus import consensus
from regrade.engines.registry import open_engine
from tests.conftest import DEMO, require_engines

STALE = DEMO / "outputs" / "community" / "1_59511_output.xlsx"  # =ROUND(E/1000,0) over ROUNDUP's cache
F = [CellRef("Sheet1", r, 6) for r in range(2, 7)]


@pytest.fixture
def libreoffice(shared_engine):
    return shared_engine("libreoffice", EngineSettings(timeout_s=60))


@pytest.fixture
def split(workbook):
    """Non-CSE =SUM(C2:C3*D2:D3) in row 2 and AGGREGATE over an error."""
    return workbook({"C2": 2, "C3": 3, "D2": 4, "D3": 5, "E2": "=SUM(C2:C3*D2:D3)",
                     "A1": 1, "A2": "=1/0", "A3": 4, "B1": "=_xlfn.AGGREGATE(9,6,A1:A3)", "B2": '=_xlfn.TEXTSPLIT("a,b",",")'},
                    title="S")


def test_libreoffice_recomputes_instead_of_echoing_the_cache(libreoffice):
    # E = 300, 2000, 3000, 7200, 8500: ROUND(E/1000, 0) = 0, 2, 3, 7, 9 (the cache holds ROUNDUP's 1, 2, 3, 8, 9)
    assert [libreoffice.evaluate(STALE, F).cells[c] for c in F] == [0.0, 2.0, 3.0, 7.0, 9.0]


def test_libreoffice_computes_aggregate_and_abstains_on_textsplit(libreoffice, split):
    values = libreoffice.evaluate(split, [CellRef("S", 1, 2), CellRef("S", 2, 2)]).cells
    assert values[CellRef("S", 1, 2)] == 5.0  # SUM ignoring errors (option 6): 1 + 4
    assert values[CellRef("S", 2, 2)] == CannotEvaluate("unsupported-function", "LibreOffice lacks TEXTSPLIT", rule="libreoffice-lacks-function")  # 25.2 does not have it


@pytest.mark.slow  # starts its own LibreOffice
def test_libreoffice_restarts_after_a_timeout(workbook):
    require_engines("libreoffice")
    path = workbook({"A1": 3, "A2": "=A1*A1"})
    libreoffice = LibreOfficeEngine(EngineSettings(timeout_s=60))  # its own: the test changes its limit
    try:
        libreoffice.timeout_s = 0.0001
        assert libreoffice.evaluate(path, [CellRef("Sheet1", 2, 1)]).failure.reason == "timeout"
        libreoffice.timeout_s = 60
        assert libreoffice.evaluate(path, [CellRef("Sheet1", 2, 1)]).cells == {CellRef("Sheet1", 2, 1): 9.0}
    finally:
        libreoffice.close()


def test_libreoffice_reports_an_unreadable_file(libreoffice, tmp_path):
    corrupt = tmp_path / "corrupt.xlsx"
    corrupt.write_bytes(b"PK\x03\x04" + b"\x00" * 64)
    assert libreoffice.evaluate(corrupt, [CellRef("Sheet1", 1, 1)]).failure.reason == "unreadable-output"  # screened


def test_gnumeric_recomputes_and_abstains_on_aggregate(split):
    require_engines("gnumeric")
    grader = GnumericEngine(EngineSettings(as_grader=True))  # gnumeric as a value-only grader's recalculation
    assert [grader.evaluate(STALE, F).cells[c] for c in F] == [0, 2, 3, 7, 9]
    aggregate = grader.evaluate(split, [CellRef("S", 1, 2)]).cells[CellRef("S", 1, 2)]
    assert aggregate.reason == "unsupported-function"  # the point: a gnumeric-based grader cannot see it
    # as a full engine, regrade computes the AGGREGATE over gnumeric's values: 1 + 4
    assert GnumericEngine().evaluate(split, [CellRef("S", 1, 2)]).cells[CellRef("S", 1, 2)] == 5


@pytest.mark.slow
def test_consensus_surfaces_the_implicit_intersection_split(split):
    require_engines("ironcalc", "libreoffice", "gnumeric")
    targets = [CellRef("S", 2, 5), CellRef("S", 1, 2)]
    computed = {name: open_engine(name).evaluate(split, targets) for name in ("ironcalc", "libreoffice", "gnumeric")}
    stored = open_engine("cached").evaluate(split, targets)
    agreed = consensus(get_policy("spreadsheetbench"), stored, computed)
    # dynamic arrays: 2*4 + 3*5 = 23; implicit intersection in row 2: 2*4 = 8
    split_cell = agreed.view.cells[CellRef("S", 2, 5)]
    assert split_cell.reason == "engines-disagree"
    assert agreed.by_engine[CellRef("S", 2, 5)] == {"ironcalc": 23.0, "libreoffice": 8.0, "gnumeric": 8}
    # AGGREGATE: 1 + 4 = 5 in LibreOffice, and through regrade over IronCalc's and gnumeric's values
    assert agreed.view.cells[CellRef("S", 1, 2)] == 5.0


@pytest.mark.parametrize("name", ["formulas", "pycel"])
def test_python_engines_recompute_instead_of_echoing_the_cache(name):
    # E = 300, 2000, 3000, 7200, 8500: ROUND(E/1000, 0) = 0, 2, 3, 7, 9; the cache holds 1, 2, 3, 8, 9
    require_engines(name)
    values = open_engine(name).evaluate(STALE, F).cells
    assert [values[c] for c in F] == [0, 2, 3, 7, 9]


def test_a_gnumeric_shallow_grade_fails_aggregate_as_unsupported_in_recalc(workbook):
    require_engines("gnumeric")
    from regrade.engines.ironcalc.engine import IronCalcEngine
    from regrade.grading.rescore import rescore_case
    from regrade.runs.cases import Case

    # AGGREGATE(9,6,...) sums A1:A3 ignoring the error: 1 + 4 = 5
    output = workbook({"A1": 1, "A2": "=1/0", "A3": 4, "B1": "=_xlfn.AGGREGATE(9,6,A1:A3)"}, name="output.xlsx")
    golden = workbook({"B1": 5}, name="golden.xlsx")
    case = Case(condition="x", task_id="t", case=1, output_path=output, answer_path=golden, answer_position="B1")
    result = rescore_case(case, get_policy("spreadsheetbench"), GnumericEngine(EngineSettings(as_grader=True)), [IronCalcEngine()])
    assert (result.shallow_pass, result.full_pass, result.verdict) == (False, True, "artifact")
    assert [c.reason for c in result.cells] == ["unsupported-in-recalc"]


@pytest.fixture
def subtotals(tmp_path):
    """A1:A4 = 1, 2, 3, 4 with row 4 hidden; C2 a SUBTOTAL over a range holding another."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    for row, value in enumerate([1, 2, 3, 4], start=1):
        sheet.cell(row, 1, value)
    sheet.row_dimensions[4].hidden = True
    sheet["B1"], sheet["B2"], sheet["B3"] = "=SUBTOTAL(9,A1:A4)", "=SUBTOTAL(109,A1:A4)", "=B2*2"
    sheet["D1"], sheet["D2"], sheet["D3"], sheet["D4"] = 1, 2, "=SUBTOTAL(9,D1:D2)", 4
    sheet["C2"] = "=SUBTOTAL(9,D1:D4)"
    path = tmp_path / "subtotals.xlsx"
    book.save(path)
    return path


@pytest.mark.parametrize("name", ["gnumeric", "pycel"])
def test_subtotals_an_engine_gets_wrong_are_computed_by_regrade_or_abstentions(name, subtotals):
    require_engines(name)
    cells = [CellRef("Sheet", r, c) for r, c in ((1, 2), (2, 2), (3, 2), (2, 3))]
    values = open_engine(name).evaluate(subtotals, cells).cells
    assert values[cells[0]] == 10  # SUBTOTAL 9 counts the hidden row: 1 + 2 + 3 + 4
    # SUBTOTAL 109 skips it: 1 + 2 + 3 = 6 (gnumeric gives #NUM!, pycel 10); regrade computes
    # it from the engine's values of A1:A4. B3 = B2 * 2 is the engine's own arithmetic on its
    # wrong B2: an abstention.
    assert values[cells[1]] == 6
    assert values[cells[2]].rule == "totals-not-computed"
    assert values[cells[3]] == 7  # Excel skips the SUBTOTAL in D3: 1 + 2 + 4 (pycel alone counts it)


@pytest.fixture
def filtered(tmp_path):
    """Rows 2-5 (a 1, b 2, a 4, b 8) under a filter showing "a" (rows 3 and 5 hidden by it);
    row 7 (16) hidden by hand, B8 = 32, B9 a SUBTOTAL over B7:B8."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "S"
    sheet["A1"], sheet["B1"] = "k", "v"
    for row, (key, value) in enumerate([("a", 1), ("b", 2), ("a", 4), ("b", 8)], start=2):
        sheet.cell(row, 1, key)
        sheet.cell(row, 2, value)
    sheet.auto_filter.ref = "A1:B5"
    sheet.auto_filter.add_filter_column(0, ["a"])
    sheet.row_dimensions[3].hidden = sheet.row_dimensions[5].hidden = True
    sheet["B7"], sheet["B8"], sheet["B9"] = 16, 32, "=SUBTOTAL(9,B7:B8)"
    sheet.row_dimensions[7].hidden = True
    formulas = ["=SUBTOTAL(9,B2:B5)", "=SUBTOTAL(109,B2:B5)", "=SUBTOTAL(2,B2:B5)", "=SUBTOTAL(109,B7:B9)",
                "=SUBTOTAL(9,B7:B9)", "=SUBTOTAL(104,B2:B8)", "=D1+1"]
    for row, formula in enumerate(formulas, start=1):
        sheet.cell(row, 4, formula)
    path = tmp_path / "filtered.xlsx"
    book.save(path)
    return path


# Every SUBTOTAL skips the rows a filter hides, whatever its number; only 101-111 skip rows
# hidden by hand; none counts a nested SUBTOTAL (B9).
FILTERED = [1 + 4,  # D1: rows 3 and 5 are filtered out
            1 + 4,  # D2
            2,  # D3: COUNT of the two rows left
            32,  # D4: B7's row is hidden, B9 is nested
            16 + 32,  # D5: SUBTOTAL 9 counts the row hidden by hand, not the nested B9
            32,  # D6: MAX of 1, 4, 32 (rows 3, 5 filtered, 7 hidden, B1 text)
            1 + 4 + 1]  # D7 = D1 + 1


@pytest.mark.parametrize("name", ["ironcalc", "libreoffice", "gnumeric", "pycel"])
def test_subtotals_skip_the_rows_a_filter_hides(name, filtered, shared_engine):
    cells = [CellRef("S", row, 4) for row in range(1, 8)]
    values = [shared_engine(name).evaluate(filtered, cells).cells[c] for c in cells]
    assert values[:6] == FILTERED[:6]
    if name in ("libreoffice", "ironcalc"):  # LibreOffice skips filtered rows itself, IronCalc's bridge too
        assert values[6] == FILTERED[6]
    else:  # the engine's own D1 counts the filtered rows: D7 = D1 + 1 is an abstention
        assert values[6].rule == "totals-not-computed"


def private_profiles(folder) -> list:
    return sorted(folder.glob("regrade-libreoffice-*"))


@pytest.mark.slow
def test_a_pool_run_leaves_no_libreoffice_profile_behind(tmp_path, monkeypatch):
    """Pool workers end with os._exit, which skips atexit; their LibreOffice profiles must still go."""
    require_engines("libreoffice")
    import tempfile
    from regrade.run import RescoreSettings, rescore_run
    from regrade.runs.cases import spreadsheetbench_cases
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # forked workers inherit it
    cases = spreadsheetbench_cases(DEMO / "dataset", {"community": DEMO / "outputs" / "community"})[:4]
    settings = RescoreSettings(policy="spreadsheetbench", shallow="cached", engines=("libreoffice",), timeout_s=60)
    records = rescore_run(cases, settings, workers=2)
    assert len(records) == 4 and all(r.verdict for r in records)
    assert private_profiles(tmp_path) == []


@pytest.mark.slow  # starts its own LibreOffice
def test_the_libreoffice_helper_removes_its_profile_when_regrade_vanishes(tmp_path, monkeypatch):
    """A worker killed mid-run never calls close(); its helper sees end of input and cleans up itself."""
    require_engines("libreoffice")
    import tempfile
    import time
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    engine = LibreOfficeEngine(EngineSettings(timeout_s=60))
    assert engine.evaluate(STALE, F[:1]).cells[F[0]] == 0.0  # ROUND(300/1000, 0)
    assert len(private_profiles(tmp_path)) == 1
    helper, engine._helper = engine._helper, None  # as if regrade's process had died: nobody calls close()
    helper.stdin.close()
    helper.wait(30)
    deadline = time.monotonic() + 30
    while private_profiles(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert private_profiles(tmp_path) == []


@pytest.mark.parametrize("name", ["gnumeric", "pycel"])
def test_a_subtotal_regrade_computes_reads_dates_as_serial_numbers(name, tmp_path):
    import datetime

    import openpyxl

    require_engines(name)
    book = openpyxl.Workbook()
    sheet = book.active
    for row, day in enumerate([datetime.date(2024, 1, 1), datetime.date(2024, 1, 5), datetime.date(2024, 2, 1)], start=1):
        sheet.cell(row, 1, day)
    sheet.row_dimensions[3].hidden = True
    sheet["B1"] = "=SUBTOTAL(104,A1:A3)"
    sheet["B1"].number_format = "yyyy-mm-dd"
    path = tmp_path / "dates.xlsx"
    book.save(path)
    value = open_engine(name).evaluate(path, [CellRef("Sheet", 1, 2)]).cells[CellRef("Sheet", 1, 2)]
    # the latest visible date is 2024-01-05, serial 45296 (2024-01-01 is 45292); pycel gives serials
    assert value == (datetime.datetime(2024, 1, 5) if name == "gnumeric" else 45296)


def test_gnumeric_as_a_graders_recalculation_keeps_its_subtotal_defects(filtered):
    """A gnumeric-based grader sees gnumeric's own SUBTOTALs: regrade mends them only when
    gnumeric is a full engine, never when it stands for that grader."""
    require_engines("gnumeric")
    cells = [CellRef("S", 1, 4), CellRef("S", 2, 4)]
    raw = open_engine("gnumeric", as_grader=True).evaluate(filtered, cells).cells
    assert raw[cells[0]] == 1 + 2 + 4 + 8  # SUBTOTAL 9 counting the filtered rows
    assert raw[cells[1]].reason == "unsupported-function"  # gnumeric's #NUM! for SUBTOTAL 109: it cannot compute it
    mended = open_engine("gnumeric").evaluate(filtered, cells).cells
    assert [mended[c] for c in cells] == FILTERED[:2]


@pytest.mark.parametrize("name", ["gnumeric", "formulas", "pycel"])
def test_aggregate_over_references_is_computed_for_the_engines_that_lack_it(name, workbook):
    import openpyxl

    require_engines(name)
    # A1:A6 = 3, 1, #DIV/0!, 4, 1, 5 with row 6 hidden
    path = workbook({"A1": 3, "A2": 1, "A3": "=1/0", "A4": 4, "A5": 1, "A6": 5,
                     "B1": "=_xlfn.AGGREGATE(9,6,A1:A6)", "B2": "=_xlfn.AGGREGATE(14,6,A1:A6,2)",
                     "B3": "=_xlfn.AGGREGATE(4,7,A1:A6)", "B4": "=_xlfn.AGGREGATE(9,4,A1:A6)", "B5": "=B1*2"})
    book = openpyxl.load_workbook(path)
    book.active.row_dimensions[6].hidden = True
    book.save(path)
    cells = [CellRef("Sheet1", row, 2) for row in range(1, 6)]
    values = open_engine(name).evaluate(path, cells).cells
    assert values[cells[0]] == 3 + 1 + 4 + 1 + 5  # SUM skipping the error
    assert values[cells[1]] == 4  # the second largest of 3, 1, 4, 1, 5
    assert values[cells[2]] == 4  # MAX skipping the error and hidden row 6
    assert values[cells[3]] == ExcelError("#DIV/0!")  # option 4 ignores nothing
    assert values[cells[4]].reason == "unsupported-function"  # the engine's own arithmetic on an AGGREGATE it lacks


def test_libreoffice_abstains_on_approximate_match_over_a_computed_array(libreoffice, workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # A1:A8 = x y x z y x z z. Excel's MATCH(2, 1/(A1:A8="x")) is a binary search over
    # 1, #DIV/0!, 1, ... that lands on the last 1: row 6. LibreOffice answers the first, 1.
    cells = {f"A{row}": letter for row, letter in enumerate("xyxzyxzz", start=1)}
    path = workbook({**cells, "C1": ArrayFormula("C1", '=MATCH(2,1/(A1:A8="x"))'), "C2": "=C1+1",
                     "C3": '=LOOKUP(2,1/(A1:A8="x"),ROW(A1:A8))', "C4": '=MATCH("y",A1:A8,0)'})
    values = libreoffice.evaluate(path, [CellRef("Sheet1", row, 3) for row in range(1, 5)]).cells
    c1, c2, c3, c4 = (values[CellRef("Sheet1", row, 3)] for row in range(1, 5))
    assert c1.rule == c2.rule == "approximate-match-over-computed-array" and "MATCH" in c1.detail  # C2 reads C1
    assert (c3, c4) == (6.0, 2.0)  # LOOKUP's last match, row 6; an exact MATCH of y, row 2


def test_libreoffice_computes_mod_with_excels_precision(libreoffice, workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # 1.000003 is stored as 1.0000029999999999752: MOD(1.000003, 1) is 2.9999999999752E-06 in
    # IEEE arithmetic, 3E-06 in Excel, which keeps 15 significant digits of the dividend; so
    # INT(10^6 * MOD(...)) is 3 in Excel and 2 without that rounding
    path = workbook({"A1": 1.000003, "A2": 2.000004, "A3": 7, "B1": "=INT(10^6*MOD(A1,1))",
                     "B2": ArrayFormula("B2", "=SUM(INT(10^6*MOD(A1:A2,1)))"), "B3": "=MOD(A3,-2)",
                     "B4": '=_xlfn.AGGREGATE(14,6,MOD(A1:A3,1)*10^6,1)'})
    before = (path.read_bytes(), path.stat().st_mtime_ns, sorted(path.parent.iterdir()))
    values = libreoffice.evaluate(path, [CellRef("Sheet1", row, 2) for row in range(1, 5)]).cells
    # the array formula is set in an untitled copy: the file and its folder are left as they were
    assert (path.read_bytes(), path.stat().st_mtime_ns, sorted(path.parent.iterdir())) == before
    assert values[CellRef("Sheet1", 1, 2)] == 3
    assert values[CellRef("Sheet1", 2, 2)] == 3 + 4  # element by element in an array formula
    assert values[CellRef("Sheet1", 3, 2)] == -1  # MOD takes the divisor's sign: 7 - (-2) * (-4)
    assert values[CellRef("Sheet1", 4, 2)] == pytest.approx(4)  # the largest of 3, 4, 0 (millionths)


def test_libreoffice_reads_serials_before_march_1900_as_excel_does(libreoffice, workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # Excel counts 1900 as a leap year: serial 1 is 1 Jan 1900, 59 is 28 Feb, 61 is 1 Mar.
    # LibreOffice counts from 30 Dec 1899: its serial 1 is 31 Dec 1899, its 61 is 1 Mar too.
    # SpreadsheetBench 30468: DAY(EOMONTH(D,0)+1-DAY(EOMONTH(D,0)-D+1)) for D = 13 Apr 2024
    # (45395) is DAY(45412+1-DAY(18)) = DAY(45395) = 13 in Excel, as DAY(18) is 18.
    path = workbook({"A1": 45395, "B1": "=DAY(EOMONTH(A1,0)+1-DAY(EOMONTH(A1,0)-A1+1))", "B2": "=DAY(18)",
                     "B3": "=MONTH(40)", "B4": "=YEAR(1)", "B5": "=DAY(A1)", "B6": "=DAY(B7)",
                     "B8": ArrayFormula("B8", "=SUM(DAY({18,45395}))"), "B9": "=DAY(60)&\"/\"&MONTH(60)"})
    values = libreoffice.evaluate(path, [CellRef("Sheet1", row, 2) for row in range(1, 10) if row != 7]).cells
    assert [values[CellRef("Sheet1", row, 2)] for row in (1, 2, 3, 4, 5, 6, 8, 9)] == [
        13, 18, 2, 1900, 13, 0, 18 + 13, "29/2"]
    # 40 is 9 Feb 1900 in Excel; DAY of an empty cell is 0 in Excel; 60 is Excel's 29 Feb 1900


def test_an_array_formula_over_a_table_is_rewritten_for_mod_with_its_references_resolved(libreoffice, tmp_path):
    from openpyxl import Workbook
    from openpyxl.worksheet.formula import ArrayFormula
    from openpyxl.worksheet.table import Table

    book = Workbook()
    sheet = book.active
    sheet.append(["v"])
    for value in (1.000003, 2.000004):
        sheet.append([value])
    sheet.add_table(Table(displayName="T", ref="A1:A3"))
    sheet["C1"] = ArrayFormula("C1", "=SUM(INT(10^6*MOD(T[v],1)))")  # 3 + 4 in Excel (6 without its rounding)
    path = tmp_path / "table.xlsx"
    book.save(path)
    assert libreoffice.evaluate(path, [CellRef("Sheet", 1, 3)]).cells[CellRef("Sheet", 1, 3)] == 7


def test_libreoffice_abstains_on_textjoin_with_ignore_empty_written_as_nothing(libreoffice, workbook):
    # A1:A3 = a, (empty), b. LibreOffice reads the missing ignore_empty as FALSE ("a--b");
    # Excel skips the empty values, as TRUE would (its cache in IronCalc's TEXTJOIN.xlsx, G14).
    path = workbook({"A1": "a", "A3": "b", "B1": '=_xlfn.TEXTJOIN("-",,A1:A3)', "B2": '=_xlfn.TEXTJOIN("-",TRUE,A1:A3)'})
    values = libreoffice.evaluate(path, [CellRef("Sheet1", 1, 2), CellRef("Sheet1", 2, 2)]).cells
    assert values[CellRef("Sheet1", 1, 2)].rule == "textjoin-empty-flag"
    assert values[CellRef("Sheet1", 2, 2)] == "a-b"


def test_libreoffice_abstains_on_every_date_joined_from_text(libreoffice, workbook):
    # SpreadsheetBench 46646: EOMONTH(1&"Jan"&2016, 0) is 31 Jan 2016 to Excel (DAY gives 31),
    # #VALUE! to LibreOffice, which does not read "1Jan2016" as a date. "1-Jan-2016" it reads as
    # Excel does (serial 42400), but reading dates from text is a hazard LibreOffice is not
    # cleared of (the Excel 365 oracle: TIMEVALUE("1:30PM") is #VALUE!, 0.5625 in LibreOffice),
    # so it abstains on both; a date built by DATE is computed.
    path = workbook({"A1": "Jan", "A2": 2016, "B1": "=DAY(EOMONTH(1&A1&A2,0))", "B2": '=EOMONTH("1-"&A1&"-"&A2,0)',
                     "B3": "=EOMONTH(DATE(A2,1,1),0)"})
    values = libreoffice.evaluate(path, [CellRef("Sheet1", row, 2) for row in (1, 2, 3)]).cells
    assert values[CellRef("Sheet1", 1, 2)].rule == values[CellRef("Sheet1", 2, 2)].rule == "date-from-text"
    assert values[CellRef("Sheet1", 3, 2)] == 42400


def test_libreoffice_abstains_on_value_error_where_small_runs_out(libreoffice, workbook):
    # SMALL(array, k) with k beyond the count is #NUM! in Excel (SpreadsheetBench 15825 caches
    # #NUM! for INDEX(..., SMALL(IF(...), ROWS(...)))) and #VALUE! in LibreOffice. A1:A3 = 1, 2, 3.
    path = workbook({"A1": 1, "A2": 2, "A3": 3, "B1": "=SMALL(A1:A3,5)", "B2": "=LARGE(A1:A3,2)", "B3": "=SMALL(A1:A3,0.5)"})
    values = libreoffice.evaluate(path, [CellRef("Sheet1", row, 2) for row in (1, 2, 3)]).cells
    assert values[CellRef("Sheet1", 1, 2)].rule == "libreoffice-small-large-k"
    assert values[CellRef("Sheet1", 2, 2)] == 2  # the second largest
    assert values[CellRef("Sheet1", 3, 2)].rule == "libreoffice-small-large-k"  # k below 1: #NUM! in Excel too


def test_libreoffice_abstains_on_filterxml(libreoffice, workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # SpreadsheetBench 54144: Excel's FILTERXML gives every <m>, so SUMIFS sums D1 + D2 = 3;
    # LibreOffice's gives the first only (1). C1:D2 = a 1, b 2.
    path = workbook({"C1": "a", "C2": "b", "D1": 1, "D2": 2,
                     "F1": ArrayFormula("F1", '=SUM(SUMIFS(D1:D2,C1:C2,_xlfn.FILTERXML("<k><m>a</m><m>b</m></k>","//m")))'),
                     "F2": ArrayFormula("F2", '=SUM(SUMIFS(D1:D2,C1:C2,{"a","b"}))')})
    values = libreoffice.evaluate(path, [CellRef("Sheet1", 1, 6), CellRef("Sheet1", 2, 6)]).cells
    assert "FILTERXML" in values[CellRef("Sheet1", 1, 6)].detail
    assert values[CellRef("Sheet1", 2, 6)] == 3


def test_libreoffice_abstains_on_offset_over_an_array_of_offsets(libreoffice, workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # SpreadsheetBench 50250: SUMIF(A1:A3, "a", OFFSET(A1:A3,,{1,2,3})) sums columns B, C and D
    # of the "a" rows in Excel: (1+3) + (10+30) + (100+300) = 444. LibreOffice sums B only: 4.
    rows = [("a", 1, 10, 100), ("b", 2, 20, 200), ("a", 3, 30, 300)]
    cells = {f"{'ABCD'[c]}{r}": v for r, row in enumerate(rows, start=1) for c, v in enumerate(row)}
    path = workbook({**cells, "F1": ArrayFormula("F1", '=SUM(SUMIF(A1:A3,"a",OFFSET(A1:A3,,{1,2,3})))')})
    assert "OFFSET" in libreoffice.evaluate(path, [CellRef("Sheet1", 1, 6)]).cells[CellRef("Sheet1", 1, 6)].detail
    # OFFSET may read any cell, so the check covers the whole workbook: one without it computes
    path = workbook({**cells, "F2": "=SUM(OFFSET(A1:A3,,1))"}, name="plain.xlsx")
    assert libreoffice.evaluate(path, [CellRef("Sheet1", 2, 6)]).cells[CellRef("Sheet1", 2, 6)] == 6  # 1 + 2 + 3


def test_libreoffice_abstains_on_vlookup_over_an_array_of_columns(libreoffice, workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # SpreadsheetBench 10281: MEDIAN(0.44, VLOOKUP("C", A1:C2, {2,3}, 0)) where row C's columns 2
    # and 3 are empty: Excel skips the empty cells (its cache says the median is 0.44);
    # LibreOffice gives 0 for them, so the median is 0. A2 = C, B2:C2 empty.
    path = workbook({"A1": "A", "B1": 1, "C1": 2, "A2": "C",
                     "E1": ArrayFormula("E1", '=MEDIAN(0.44,VLOOKUP("C",A1:C2,{2,3},0))'),
                     "E2": '=VLOOKUP("A",A1:C2,3,0)'})
    values = libreoffice.evaluate(path, [CellRef("Sheet1", 1, 5), CellRef("Sheet1", 2, 5)]).cells
    assert "VLOOKUP" in values[CellRef("Sheet1", 1, 5)].detail
    assert values[CellRef("Sheet1", 2, 5)] == 2  # row A, column 3


@pytest.mark.slow  # starts its own LibreOffice
def test_libreoffice_leaves_nothing_outside_its_profile_and_removes_that(tmp_path, monkeypatch):
    """soffice's temporary files and cache go to the private profile; its pipe sockets, which
    it always makes in /tmp, are removed with the profile."""
    require_engines("libreoffice")
    import os
    import tempfile
    from regrade.engines.libreoffice.office_files import pipe_files
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temporary"))
    (tmp_path / "temporary").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "the user's cache"))
    engine = LibreOfficeEngine(EngineSettings(timeout_s=60))
    assert engine.evaluate(STALE, F[:1]).cells[F[0]] == 0.0  # ROUND(300/1000, 0)
    pipes = pipe_files(engine._profile)
    assert sum(os.path.exists(p) for p in pipes) == 2  # the names are the ones soffice chose
    engine.close()
    assert [p for p in pipes if os.path.exists(p)] == []
    assert sorted(tmp_path.rglob("*")) == [tmp_path / "temporary"]  # no profile, no lu*.tmp, no cache


def _processes_naming(profile: str) -> list[int]:
    import os

    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                if name.isdigit() and profile.encode() in handle.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


@pytest.mark.slow  # starts its own LibreOffice
@pytest.mark.parametrize("how", ["timeout", "killed"])
def test_a_libreoffice_worker_ended_at_its_limit_leaves_no_soffice_running(how, workbook, tmp_path):
    """A worker past its time limit (or killed outright, as a memory limit does) takes its
    helper and soffice with it, and its profile goes."""
    require_engines("libreoffice")
    import os
    import signal
    import time

    from regrade.engines.isolation import IsolatedEngine

    path = workbook({"A1": 3, "A2": "=A1*A1"})
    engine = IsolatedEngine(LibreOfficeEngine(EngineSettings(timeout_s=60)))
    assert engine.evaluate(path, [CellRef("Sheet1", 2, 1)]).cells[CellRef("Sheet1", 2, 1)] == 9.0
    profile = engine.engine._profile
    assert _processes_naming(profile)  # the helper and its soffice
    if how == "timeout":
        engine.timeout_s = 0.0001  # the next workbook is past its limit before LibreOffice answers
        assert engine.evaluate(path, [CellRef("Sheet1", 2, 1)]).failure.reason == "timeout"
    else:
        os.kill(engine._worker.pid, signal.SIGKILL)
        engine._worker.join(5)
        engine.close()
    deadline = time.monotonic() + 10
    while _processes_naming(profile) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_naming(profile) == []
    assert not os.path.exists(profile)


def _column_d(engine, path, rows: int) -> list:
    """The values ``engine`` computes for D1 to D``rows`` of Sheet1."""
    refs = [CellRef("Sheet1", row, 4) for row in range(1, rows + 1)]
    values = engine.evaluate(path, refs)
    return [values.cells[c] for c in refs]


@pytest.mark.parametrize("name", ["ironcalc", "libreoffice"])
def test_max_and_min_over_whole_columns_in_array_formulas_are_cut_and_keep_their_values(name, workbook, shared_engine):
    # F1:F6 = h, k, m, k, m, k and G1:G6 = 100, 5, 9, 7, 4, -2; every other cell of F and G is
    # blank; A1 = "k", A2 blank. By hand, over all 1,048,576 rows:
    #   IF(F="k", G, ""): 5, 7, -2 and "" elsewhere: MAX 7, MIN -2 (MAX and MIN skip text in an array);
    #   IF(F=A2, 1, 0): no row of data is blank, every row past 6 is (a blank equals a blank): MAX 1;
    #   IF(F=A2, G+1, ""): past row 6, a blank G plus 1 is 1: MIN 1.
    # The last two are values only the rows past the data give: a cut that kept none would give 0
    # and 0 (MIN of no number).
    from openpyxl.worksheet.formula import ArrayFormula

    cells = {"A1": "k", "F1": "h", "G1": 100, "F2": "k", "F3": "m", "F4": "k", "F5": "m", "F6": "k",
             "G2": 5, "G3": 9, "G4": 7, "G5": 4, "G6": -2}
    formulas = ('MAX(IF(F:F=A1,G:G,""))', 'MIN(IF(F:F=A1,G:G,""))', "MAX(IF(F:F=A2,1,0))", 'MIN(IF(F:F=A2,G:G+1,""))')
    for row, formula in enumerate(formulas, start=1):
        cells[f"D{row}"] = ArrayFormula(f"D{row}", f"={formula}")
    path = workbook(cells)
    assert _column_d(shared_engine(name), path, 4) == [7, -2, 1, 1]
    if name == "libreoffice":  # computed through the cut, one row past the data (row 6)
        assert ("Sheet1", 1, 4, '=MAX(IF(F$1:F$7=A1,G$1:G$7,""))', "D1") in libreoffice_rewrites(path)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ironcalc", "libreoffice"])
def test_sumproduct_over_whole_columns_is_cut_and_keeps_its_values(name, workbook, shared_engine):
    # A2:A5 = k, m, k, k and B2:B5 = 1, 2, 3, 1; every other cell of A and B is blank. By hand,
    # over all 1,048,576 rows: the products (A="k")*B are 1, 0, 3, 1 and 0 elsewhere, sum 5; A=""
    # holds for the 1,048,572 blank cells, and SUMPRODUCT counts TRUE as 0 unless -- makes it 1;
    # (A="")*1 is 1 on the blank rows and B+1 is 1 there (blank + 1): 1,048,572 * 1 * 1; A*B is
    # #VALUE! on text, which SUMPRODUCT(A:A,B:B) skips: only numbers multiply, none in A. Plain
    # formulas: SUMPRODUCT computes its arrays element by element in any formula.
    path = workbook({"A2": "k", "A3": "m", "A4": "k", "A5": "k", "B2": 1, "B3": 2, "B4": 3, "B5": 1,
                     "D1": '=SUMPRODUCT((A:A="k")*(B:B))',
                     "D2": '=SUMPRODUCT(--(A:A=""))',
                     "D3": '=SUMPRODUCT((A:A="")*1,B:B+1)',
                     "D4": "=SUMPRODUCT(A:A,B:B)"})
    assert _column_d(shared_engine(name), path, 4) == [5, 1_048_572, 1_048_572, 0]
    if name == "libreoffice":  # computed through the cut, at the last used row (5)
        cut = {(row, formula) for _, row, _, formula, area in libreoffice_rewrites(path) if area is None}
        assert (1, '=(SUMPRODUCT((A$1:A$5="k")*(B$1:B$5))+1048571*SUMPRODUCT(($XFD$1048576:$XFD$1048576="k")'
                   '*($XFD$1048576:$XFD$1048576)))') in cut
        assert len(cut) == 4


def test_rewrites_are_written_into_the_copy_libreoffice_imports(workbook, libreoffice):
    # LibreOffice computes array formulas while importing a file, and each formula set over UNO
    # costs two calls across its pipe: every rewrite that can be is written into the copy it
    # imports, a shared formula's cells each as a formula of its own where the whole group is rewritten
    import hashlib
    import openpyxl
    from openpyxl.worksheet.formula import ArrayFormula

    from regrade.engines.libreoffice.rewrites import imported_copy
    from regrade.workbook import cell_xml
    from tests.conftest import make_shared

    path = workbook({"F1": "k", "G1": 5, "A1": "k", "A5": 18,
                     "D1": ArrayFormula("D1", '=MAX(IF(F:F=A1,G:G,""))'),
                     "D2": '=SUMPRODUCT((F:F="k")*(G:G))', "D3": "=A1",
                     "E1": "=0", "E2": "=0", "E3": "=0"})
    make_shared(path, "E", range(1, 4), "DAY($A$5)+ROW()")  # =DAY($A$5)+1, +2, +3
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    rewrites = libreoffice_rewrites(path)
    assert {(row, column) for _, row, column, *_ in rewrites} == {(1, 4), (2, 4), (1, 5), (2, 5), (3, 5)}
    with imported_copy(path, rewrites) as (imported, left):
        assert imported != path and imported.exists() and left == []
        sheet = openpyxl.load_workbook(imported).active
        assert sheet["D1"].value.text == '=MAX(IF(F$1:F$6=A1,G$1:G$6,""))'  # one row past the last used (A5)
        assert sheet["D1"].value.ref == "D1"
        written = {(row, column): text for _, row, column, text, _ in rewrites}
        assert sheet["D2"].value == written[(2, 4)] != '=SUMPRODUCT((F:F="k")*(G:G))'  # cut at the last used row
        assert sheet["D3"].value == "=A1"
        assert [sheet[f"E{row}"].value for row in (1, 2, 3)] == [written[(row, 5)] for row in (1, 2, 3)]
        assert 't="shared"' not in "".join(cell_xml.read_sheets(imported, ["Sheet1"]).xml.values())
    assert not imported.exists()  # the copy is removed with its folder
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # the input is never changed
    with imported_copy(path, [r for r in rewrites if (r[1], r[2]) != (3, 5)]) as (_, left):
        assert [(row, column) for _, row, column, *_ in left] == [(1, 5), (2, 5)]  # a group partly rewritten: over UNO
    # by hand: MAX of G where F = "k" is 5, and so is the SUMPRODUCT; serial 18 is 18 January
    # 1900 in Excel (its serial 1 is 1 January 1900), so DAY 18 and E1:E3 = 19, 20, 21
    cells = [CellRef("Sheet1", 1, 4), CellRef("Sheet1", 2, 4), *(CellRef("Sheet1", row, 5) for row in (1, 2, 3))]
    values = libreoffice.evaluate(path, cells)
    assert [values.cells[c] for c in cells] == [5, 5, 19, 20, 21]
