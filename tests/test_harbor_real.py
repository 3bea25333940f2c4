"""Harbor jobs that harbor 0.26.0 itself wrote, read by regrade.

harbor runs in a Python 3.12 virtual environment of its own (tests/harbor_jobs.py makes it
once), with its own Job, Trial, oracle and nop agents, Verifier and artifact collection, over
a local environment without Docker (tests/harbor_env). Jobs: the oracle agent twice per task;
the nop agent (the output folder exists and stays empty); an agent that writes the unsolved
inputs and then raises a rate-limit error (harbor rewards 1.0 from the lax verifier and marks
the reward invalid); the oracle agent with /app/output not listed as an artifact."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from regrade.cli import main
from regrade.runs.harbor import NONE_WRITTEN, NOT_LISTED, harbor_cases
from regrade.runs.inventory import EmptyCondition, check_inventory, take_inventory
from tests.conftest import DEMO, require_engines
from tests.harbor_jobs import RATE_LIMITED, harbor_cli, run_job, write_task

pytestmark = pytest.mark.slow
TASKS = ("59511", "32293")


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> dict[str, Path]:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        message = "the local Harbor environment needs root and unshare"
    elif (harbor := harbor_cli()) is None:
        message = "no Python >= 3.12 here for harbor"
    else:
        root = tmp_path_factory.mktemp("harbor")
        dataset = root / "data"
        records = [r for r in json.loads((DEMO / "dataset" / "dataset.json").read_text()) if str(r["id"]) in TASKS]
        for task in TASKS:
            shutil.copytree(DEMO / "dataset" / "spreadsheet" / task, dataset / "spreadsheet" / task)
            write_task(root / "tasks", dataset, task)
        (dataset / "dataset.json").write_text(json.dumps(records))
        made = {"dataset": dataset}
        for name, agent, artifacts, attempts in (("oracle", "oracle", ("/app/output",), 2), ("nop", "nop", ("/app/output",), 1),
                                                  ("limited", RATE_LIMITED, ("/app/output",), 1), ("unlisted", "oracle", (), 1)):
            made[name] = run_job(harbor, root / "tasks", root / "jobs", name, agent, artifacts, attempts)
        return made
    if os.environ.get("CI"):
        pytest.fail(f"CI must run harbor: {message}")
    pytest.skip(message)


def results(job: Path) -> list[dict]:
    return [json.loads((trial / "result.json").read_text()) for trial in sorted(job.iterdir()) if (trial / "result.json").is_file()]


def test_a_reward_harbor_marks_invalid_is_no_original_grade(jobs):
    written = results(jobs["limited"])
    assert {(r["exception_info"]["exception_type"], r["verifier_result"]["rewards"]["reward"], r["reward_valid"])
            for r in written} == {("RateLimitError", 1.0, False)}  # what harbor wrote
    loaded = harbor_cases(jobs["dataset"], "limited", jobs["limited"])
    assert loaded.cases and all(c.original_pass is None for c in loaded.cases)
    said = "\n".join(loaded.notes)
    assert "2 trials whose reward Harbor marks invalid (reward_valid false), so no original grade" in said
    assert "RateLimitError" in said


def test_an_output_folder_collected_empty_is_told_from_one_never_listed(jobs):
    nop = harbor_cases(jobs["dataset"], "nop", jobs["nop"])
    assert f"6 output workbooks missing: {NONE_WRITTEN}" in "\n".join(nop.notes)
    [inventory] = take_inventory(nop.cases)
    assert inventory.none_written
    check_inventory([inventory], allow_missing=False)  # its agents wrote nothing: genuine failures, graded
    unlisted = harbor_cases(jobs["dataset"], "unlisted", jobs["unlisted"])
    assert f"6 output workbooks missing: {NOT_LISTED}" in "\n".join(unlisted.notes)
    with pytest.raises(EmptyCondition) as stopped:
        check_inventory(take_inventory(unlisted.cases), allow_missing=False)
    assert NOT_LISTED in str(stopped.value) and "--allow-missing" not in str(stopped.value)


def test_trials_are_numbered_in_the_order_they_started(jobs):
    loaded = harbor_cases(jobs["dataset"], "oracle", jobs["oracle"])
    started = {(r["task_name"], r["trial_name"]): r["started_at"] for r in results(jobs["oracle"])}
    for task in TASKS:
        by_trial = {c.trial: c.output_path.parts[-5] for c in loaded.cases if c.task_id == task}
        assert sorted(by_trial) == [1, 2]
        assert started[(task, by_trial[1])] < started[(task, by_trial[2])]


def test_the_full_grade_is_set_against_the_run_s_own_grade_and_its_grader_named(jobs, tmp_path):
    require_engines("ironcalc", "libreoffice", "formulon")
    result = CliRunner().invoke(main, ["rescore", "--dataset", str(jobs["dataset"]), "--harbor", f"none={jobs['nop']}",
                                       "--harbor", f"oracle={jobs['oracle']}", "--workers", "1",
                                       "-o", str(tmp_path / "r.jsonl")])
    assert result.exit_code == 0, result.output
    # the nop agent's trials: reward 0, no workbook (failures in full too); the oracle's: reward 1, Excel's answers
    assert "Against the run's own grades (Harbor's verifier reward), by trial: 0 of 2 it failed pass when recomputed " \
           "in full, 0 of 4 it passed fail in full" in result.stderr
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()[1:]]
    assert {r["original_grader"] for r in records} == {"Harbor's verifier reward"}
    report = CliRunner().invoke(main, ["report", str(tmp_path / "r.jsonl"), "-o", str(tmp_path / "report.html")])
    assert report.exit_code == 0, report.output
    assert "by trial: 0 of 2 it failed pass when recomputed in full" in (tmp_path / "report.html").read_text()
    # two jobs of different agents (nop, oracle) are different stacks: the empty table is said, with the way to pair them
    unpaired = CliRunner().invoke(main, ["table", str(tmp_path / "r.jsonl")])
    assert "oracle / spreadsheetbench has no condition none to pair against" in unpaired.stderr
    assert "--stack NAME" in unpaired.stderr and "the table is empty" in unpaired.stderr
    paired = CliRunner().invoke(main, ["table", str(tmp_path / "r.jsonl"), "--stack", "harbor", "--format", "json"])
    assert paired.exit_code == 0, paired.output
    rows = json.loads(paired.stdout)
    regraded = next(r for r in (rows if isinstance(rows, list) else rows["rows"]) if r["grading"] == "regraded")
    assert (regraded["n"], regraded["gains"], regraded["regressions"]) == (2, 2, 0)  # both tasks: nop fails, oracle passes
