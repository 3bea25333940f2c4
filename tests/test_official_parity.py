"""The ``spreadsheetbench-official`` policy decides every case as the official grader did.

``official_grades.json`` (shipped beside the shared SpreadsheetBench split) records
the official ``evaluation.py`` decisions for each test case: the answer graded
against itself, and the unmodified input graded against the answer. Skipped when
the shared split is absent (a fresh clone of this repository does not have it).
"""

from __future__ import annotations

import json
import multiprocessing

import pytest

from regrade.engines.cached import CachedEngine
from regrade.grading.policies import OfficialPolicy, TargetError
from regrade.grading.grade import GoldenError, grade, load_golden
from regrade.runs.cases import golden_files, input_file, load_dataset
from tests.conftest import SHARED, SHARED_ABSENT

pytestmark = [pytest.mark.skipif(not (SHARED / "official_grades.json").is_file(), reason=SHARED_ABSENT),
              pytest.mark.slow]  # the fast tier (-m 'not slow') leaves this module out


def official_decisions(job: tuple[str, int, str]) -> tuple[str, int, bool, bool]:
    """(task, case, answer-vs-answer pass, input-vs-answer pass) under the official policy."""
    task_id, number, position = job
    policy, engine = OfficialPolicy(), CachedEngine(read_formulas=False)
    golden_path = golden_files(SHARED, task_id)[number]
    input_path = input_file(golden_path, task_id, number) or golden_path.with_name(f"{number}_{task_id}_input.xlsx")
    try:
        golden = load_golden(golden_path)
        targets = golden.targets(policy, position, None)
    except (GoldenError, TargetError):
        return task_id, number, False, False
    decisions = []
    for output in (golden_path, input_path):
        passed = grade(policy, targets, golden, engine.name, engine.evaluate(output, targets)).passed
        decisions.append(bool(passed))
    return task_id, number, decisions[0], decisions[1]


def test_official_policy_agrees_with_every_official_decision():
    rows = json.loads((SHARED / "official_grades.json").read_text())["cases"]
    positions = {str(r["id"]): r["answer_position"] for r in load_dataset(SHARED)}
    jobs = [(str(r["id"]), r["case"], positions[str(r["id"])]) for r in rows]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        ours = {(t, n): (a, i) for t, n, a, i in pool.imap_unordered(official_decisions, jobs, chunksize=8)}
    disagreements = [
        (str(r["id"]), r["case"], (r["answer_vs_answer"], r["input_vs_answer"]), ours[(str(r["id"]), r["case"])])
        for r in rows
        if ours[(str(r["id"]), r["case"])] != (r["answer_vs_answer"], r["input_vs_answer"])
    ]
    assert len(rows) > 1800
    assert disagreements == [], f"{len(disagreements)} of {len(rows)} rows differ, e.g. {disagreements[:10]}"
    # the documented counts of the official split, as a check on the check
    assert sum(not a for a, _ in ours.values()) == 30
    assert sum(i for _, i in ours.values()) == 187
