"""The quorum: how many engines must compute a graded cell for the consensus to decide it."""

from __future__ import annotations

import pytest

from regrade.engines.registry import open_engine
from regrade.grading.consensus import agree, default_quorum
from regrade.grading.policies import get_policy
from regrade.grading.rescore import rescore_case
from regrade.grading.verdicts import ARTIFACT, BELOW_QUORUM, ENGINES_DISAGREE, UNEVALUABLE
from regrade.runs.cases import Case
from regrade.values import CannotEvaluate
from tests.conftest import require_engines

POLICY = get_policy("spreadsheetbench")
ABSTAINED = CannotEvaluate("unsupported-function", "lacks it", rule="ironcalc-lacks-function")


def test_one_voter_decides_at_quorum_one_and_abstains_at_two():
    values = {"ironcalc": ABSTAINED, "libreoffice": 0.5, "formulon": ABSTAINED}
    assert agree(POLICY, values, quorum=1) == 0.5
    below = agree(POLICY, values, quorum=2)
    assert isinstance(below, CannotEvaluate) and below.reason == BELOW_QUORUM
    assert "only libreoffice computed it" in below.detail and "ironcalc-lacks-function" in below.detail


def test_voters_that_disagree_abstain_whatever_the_quorum():
    # two engines sharing a departure do not outvote the third: the split is surfaced
    values = {"ironcalc": 1.0, "libreoffice": 1.0, "formulon": 2.0}
    for quorum in (1, 2, 3):
        assert agree(POLICY, values, quorum).reason == ENGINES_DISAGREE


def test_the_default_quorum_is_two_where_three_engines_run():
    assert [default_quorum(n) for n in (1, 2, 3, 4)] == [1, 1, 2, 2]


@pytest.fixture
def euroconvert_case(tmp_path, workbook):
    # EUROCONVERT(1,"DEM","EUR") = 1 / 1.95583 (the fixed rate of 31 Dec 1998) = 0.511291881...
    golden = workbook({"B1": 0.511291881}, name="golden.xlsx")
    output = workbook({"B1": '=EUROCONVERT(1,"DEM","EUR")'}, name="output.xlsx")  # no cached value
    return Case(condition="none", task_id="euro", case=1, output_path=output, answer_path=golden, answer_position="B1")


@pytest.mark.slow  # several engine starts: seconds on two cores
@pytest.mark.parametrize("quorum, verdict, decided_by_one", [(1, ARTIFACT, 1), (2, UNEVALUABLE, 0)])
def test_a_cell_only_libreoffice_computes_is_decided_by_one_engine_only_at_quorum_one(euroconvert_case, quorum, verdict,
                                                                                        decided_by_one):
    require_engines("ironcalc", "libreoffice", "formulon")
    engines = [open_engine(name) for name in ("ironcalc", "libreoffice", "formulon")]  # IronCalc and Formulon lack it
    try:
        result = rescore_case(euroconvert_case, POLICY, open_engine("cached"), engines, quorum)
    finally:
        for engine in engines:
            engine.close()
    assert (result.verdict, result.decided_by_one) == (verdict, decided_by_one)
    assert [c.decided_by for c in result.cells] == [decided_by_one]  # B1: LibreOffice alone, or nobody
    if quorum == 2:
        assert result.reasons == [BELOW_QUORUM]
