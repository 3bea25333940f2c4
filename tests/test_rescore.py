"""The pipeline on real files: the bundled demo and the failure paths."""

import functools
import json

import pytest

from regrade.engines.cached import CachedEngine
from regrade.engines.ironcalc.engine import IronCalcEngine
from regrade.engines.isolation import IsolatedEngine
from regrade.grading.policies import get_policy
from regrade.demo import conditions
from regrade.grading.rescore import rescore_case
from regrade.values import CellRef
from regrade.runs.cases import Case, spreadsheetbench_cases
from regrade.engines.registry import open_engine
from tests.conftest import DEMO, require_engines

ALL_FULL = ("ironcalc", "libreoffice", "gnumeric")


@functools.cache
def run_demo():
    require_engines(*ALL_FULL)
    cases = spreadsheetbench_cases(DEMO / "dataset", conditions(DEMO))
    policy = get_policy("spreadsheetbench")
    shallow, fulls = open_engine("cached"), [open_engine(name) for name in ALL_FULL]
    return [rescore_case(c, policy, shallow, fulls) for c in cases]


@pytest.mark.slow
def test_every_demo_output_gets_the_verdict_worked_out_by_hand():
    # fixtures/make_demo.py explains each expected verdict beside the output it writes
    expected = json.loads((DEMO / "expected.json").read_text())
    results = run_demo()
    assert len(results) == 45
    got = {(r.case.condition, r.case.output_path.name): r.verdict for r in results}
    want = {(condition, name): v for condition, files in expected.items() for name, v in files.items()}
    assert got == want


@pytest.mark.slow
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
    (cell,) = aggregate.cells
    # the golden's AH6 (Excel's cache) is 6.5: =AGGREGATE(9,6,C6:AG6). LibreOffice computes it,
    # and regrade does from IronCalc's values (engines/ironcalc/bridge.py) and from gnumeric's
    # (engines/subtotals.py), since gnumeric gives #NAME?
    assert cell.full == 6.5 and cell.engines == {"ironcalc": 6.5, "libreoffice": 6.5, "gnumeric": 6.5}


def test_missing_and_unreadable_outputs_are_per_case_failures(tmp_path):
    golden = DEMO / "dataset" / "spreadsheet" / "59511" / "1_59511_answer.xlsx"
    corrupt = tmp_path / "corrupt.xlsx"
    corrupt.write_bytes(b"PK\x03\x04 truncated")
    policy = get_policy("spreadsheetbench")
    shallow, full = IsolatedEngine(CachedEngine()), IsolatedEngine(IronCalcEngine())
    for output, reason in ((tmp_path / "missing.xlsx", "missing-output"), (corrupt, "unreadable-output")):
        case = Case(condition="x", task_id="59511", case=1, output_path=output, answer_path=golden, answer_position="F2:F6")
        result = rescore_case(case, policy, shallow, [full])
        assert (result.verdict, result.shallow_pass, result.full_pass) == ("confirmed-fail", False, False)
        assert reason in result.reasons


def test_unreadable_position_is_a_per_case_error_naming_task_and_text():
    golden = DEMO / "dataset" / "spreadsheet" / "59511" / "1_59511_answer.xlsx"
    case = Case(condition="x", task_id="59511", case=1, output_path=golden, answer_path=golden, answer_position="F2:F6:G")
    result = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), [IronCalcEngine()])
    assert result.verdict == "unevaluable" and result.reasons == ["invalid-position"]
    assert "59511" in result.message and "F2:F6:G" in result.message


def test_official_policy_fails_whole_columns_whatever_the_values():
    golden = DEMO / "dataset" / "spreadsheet" / "59511" / "1_59511_answer.xlsx"
    case = Case(condition="x", task_id="59511", case=1, output_path=golden, answer_path=golden, answer_position="F:F")
    official = rescore_case(case, get_policy("spreadsheetbench-official"), CachedEngine(), [IronCalcEngine()])
    assert (official.verdict, official.reasons) == ("confirmed-fail", ["official-grader-error"])
    correct = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), [IronCalcEngine()])
    assert correct.verdict == "confirmed-pass"  # the answer against itself


def patch_sheet_xml(path, old: bytes, new: bytes):
    """Rewrite the first sheet's XML of an xlsx in place (to make cells openpyxl cannot write)."""
    import zipfile

    with zipfile.ZipFile(path) as original:
        items = [(info, original.read(info.filename)) for info in original.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as copy:
        for info, data in items:
            if info.filename == "xl/worksheets/sheet1.xml":
                assert old in data
                data = data.replace(old, new)
            copy.writestr(info, data)


def test_a_numeric_cell_stored_without_a_value_stays_empty(workbook):
    # SpreadsheetBench's 21-16 answer stores <c r="D3" s="1" t="n" />: empty for Excel and
    # openpyxl, 0 for IronCalc. Only formula cells take the engine's value.
    path = workbook({"A1": 5, "B1": "=A1*2"})
    patch_sheet_xml(path, b"</row>", b'<c r="C1" t="n" /></row>')
    golden = workbook({"A1": 5, "B1": 10}, name="golden.xlsx")
    case = Case(condition="x", task_id="t", case=1, output_path=path, answer_path=golden, answer_position="A1:C1")
    result = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), [IronCalcEngine()])
    assert IronCalcEngine().evaluate(path, [case_ref("C1")]).cells[case_ref("C1")] == 0.0  # the quirk itself
    assert [(str(c.ref), c.full) for c in result.cells if c.ref.column == 3] == []  # C1 is not a disagreement
    assert (result.verdict, result.reasons) == ("artifact", ["uncached-formula"])  # B1: no cache, computes 5 * 2


def case_ref(coordinate):
    from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

    column, row = coordinate_from_string(coordinate)
    return CellRef("Sheet1", row, column_index_from_string(column))


def test_an_uncached_golden_formula_cannot_judge_a_computed_value(workbook):
    # A2 and A3 are formulas; the golden holds Excel's cache for A3 (8) but none for A2
    golden = workbook({"A1": 2, "A2": "=A1*3", "A3": "=A1*4"}, name="golden.xlsx")
    patch_sheet_xml(golden, b"<f>A1*4</f><v />", b"<f>A1*4</f><v>8</v>")
    output = workbook({"A1": 2, "A2": "=A1*3", "A3": "=A1*4"}, name="output.xlsx")
    case = Case(condition="x", task_id="t", case=1, output_path=output, answer_path=golden, answer_position="A2:A3")
    result = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), [IronCalcEngine()])
    assert (result.full_pass, result.verdict) == (None, "unevaluable")
    assert "uncached-golden" in result.reasons
    golden_a2 = [c for c in result.cells if c.ref == case_ref("A2")]
    assert [(c.golden, c.shallow, c.full.reason) for c in golden_a2] == [(None, None, "uncached-golden")]


def test_a_golden_that_was_never_computed_or_depends_on_today_is_invalid(workbook):
    never = workbook({"A1": 2, "A2": "=A1*3"}, name="never.xlsx")  # openpyxl wrote it: no cache anywhere
    dated = workbook({"A1": 2, "A2": "=TODAY()-A1"}, name="dated.xlsx")
    patch_sheet_xml(dated, b"<f>TODAY()-A1</f><v />", b"<f>TODAY()-A1</f><v>45000</v>")
    output = workbook({"A1": 2, "A2": 6}, name="output.xlsx")
    for golden, says in ((never, "no cached values"), (dated, "depends on TODAY()")):
        case = Case(condition="x", task_id="t", case=1, output_path=output, answer_path=golden, answer_position="A2")
        result = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), [IronCalcEngine()])
        assert (result.verdict, result.full_pass, result.reasons) == ("invalid-golden", None, ["invalid-golden"])
        assert says in result.message


@pytest.mark.parametrize("written, volatile", [
    (b"<f>A1*3</f>", False),
    (b"<f>TODAY()-A1</f>", True),
    (b"<f>today()-A1</f>", True),  # as openpyxl reads it, in any case
    (b"<f>&#84;ODAY()-A1</f>", True),  # a character reference hides the name from a text search
    (b"<f>TO<!-- -->DAY()-A1</f>", True),  # so does a comment
    (b"<f>TOD<![CDATA[AY]]>()-A1</f>", True),  # and CDATA
])
def test_whether_a_golden_cell_is_volatile_does_not_depend_on_how_its_formula_is_spelled_in_xml(workbook, written,
                                                                                                  volatile):
    """A golden formula that does not mention a volatile function or another workbook is known
    repeatable without its formula graph; any spelling of one that a search of the XML as text
    could miss is read by openpyxl, as before."""
    from regrade.grading.grade import load_golden

    golden = workbook({"A1": 2, "A2": "=A1*3"}, name=f"golden-{hash(written)}.xlsx")
    patch_sheet_xml(golden, b"<f>A1*3</f><v />", written + b"<v>6</v>")
    loaded = load_golden(golden)
    assert loaded.unrepeatable([CellRef("Sheet1", 2, 1)]) == (([CellRef("Sheet1", 2, 1)], []) if volatile else ([], []))
    assert (loaded._graph is None) == (written == b"<f>A1*3</f>")  # openpyxl was not asked where the text is plain


class _Asked:
    """A real engine that keeps the cells each evaluation asked it for."""

    def __init__(self, engine):
        self.engine, self.name, self.full, self.asked = engine, engine.name, engine.full, []

    def evaluate(self, path, cells):
        self.asked.append(list(cells))
        return self.engine.evaluate(path, cells)


def test_the_engines_compute_only_the_graded_cells_that_hold_formulas(workbook):
    # A1 is a wrong constant (4, the golden 5), B1 a right formula without a cache (5*2 = 10)
    output = workbook({"A1": 4, "B1": "=5*2"})
    golden = workbook({"A1": 5, "B1": 10}, name="golden.xlsx")
    case = Case(condition="x", task_id="t", case=1, output_path=output, answer_path=golden, answer_position="A1:B1")
    engine = _Asked(IronCalcEngine())
    result = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), [engine])
    assert engine.asked == [[case_ref("B1")]]
    assert (result.verdict, result.full_pass) == ("confirmed-fail", False)
    assert [(str(c.ref), c.shallow, c.full, c.engines) for c in result.cells] == [
        ("Sheet1!A1", 4, 4, {}),  # the constant as stored, which no engine computed
        ("Sheet1!B1", None, 10.0, {"ironcalc": 10.0}),
    ]


def test_a_constant_text_with_an_escaped_character_passes_against_itself_when_no_engine_runs(workbook):
    # "_x000C_" is how OOXML writes the form feed CHAR(12) (ECMA-376 Part 1, 22.9.2.19
    # ST_Xstring); openpyxl reads it back escaped. Output and golden are the same file, every
    # graded cell a constant, so no engine runs: both grades must pass. (SpreadsheetBench
    # 307-46's answer holds two such cells; its golden failed against itself.)
    golden = workbook({"A1": "_x000C_", "A2": "plain"}, name="golden.xlsx")
    case = Case(condition="x", task_id="t", case=1, output_path=golden, answer_path=golden, answer_position="A1:A2")
    engine = _Asked(IronCalcEngine())
    result = rescore_case(case, get_policy("spreadsheetbench"), CachedEngine(), [engine])
    assert engine.asked == []
    assert (result.verdict, result.shallow_pass, result.full_pass, result.cells) == ("confirmed-pass", True, True, [])
