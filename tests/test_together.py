"""A workbook handed to several engines' workers at once (regrade.engines.together)."""

from __future__ import annotations

import time
from pathlib import Path

import openpyxl

from regrade.engines.base import EngineSettings
from regrade.engines.ironcalc.engine import IronCalcEngine
from regrade.engines.isolation import IsolatedEngine
from regrade.engines.shared_work import SharingEngine
from regrade.engines.together import evaluate_together
from regrade.values import CellRef

MEETING_S = 30.0  # how long an engine waits for the other at the meeting point


class MeetsTheOther(IronCalcEngine):
    """IronCalc, after waiting in its worker until the other engine's worker has the workbook
    too: evaluated one after another, the first would wait in vain and fail."""

    def __init__(self, name: str, other: str, folder: Path, wait_s: float = MEETING_S):
        super().__init__(EngineSettings(timeout_s=MEETING_S * 2))
        self.name, self.other, self.folder, self.wait_s = name, other, folder, wait_s

    def evaluate(self, path, cells):
        (self.folder / self.name).touch()
        deadline = time.monotonic() + self.wait_s
        while not (self.folder / self.other).exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.other} never had the workbook while {self.name} did")
            time.sleep(0.01)
        return super().evaluate(path, cells)


def test_engines_in_their_workers_compute_at_once_and_give_what_each_gives_alone(tmp_path):
    book = openpyxl.Workbook()
    book.active["A1"], book.active["A2"] = 7, "=A1*6"
    book.save(tmp_path / "book.xlsx")
    a2 = CellRef("Sheet", 2, 1)
    engines = [IsolatedEngine(MeetsTheOther("first", "second", tmp_path)),
               SharingEngine(IsolatedEngine(MeetsTheOther("second", "first", tmp_path)))]
    try:
        values = evaluate_together(engines, tmp_path / "book.xlsx", [a2])
        assert list(values) == ["first", "second"]
        assert all(v.failure is None and v.cells == {a2: 42.0} for v in values.values()), values  # 7 × 6 by hand
        again = evaluate_together(engines, tmp_path / "book.xlsx", [a2])  # the second remembers its answer
        assert engines[1].shared == 1
        assert again["second"].cells == {a2: 42.0} and again["first"].cells == {a2: 42.0}
    finally:
        for engine in engines:
            engine.close()


def test_an_engine_that_cannot_meet_the_other_alone_fails_its_workbook_only(tmp_path):
    """The meeting point is a real one: evaluated alone, the engine's worker reports the failure."""
    book = openpyxl.Workbook()
    book.active["A1"] = "=1+1"
    book.save(tmp_path / "book.xlsx")
    engine = IsolatedEngine(MeetsTheOther("first", "nobody", tmp_path, wait_s=0.5))
    try:
        values = evaluate_together([engine], tmp_path / "book.xlsx", [CellRef("Sheet", 1, 1)])
    finally:
        engine.close()
    assert values["first"].failure is not None and "nobody never had the workbook" in values["first"].failure.detail
