"""A workbook's preparation (linked copy, shared abstentions, cone copy) made by the first
full engine of a case and taken by the others (regrade.engines.preparation): the values are
Excel's, and the CPU it cost still counts against the limit of each engine that takes it."""

from __future__ import annotations

import json

import pytest

import regrade.engines.pipeline as pipeline
from regrade.engines.base import EngineSettings
from regrade.engines.isolation import IsolatedEngine
from regrade.engines.preparation import Preparation, leave, preparation_key, share_preparations, stop_sharing, taken
from regrade.engines.registry import get_engine
from regrade.grading.grade import load_golden
from regrade.grading.policies import get_policy
from tests.conftest import DEMO, SHARED, SHARED_ABSENT, require_engines


@pytest.fixture
def sharing():
    share_preparations()
    yield
    stop_sharing()


@pytest.mark.slow
def test_the_engines_of_a_case_prepare_a_heavy_linked_workbook_once_and_compute_excels_values(sharing, monkeypatch):
    """Task 52450's answer links another workbook and asks far more work than its one graded
    cell needs: the first engine makes the linked copy, the shared abstentions and the cone copy;
    the other two take them, and all three give Excel's cached value."""
    if not SHARED.exists():
        pytest.skip(SHARED_ABSENT)
    require_engines("ironcalc", "formulon", "libreoffice")
    root = SHARED
    task = next(t for t in json.loads((root / "dataset.json").read_text()) if str(t["id"]) == "52450")
    answer = root / "spreadsheet" / "52450" / "1_52450_answer.xlsx"
    golden = load_golden(answer)
    cells = golden.formulas_among(golden.targets(get_policy("spreadsheetbench"), task["answer_position"], None))
    made = {"linked": 0, "abstentions": 0}
    linked, abstentions = pipeline.linked_workbook, pipeline.shared_abstentions
    monkeypatch.setattr(pipeline, "linked_workbook", lambda path: made.__setitem__("linked", made["linked"] + 1)
                        or linked(path))
    monkeypatch.setattr(pipeline, "shared_abstentions", lambda *args: made.__setitem__(
        "abstentions", made["abstentions"] + 1) or abstentions(*args))
    values = {}
    for name in ("ironcalc", "formulon", "libreoffice"):
        engine = get_engine(name, EngineSettings(timeout_s=300))
        engine.start()
        try:
            values[name] = engine.evaluate(answer, cells).cells
        finally:
            engine.close()
        prepared = taken(preparation_key(answer, cells))
        assert prepared is not None and prepared[0].computed == answer.name and prepared[0].cpu_s > 0
    assert made == {"linked": 1, "abstentions": 1}
    assert all(values[name] == {cell: golden.value(cell) for cell in cells} for name in values), values


def test_a_preparation_counts_against_the_limit_of_the_engine_that_takes_it(sharing, tmp_path):
    """A preparation recorded as costing more than the engine's limit makes the engine that takes
    it overrun, as it would have making it; without it the same workbook is computed."""
    require_engines("ironcalc")
    answer = DEMO / "dataset" / "spreadsheet" / "37086" / "1_37086_answer.xlsx"
    golden = load_golden(answer)
    cells = golden.formulas_among(golden.targets(get_policy("spreadsheetbench"), "D2:D5", None))
    engine = IsolatedEngine(get_engine("ironcalc", EngineSettings(timeout_s=30)))
    try:
        leave(preparation_key(answer, cells), Preparation(cpu_s=31.0))
        failure = engine.evaluate(answer, cells).failure
        assert failure is not None and failure.reason == "timeout" and "more than 30 s of CPU" in failure.detail
        stop_sharing()
        assert engine.evaluate(answer, cells).cells == {cell: golden.value(cell) for cell in cells}
    finally:
        engine.close()
