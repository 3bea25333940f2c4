"""Controls generated from a benchmark's own tasks: each kind as built, kept only when certain, sealed, re-runnable."""

import json
import shutil
from pathlib import Path

import openpyxl
import pytest

from regrade.results.records import CaseRecord
from click.testing import CliRunner

from regrade.audit.controls import PackError, load_pack
from regrade.audit.generated import CATEGORIES, Candidate, _absolute, _left_out, generate_pack
from regrade.audit.grader import audit_grader, rate_interval
from regrade.cli import main
from regrade.engines.registry import default_full_engines
from regrade.grading.graders import make_grader
from regrade.run import RescoreSettings
from tests.conftest import DEMO, SHARED, SHARED_ABSENT, require_engines

DATASET = DEMO / "dataset"
# fixtures/demo-run: five tasks, three test cases each, every answer range a column of formulas
# Excel saved with their values; 34469 grades one cell (so no row to shift) and its inputs, like
# 37086's, hold formulas in the answer range.


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    require_engines(*default_full_engines())
    folder = tmp_path_factory.mktemp("generated") / "pack"
    engines = tuple(default_full_engines())
    settings = RescoreSettings(policy="spreadsheetbench", shallow="cached", engines=engines, timeout_s=60.0, quorum=2)
    return generate_pack(DATASET, folder, settings, workers=2)


def sheet_of(path, formulas):
    book = openpyxl.load_workbook(path, data_only=not formulas)
    return book[book.sheetnames[0]]


def graded(control):
    """The control's graded cells, as openpyxl reads them: (formulas, cached values)."""
    from regrade.grading.grade import load_golden
    from regrade.grading.policies import get_policy

    targets = load_golden(control.answer).targets(get_policy("spreadsheetbench"), control.answer_position,
                                                  control.answer_sheet)
    with_formulas, with_values = sheet_of(control.output, True), sheet_of(control.output, False)
    return ({t.coordinate: with_formulas[t.coordinate].value for t in targets},
            {t.coordinate: with_values[t.coordinate].value for t in targets})


def by(pack, category, task="32293", case=1):
    return next(c for c in load_pack(pack.folder).controls if c.id == f"{task}-{case}.{category}")


@pytest.mark.slow
def test_each_kind_is_what_it_says(pack):
    golden_formulas, golden_values = graded(by(pack, "golden"))
    assert by(pack, "golden").output.read_bytes() == by(pack, "golden").answer.read_bytes()
    assert all(str(f).startswith("=") for f in golden_formulas.values()) and None not in golden_values.values()
    formulas, values = graded(by(pack, "uncached"))
    assert formulas == golden_formulas and set(values.values()) == {None}
    formulas, values = graded(by(pack, "constants"))
    assert formulas == golden_values == values  # no formula left: Excel's values as constants
    formulas, values = graded(by(pack, "absolute-references"))
    assert values == golden_values
    # each formula respelled, but for a shared formula's (whose followers copy the first cell's text)
    assert all(formulas[k] in (g, "=" + _absolute(g[1:])) for k, g in golden_formulas.items())
    assert formulas != golden_formulas
    stale, stale_values = graded(by(pack, "stale-cache"))
    changed = [k for k in stale if stale[k] != golden_formulas[k]]
    assert len(changed) == 1 and stale_values == golden_values  # one formula changed, every cache Excel's
    uncached, uncached_values = graded(by(pack, "changed-uncached"))
    assert uncached[changed[0]] == stale[changed[0]] and uncached_values[changed[0]] is None
    _, perturbed = graded(by(pack, "perturbed-constant"))
    assert [k for k in perturbed if perturbed[k] != golden_values[k]] == [next(iter(golden_values))]
    _, shifted = graded(by(pack, "one-row-off"))
    cells = list(golden_values)  # one column, top to bottom
    assert shifted[cells[0]] is None and [shifted[c] for c in cells[1:]] == [golden_values[c] for c in cells[:-1]]
    _, empty = graded(by(pack, "empty-range"))
    assert set(empty.values()) == {None}


@pytest.mark.slow  # the pack: the demo's tasks rescored by every engine
def test_what_cannot_be_certain_is_left_out_and_said(pack):
    kept = {c.id for c in pack.kept}
    assert len(kept) == 5 * 3 * len(CATEGORIES) - 9
    left = {(n.task, n.case, n.category): n.reason for n in pack.not_checked}
    assert left == {**{("34469", case, "one-row-off"): "a one-row answer range" for case in (1, 2, 3)},
                    **{(task, case, "do-nothing"): "the input's answer range holds formulas: only an engine could say "
                       "whether it differs" for task in ("34469", "37086") for case in (1, 2, 3)}}


def test_a_control_regrade_could_not_grade_is_left_out_with_its_reason(tmp_path):
    # a golden regrade calls invalid (as SpreadsheetBench task 52450's) grades none of its controls:
    # the reason says so, not that the values differ
    control = Candidate("t-1.empty-range", "t", 1, "empty-range", tmp_path / "o.xlsx", tmp_path / "a.xlsx",
                        "A1", None, has_formulas=False)
    record = CaseRecord(stack="s", benchmark="b", condition="empty-range", task_id="t", case=1, output_path="o.xlsx",
                        answer_path="a.xlsx", shallow_pass=None, full_pass=None, verdict="invalid-golden",
                        reasons=["invalid-golden"])
    assert _left_out(control, record) == "regrade did not decide it (invalid-golden: invalid-golden)"
    # a TODAY() golden no day reproduces: its constants pass the value-only grade, but regrade decides nothing
    dated = record.model_copy(update={"shallow_pass": True, "reasons": ["dated-golden"]})
    assert _left_out(control, dated) == "regrade did not decide it (invalid-golden: dated-golden)"
    failed = record.model_copy(update={"shallow_pass": False, "full_pass": False, "verdict": "confirmed-fail"})
    assert _left_out(control, failed) is None


@pytest.mark.slow
def test_the_official_grader_and_regrade_on_the_generated_pack(pack):
    controls = load_pack(pack.folder, pack.digest)
    official = {c.category: c for c in audit_grader(make_grader("spreadsheetbench-official"), controls, 2).categories}
    # the official grader reads cached values: every uncached correct formula fails, every stale cache passes
    assert (official["uncached"].false_fail, official["uncached"].probes) == (15, 15)
    assert (official["stale-cache"].false_pass, official["stale-cache"].probes) == (15, 15)
    assert sum(c.wrong for c in official.values()) == 30
    assert official["uncached"].tasks == ["32293", "34469", "37086", "57029", "59511"]
    regrade = audit_grader(make_grader("regrade"), controls, 2)
    assert sum(c.wrong for c in regrade.categories) == 0  # it must pass no negative control, fail no positive
    report = regrade.as_json()
    row = next(c for c in report["categories"] if c["category"] == "stale-cache")
    assert {"category", "kind", "controls", "false_pass", "false_fail", "false_pass_rate", "false_fail_rate",
            "false_pass_interval"} <= set(row)
    assert row["false_pass_rate"] == 0 and row["false_pass_interval"][0] == 0
    assert len(report["not_checked"]) == 9 and {"task", "case", "reason", "category"} <= set(report["not_checked"][0])


@pytest.mark.slow  # the pack: the demo's tasks rescored by every engine
def test_the_pack_is_sealed_and_runs_again(pack, tmp_path):
    manifest = json.loads((pack.folder / "manifest.json").read_text())
    assert manifest["digest"] == pack.digest and "pack.json" in manifest["files"]
    record = json.loads((pack.folder / "pack.json").read_text())
    assert record["source"]["test_cases"] == 15 and len(record["source"]["digest"]) == 64
    result = CliRunner().invoke(main, ["audit", "grader", "spreadsheetbench-official", "--pack", str(pack.folder),
                                       "--expect-digest", pack.digest, "--format", "json", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert sum(c["false_pass"] + c["false_fail"] for c in json.loads(result.stdout)["categories"]) == 30
    copy = tmp_path / "copy"
    shutil.copytree(pack.folder, copy)
    (copy / "32293-1.constants.xlsx").write_bytes(b"changed")
    with pytest.raises(PackError, match="does not match its manifest"):
        load_pack(copy)
    with pytest.raises(PackError, match="not the expected"):
        load_pack(pack.folder, "0" * 64)


def test_a_generated_pack_needs_a_folder_of_its_own(tmp_path):
    (tmp_path / "something").write_text("x")
    settings = RescoreSettings(policy="spreadsheetbench", shallow="cached", engines=("ironcalc",), timeout_s=60.0)
    with pytest.raises(PackError, match="not empty"):
        generate_pack(DATASET, tmp_path, settings)


@pytest.mark.parametrize("formula, absolute", [
    ("A1+B1", "$A$1+$B$1"),
    ("SUM(Sheet1!A1:B2)", "SUM(Sheet1!$A$1:$B$2)"),
    ("'My Sheet'!C3*2", "'My Sheet'!$C$3*2"),
    ("SUM(A:A)+INDEX(1:3,2,2)", "SUM($A:$A)+INDEX($1:$3,2,2)"),
    ('IF(A1="A1",Total,Table1[Col])', 'IF($A$1="A1",Total,Table1[Col])'),  # text, names and tables untouched
    ("ROWS($A$2:A3)", "ROWS($A$2:$A$3)"),
])
def test_references_made_absolute(formula, absolute):
    assert _absolute(formula) == absolute


def test_rate_intervals_match_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    for wrong, judged in ((0, 15), (15, 15), (3, 40), (1, 2)):
        lower, upper = proportion_confint(wrong, judged, alpha=0.05, method="wilson")
        assert rate_interval(wrong, judged) == pytest.approx((max(0.0, lower), min(1.0, upper)), abs=1e-12)
    assert rate_interval(0, 0) == (None, None)
    # the ends are exact: none wrong of 280 gives a lower bound of 0, not the 8.6e-19 the formula rounds to
    assert rate_interval(0, 280)[0] == 0.0 and rate_interval(272, 272)[1] == 1.0


def test_a_text_result_becomes_an_inline_string_with_its_characters():
    from regrade.values import CellRef
    from regrade.workbook import cell_xml

    b1 = CellRef("Sheet1", 1, 2)
    xml = '<row r="1"><c r="A1" s="1"/><c r="B1" s="2" cm="1" t="str"><f>A1&amp;"x"</f><v>a&#10;b &lt;c&gt;</v></c></row>'
    cell = cell_xml.find_cell(xml, b1)
    assert cell_xml.apply(xml, {"B1": cell_xml.as_constant(cell)}) == (
        '<row r="1"><c r="A1" s="1"/><c r="B1" s="2" t="inlineStr"><is><t xml:space="preserve">a\nb '
        '&lt;c&gt;</t></is></c></row>')
    assert cell_xml.formula_text(cell) == 'A1&"x"'
    a1 = cell_xml.find_cell(xml, CellRef("Sheet1", 1, 1))
    assert cell_xml.apply(xml, {"A1": cell_xml.emptied(a1)}) == xml  # a self-closing empty cell stays as it is


def _control_cells(control, refs):
    """(formula or None, cached value) of each cell, read from the control's sheet XML."""
    from regrade.workbook import cell_xml

    sheets = cell_xml.read_sheets(control.output, {r.sheet for r in refs})
    return {r.coordinate: (cell_xml.formula_text(c), cell_xml.cached_text(c)) for r in refs
            if (c := sheets.cell(r)) is not None}


@pytest.mark.skipif(not (SHARED / "dataset.json").is_file(), reason=SHARED_ABSENT)
def test_a_cell_an_array_formula_fills_is_not_perturbed_as_a_constant(tmp_path):
    # SpreadsheetBench 52292: K27 holds {=C5:H10*TRANSPOSE(C16:C21)} spilling over K27:P32, whose
    # other cells hold only the values it gave (Excel cached 20194 in K27, 15164 in L27). A
    # changed L27 is no wrong answer: any recalculation gives 15164 again. So the perturbed
    # control changes K27 itself, as a constant (20194 + 1), and the array's formula is gone.
    from regrade.audit.generated import test_cases, write_candidates
    from regrade.values import CellRef

    case = next(c for c in test_cases(SHARED)[0] if (c.task_id, c.case) == ("52292", 1))
    made, _ = write_candidates(case, "spreadsheetbench", tmp_path)
    perturbed = next(c for c in made if c.category == "perturbed-constant")
    k27, l27 = CellRef("Sheet1", 27, 11), CellRef("Sheet1", 27, 12)
    assert _control_cells(perturbed, [k27, l27]) == {"K27": (None, "20195.0"), "L27": (None, "15164")}


def test_cells_an_array_formula_outside_the_answer_range_fills_are_not_made_constants(workbook, tmp_path):
    # A1 holds {=B1:B3*2} over A1:A3; the answer range A2:A3 holds only the values it gave.
    # Emptying, shifting or rewriting them would not change what a recalculation shows there.
    from tests.test_rescore import patch_sheet_xml

    from regrade.audit.generated import TestCase, write_candidates

    golden = workbook({"B1": 1, "B2": 2, "B3": 3}, name="golden.xlsx")
    patch_sheet_xml(golden, b'<c r="B1" t="n"><v>1</v></c>',
                    b'<c r="A1"><f t="array" ref="A1:A3">B1:B3*2</f><v>2</v></c><c r="B1" t="n"><v>1</v></c>')
    patch_sheet_xml(golden, b'<c r="B2" t="n"><v>2</v></c>', b'<c r="A2"><v>4</v></c><c r="B2" t="n"><v>2</v></c>')
    patch_sheet_xml(golden, b'<c r="B3" t="n"><v>3</v></c>', b'<c r="A3"><v>6</v></c><c r="B3" t="n"><v>3</v></c>')
    made, skipped = write_candidates(TestCase("t", 1, golden, None, "A2:A3", None), "spreadsheetbench", tmp_path)
    assert {c.category for c in made} == {"golden"}
    reasons = {n.category: n.reason for n in skipped}
    for category in ("constants", "one-row-off", "empty-range"):
        assert reasons[category] == "an array formula at A1 outside the answer range fills cells in it"
    assert reasons["perturbed-constant"] == "no answer cell whose value can be changed on its own"


SEEN: list[dict] = []


def tolerant_grader(output, answer, position, input=None, answer_sheet=None, instruction_type=None):
    """A grader shaped as SpreadsheetBench 2's is (written here, not taken from it): it needs the
    task's input, and accepts a number within 1% of the answer's."""
    SEEN.append({"input": input, "answer_sheet": answer_sheet, "instruction_type": instruction_type})
    assert input is not None and Path(input).is_file()
    from openpyxl.utils.cell import range_boundaries

    got, want = (openpyxl.load_workbook(p, data_only=True) for p in (output, answer))
    sheet = answer_sheet or want.sheetnames[0]
    low_col, low_row, high_col, high_row = range_boundaries(position.split("!")[-1].replace("'", ""))
    for row in range(low_row, high_row + 1):
        for col in range(low_col, high_col + 1):
            a, b = got[sheet].cell(row, col).value, want[sheet].cell(row, col).value
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
                if abs(a - b) > 0.01 * abs(b):
                    return False
            elif a != b:
                return False
    return True


@pytest.mark.slow  # the pack: the demo's tasks rescored by every engine
def test_a_grader_that_needs_the_input_gets_it_and_a_perturbation_says_its_size(pack):
    """The pack carries each task's input and instruction type; a callable naming them gets them by
    keyword; a perturbed control records its change, so a tolerance is told from a defect."""
    controls = load_pack(pack.folder, pack.digest)
    perturbed = [c for c in controls.controls if c.category == "perturbed-constant"]
    assert perturbed and all(c.input is not None and c.input.is_file() for c in controls.controls)
    for control in perturbed:
        change = control.perturbation
        assert change is not None and {"cell", "from", "to"} <= set(change)
        if isinstance(change["from"], float):  # a number + 1, relative to it
            assert change["to"] == change["from"] + 1 and change["relative"] == pytest.approx(1 / abs(change["from"]))
    SEEN.clear()
    audit = audit_grader(make_grader(None, callable_target="tests.test_generated_controls:tolerant_grader"), controls)
    assert len(SEEN) == len(controls.controls) and all(s["input"].endswith(".input.xlsx") for s in SEEN)
    assert {s["instruction_type"] for s in SEEN} <= {"Cell-Level Manipulation", "Sheet-Level Manipulation"}
    [row] = [c for c in audit.categories if c.category == "perturbed-constant"]
    passed = {c.id for c in perturbed if (c.perturbation.get("relative") or 1) <= 0.01}
    assert set(row.failing) == passed and set(row.perturbations) == passed  # false passes: exactly the ones within 1%
    assert audit.as_json()["categories"][[c.category for c in audit.categories].index("perturbed-constant")]["perturbations"] \
        == {i: next(c.perturbation for c in perturbed if c.id == i) for i in passed}


def test_a_command_grader_gets_the_input_and_says_when_a_control_has_none(tmp_path):
    from regrade.grading.graders import GraderFailure, TaskContext

    grader = make_grader(None, command="test -f {input} -a -f {output}")
    some = DATASET / "spreadsheet" / "32293" / "1_32293_input.xlsx"
    assert grader.passes(some, some, "A1", task=TaskContext(input=some))
    assert not grader.passes(some, some, "A1", task=TaskContext(input=tmp_path / "absent.xlsx"))
    with pytest.raises(GraderFailure, match=r"\{input\}"):
        grader.passes(some, some, "A1")


def test_controls_made_in_workers_are_the_ones_made_in_one_process(tmp_path):
    from regrade.audit.generated import test_cases, write_all_candidates

    cases, _ = test_cases(DATASET)
    told = []
    made = {}
    for workers in (1, 2):
        folder = tmp_path / f"w{workers}"
        folder.mkdir()
        results = write_all_candidates(cases, "spreadsheetbench", folder, workers, on_case=told.append)
        files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
        listed = [([(c.id, c.category, c.has_formulas, c.output.name, c.perturbation) for c in kept], skipped)
                  for kept, skipped in results]
        made[workers] = files, listed
    assert len(told) == 2 * len(cases) == 30  # every case said done, in each way
    assert len(made[1][0]) > 100 and made[1] == made[2]  # the same files, byte for byte, and the same lists in case order
