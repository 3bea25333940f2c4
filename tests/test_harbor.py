"""Harbor job folders as conditions, on a job folder laid out as Harbor's TrialPaths and
TrialResult have it (harbor 0.26: <trial>/result.json, config.json, verifier/reward.txt,
artifacts/ mirroring the environment's paths). harbor itself needs Python 3.12, so the fixture
is written here, field for field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from regrade.cli import main
from regrade.runs.harbor import harbor_cases, is_harbor_job
from regrade.runs.load import load_run
from tests.conftest import DEMO, demo_task_dataset, require_engines

TASK = "59511"


@pytest.fixture
def dataset(tmp_path) -> Path:
    return demo_task_dataset(tmp_path / "data", TASK)


def trial(job: Path, name: str, task: str, collected: tuple[int, ...], rewards: dict | None, reward_txt: str | None,
          model: str = "anthropic/claude") -> Path:
    folder = job / name
    for sub in ("agent", "verifier", "artifacts/app/output"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for case in collected:  # /app/output/<n>_<id>_output.xlsx collected as artifacts/app/output/...
        shutil.copyfile(DEMO / "outputs" / "none" / f"{case}_{TASK}_output.xlsx",
                        folder / "artifacts" / "app" / "output" / f"{case}_{task}_output.xlsx")
    (folder / "artifacts" / "manifest.json").write_text("[]")
    (folder / "config.json").write_text(json.dumps({"task": {"path": f"tasks/{task}"}, "trial_name": name}))
    result = {"schema_version": 1, "id": "8b5f0c1e-0000-4000-8000-000000000000", "task_name": task, "trial_name": name,
              "trial_uri": f"file://{folder}", "task_id": {"path": f"tasks/{task}"}, "task_checksum": "0" * 64,
              "config": {"task": {"path": f"tasks/{task}"}, "trial_name": name},
              "agent_info": {"name": "terminus-2", "version": "2.0", "model_info": {"name": model, "provider": None}},
              "verifier_result": None if rewards is None else {"rewards": rewards}, "exception_info": None}
    (folder / "result.json").write_text(json.dumps(result))
    if reward_txt is not None:
        (folder / "verifier" / "reward.txt").write_text(reward_txt)
    return folder


@pytest.fixture
def job(tmp_path) -> Path:
    job = tmp_path / "jobs" / "2026-12-01__skills"
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"job_name": job.name}))
    trial(job, f"{TASK}__aaa", TASK, (1, 2, 3), {"reward": 1.0}, "1.0")
    trial(job, f"{TASK}__bbb", TASK, (1,), None, "0.0")  # two workbooks not collected; reward only in reward.txt
    trial(job, "99999__ccc", "99999", (), {"reward": 1.0}, "1.0")  # a task the dataset lacks
    return job


def test_the_reward_comes_from_result_json_else_reward_json_else_reward_txt(tmp_path):
    from regrade.runs.harbor import _reward

    folder = trial(tmp_path, "t", TASK, (), None, None)
    assert _reward({}, folder) is None
    (folder / "verifier" / "reward.txt").write_text("0.5\n")
    assert _reward({}, folder) == 0.5
    (folder / "verifier" / "reward.json").write_text(json.dumps({"accuracy": 1}))  # one reward: it is the one
    assert _reward({}, folder) == 1.0
    (folder / "verifier" / "reward.json").write_text(json.dumps({"a": 1, "b": 0}))  # several, none named reward
    assert _reward({}, folder) is None
    assert _reward({"verifier_result": {"rewards": {"reward": 0, "time": 3}}}, folder) == 0.0


def test_a_harbor_job_gives_each_trial_s_cases_reward_and_what_was_not_collected(dataset, job):
    assert is_harbor_job(job) and not is_harbor_job(job.parent)
    loaded = harbor_cases(dataset, "skills", job)
    assert [(c.task_id, c.trial, c.case, c.original_pass, c.output_path.is_file()) for c in loaded.cases] == [
        (TASK, 1, 1, True, True), (TASK, 1, 2, True, True), (TASK, 1, 3, True, True),
        (TASK, 2, 1, False, True), (TASK, 2, 2, False, False), (TASK, 2, 3, False, False)]
    assert loaded.cases[0].output_path == job / f"{TASK}__aaa" / "artifacts" / "app" / "output" / f"1_{TASK}_output.xlsx"
    assert {c.stack for c in loaded.cases} == {"terminus-2/anthropic/claude"}
    said = "\n".join(loaded.notes)
    assert "1 trials of tasks the dataset lacks, left out: 99999__ccc (task 99999)" in said
    assert "dataset tasks without a trial" not in said  # the dataset's one task has two
    assert "2 output workbooks missing: the trial's artifacts do not list the output folder" in said \
        and f"{TASK}__bbb (2_{TASK}_output.xlsx)" in said


def test_harbor_jobs_on_the_command_line_named_and_detected(dataset, job, tmp_path):
    require_engines("ironcalc")
    none = tmp_path / "none"
    none.mkdir()
    for case in (1, 2, 3):
        shutil.copyfile(DEMO / "outputs" / "community" / f"{case}_{TASK}_output.xlsx", none / f"{case}_{TASK}_output.xlsx")
    result = CliRunner().invoke(main, ["rescore", "--dataset", str(dataset), "--condition", f"none={none}",
                                       "--harbor", f"skills={job}", "--engines", "ironcalc", "--workers", "1",
                                       "-o", str(tmp_path / "r.jsonl")])
    assert result.exit_code == 0, result.output
    assert "condition skills: 4 of 6 outputs found, 2 missing" in result.stderr
    assert "Harbor job 2026-12-01__skills (skills): 2 output workbooks missing" in result.stderr
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()[1:]]
    assert {(r["condition"], r["trial"]) for r in records} == {("none", 1), ("skills", 1), ("skills", 2)}
    assert all(r["original_pass"] is True for r in records if r["condition"] == "skills" and r["trial"] == 1)
    import regrade

    from_api = regrade.rescore(dataset, {"none": none}, harbor=[f"skills={job}"], engines=["ironcalc"])
    assert [(c.condition, c.trial, c.verdict) for c in from_api.cases] == \
        [(r["condition"], r["trial"], r["verdict"]) for r in records]
    detected = load_run(dataset, {"skills": job})  # a --condition folder that is a Harbor job
    assert len(detected.cases) == 6 and detected.notes
    shutil.rmtree(job / f"{TASK}__aaa")
    shutil.rmtree(job / f"{TASK}__bbb")
    assert f"1 dataset tasks without a trial in this job, left out: {TASK}" in "\n".join(
        harbor_cases(dataset, "skills", job).notes)
