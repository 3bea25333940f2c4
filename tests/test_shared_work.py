"""Engine work shared between workbooks that differ only in formula caches (regrade.engines.shared_work),
on controls the audit generator writes from the demo's Excel-saved goldens: a golden and its
``uncached`` control are one computation, a ``stale-cache`` control and its ``changed-uncached``
twin another; a changed formula or constant is a third. A shared answer equals the engine's own
evaluation of the file and Excel's cached values, and rescoring gives the same records."""

from __future__ import annotations

from pathlib import Path

import pytest

from regrade.audit.generated import test_cases as dataset_test_cases
from regrade.audit.generated import write_candidates
from regrade.engines.cached import read_cells
from regrade.engines.registry import open_engine
from regrade.engines.shared_work import SharingEngine, computation_key
from regrade.grading.grade import load_golden
from regrade.grading.policies import get_policy
from regrade.values import WorkbookFailure, WorkbookValues

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "fixtures" / "demo-run" / "dataset"


@pytest.fixture(scope="module")
def controls(tmp_path_factory) -> dict[str, Path]:
    """The controls of demo task 37086's first test case (D2:D5, formulas with Excel's caches), and its golden."""
    case = next(c for c in dataset_test_cases(DATASET)[0] if (c.task_id, c.case) == ("37086", 1))
    made, _ = write_candidates(case, "spreadsheetbench", tmp_path_factory.mktemp("controls"))
    return {"answer": case.answer, **{c.category: c.output for c in made}}


def formula_targets(answer: Path):
    golden = load_golden(answer)
    return [t for t in golden.targets(get_policy("spreadsheetbench"), "D2:D5", None) if golden.is_formula(t)]


def test_workbooks_differing_only_in_formula_caches_share_a_key_and_others_do_not(controls):
    key = {name: computation_key(path) for name, path in controls.items()}
    assert key["golden"] == key["uncached"] == key["answer"]
    assert key["stale-cache"] == key["changed-uncached"]
    assert key["stale-cache"] != key["golden"]  # a changed formula
    assert key["perturbed-constant"] != key["golden"]  # a changed constant
    assert key["absolute-references"] != key["golden"]  # another spelling: computed again, never assumed
    assert controls["golden"].read_bytes() != controls["uncached"].read_bytes()


def test_a_shared_answer_is_the_engines_own_and_excels(controls, tmp_path):
    cells = formula_targets(controls["answer"])
    excel = read_cells(controls["answer"], cells)[1]  # Excel's cached values: the independent truth
    engine = open_engine("ironcalc")
    try:
        sharing = SharingEngine(engine)
        first = sharing.evaluate(controls["golden"], cells)
        shared = sharing.evaluate(controls["uncached"], cells)
        assert sharing.shared == 1
        own = engine.evaluate(controls["uncached"], cells)  # the engine asked itself, nothing shared
        assert shared.cells == own.cells == first.cells
        assert {ref: value for ref, value in shared.cells.items()} == {ref: excel[ref][0] for ref in cells}
        shared.cells.clear()  # a caller changing its copy changes nothing remembered
        assert sharing.evaluate(controls["uncached"], cells).cells == own.cells
        sharing.evaluate(controls["changed-uncached"], cells)
        assert sharing.shared == 2  # the changed formula is computed, not shared
        assert sharing.evaluate(controls["stale-cache"], cells).cells != own.cells
        assert sharing.shared == 3
    finally:
        engine.close()


def test_a_failed_evaluation_is_asked_again():
    calls = []

    class Failing:
        name = "failing"

        def evaluate(self, path, cells):
            calls.append(path)
            return WorkbookValues(failure=WorkbookFailure("timeout", "past its limit"))

    sharing = SharingEngine(Failing())
    for _ in range(2):
        assert sharing.evaluate(DATASET / "spreadsheet" / "37086" / "1_37086_answer.xlsx", []).failure is not None
    assert len(calls) == 2 and sharing.shared == 0
    assert sharing.name == "failing"


def test_a_file_that_is_no_zip_has_no_key(tmp_path):
    broken = tmp_path / "broken.xlsx"
    broken.write_bytes(b"not a zip")
    assert computation_key(broken) is None


def test_a_file_written_again_at_the_same_path_gets_its_new_key(controls, tmp_path):
    from regrade.engines.shared_work import file_computation_key

    path = tmp_path / "output.xlsx"
    path.write_bytes(controls["golden"].read_bytes())
    assert file_computation_key(path) == computation_key(controls["golden"])
    path.write_bytes(controls["stale-cache"].read_bytes())  # the same path, another formula
    assert file_computation_key(path) == computation_key(controls["stale-cache"]) != computation_key(controls["golden"])
