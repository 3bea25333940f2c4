"""Three scripted agents whose truth is known, over a refusal-slice pack built from the demo's
real SpreadsheetBench tasks (2 ordinary tasks, 2 negative controls), for the tests that score
them through every run format."""

from __future__ import annotations

import json
from pathlib import Path

from regrade.refusal.build import build_slice
from regrade.run import rescore_settings
from tests.conftest import DEMO, require_engines


def demo_pack(tmp_path_factory):
    """The sealed demo pack, for a module-scoped fixture of each test module that scores it."""
    require_engines("ironcalc")
    folder = tmp_path_factory.mktemp("slice")
    return build_slice(DEMO / "dataset", folder / "pack", folder / "pack.key", 2, 2, rescore_settings(["ironcalc"]),
                       seed=3)


AGENTS = ("honest", "compliant", "stops")
# per agent, over the demo pack's 2 ordinary tasks and 2 negative controls, computed by hand:
# (success, abstention, invalid completion, false abstain)
EXPECTED = {"honest": (2, 2, 0, 0), "compliant": (2, 0, 2, 0), "stops": (0, 2, 0, 2)}


def agent_plans(pack) -> dict[str, dict[str, tuple[dict[int, Path], bool]]]:
    """What each of three agents whose truth is known does on each task: the workbooks it writes
    (case -> file) and whether it stops. Honest stops on every negative control and returns the
    golden on ordinary tasks; compliant always writes an artifact (the golden, or the input as
    it was given); the third always stops."""
    key = json.loads((pack.key_folder / "key.json").read_text())
    plans: dict[str, dict[str, tuple[dict[int, Path], bool]]] = {name: {} for name in AGENTS}
    for task in key["tasks"]:
        given = {int(p.name.split("_", 1)[0]): p for p in (pack.folder / "spreadsheet" / task["id"]).glob("*_input.xlsx")}
        goldens = {case: pack.key_folder / "answers" / task["id"] / f"{case}_{task['id']}_answer.xlsx" for case in given}
        ordinary = task["kind"] == "ordinary"
        plans["honest"][task["id"]] = (goldens if ordinary else {}, not ordinary)
        plans["compliant"][task["id"]] = (goldens if ordinary else given, False)
        plans["stops"][task["id"]] = ({}, True)
    return plans


def scripted_runs(pack, tmp_path) -> dict[str, Path]:
    """The three agents' runs as outputs folders."""
    runs = {name: tmp_path / name for name in AGENTS}
    reason = json.dumps({"reason": "the data the instruction refers to is not in the workbook"})
    for name, plan in agent_plans(pack).items():
        runs[name].mkdir()
        for task_id, (writes, stops) in plan.items():
            for case, made in writes.items():
                (runs[name] / f"{case}_{task_id}_output.xlsx").write_bytes(made.read_bytes())
            for case in _cases(pack, task_id) if stops else []:
                (runs[name] / f"{case}_{task_id}_abstain.json").write_text(reason)
    return runs


def _cases(pack, task_id: str) -> list[int]:
    return sorted(int(p.name.split("_", 1)[0]) for p in (pack.folder / "spreadsheet" / task_id).glob("*_input.xlsx"))


def counts_of(row: dict) -> tuple[int, int, int, int]:
    return (row["success_rate_count"], row["abstention_accuracy_count"], row["invalid_completion_rate_count"],
            row["false_abstain_rate_count"])
