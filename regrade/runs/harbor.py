"""Harbor job folders as a condition of a run.

A Harbor job (``harbor run``) writes one folder per trial under its job folder (Harbor's
``TrialPaths``): ``<trial>/result.json`` (its ``TrialResult``: ``task_name``, ``agent_info``,
``verifier_result.rewards``, ``exception_info``), ``<trial>/verifier/reward.txt`` and
``<trial>/artifacts/``, the files collected from the environment, mirrored by their path there
(``/app/output/1_13-1_output.xlsx`` becomes ``artifacts/app/output/1_13-1_output.xlsx``);
a multi-step trial keeps them under ``steps/<step>/artifacts/``.

Each trial of a task in the dataset becomes that task's cases, one per golden file: the trial's
output workbooks are found by name (``<n>_<id>_output.xlsx``) anywhere in its artifacts, its
verifier reward (result.json, else ``verifier/reward.json`` or ``reward.txt``) is the original
grade (a pass when it is at least 1, as SpreadsheetBench's
all-cases-pass rule has it), and trials of one task are numbered in name order. A trial whose
workbook was not collected (Harbor collects only what the task or job lists as artifacts), a
trial without a reward, a trial of a task the dataset lacks, and a dataset task without a trial
are each said in :attr:`HarborJob.notes`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from regrade.messages import first_few
from regrade.runs.cases import Case, RunError, excluded_tasks, golden_files, load_dataset, read_json, task_fields


@dataclass
class HarborJob:
    cases: list[Case] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def is_harbor_job(folder: Path) -> bool:
    """Whether ``folder`` is a Harbor job: trial folders holding a result.json with a task_name."""
    if not folder.is_dir():
        return False
    for trial in sorted(p for p in folder.iterdir() if p.is_dir()):
        result = trial / "result.json"
        if result.is_file() and (trial / "config.json").is_file():
            try:
                return "task_name" in json.loads(result.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError, OSError):
                return False
    return False


def harbor_cases(dataset_dir: Path, condition: str, job_dir: Path, stack: str | None = None,
                 benchmark: str = "spreadsheetbench") -> HarborJob:
    """The cases of every trial of ``job_dir`` (see the module docstring)."""
    if not is_harbor_job(job_dir):
        raise RunError(f"{job_dir} is not a Harbor job folder (no <trial>/result.json with a task_name)")
    tasks = {}
    excluded = excluded_tasks(dataset_dir)
    for number, record in enumerate(load_dataset(dataset_dir), start=1):
        task_id, position, sheet = task_fields(dataset_dir / "dataset.json", number, record)
        if task_id not in excluded:
            tasks[task_id] = (position, sheet)
    job = HarborJob()
    trials_of: dict[str, int] = {}
    unknown, uncollected, unrewarded, of_excluded = [], [], [], []
    for trial_dir in sorted(p for p in job_dir.iterdir() if (p / "result.json").is_file()):
        result = _result(trial_dir)
        task_id = str(result.get("task_name", "")).rsplit("/", 1)[-1]
        if task_id in excluded:
            of_excluded.append(f"{trial_dir.name} (task {task_id})")
            continue
        if task_id not in tasks:
            unknown.append(f"{trial_dir.name} (task {task_id or '?'})")
            continue
        trials_of[task_id] = trial = trials_of.get(task_id, 0) + 1
        reward = _reward(result, trial_dir)
        if reward is None:
            unrewarded.append(trial_dir.name)
        outputs = _outputs(trial_dir)
        position, sheet = tasks[task_id]
        for case, golden in golden_files(dataset_dir, task_id).items():
            name = f"{case}_{task_id}_output.xlsx"
            if name not in outputs:
                uncollected.append(f"{trial_dir.name} ({name})")
            job.cases.append(Case(stack=stack or _stack(result), benchmark=benchmark, condition=condition,
                                  task_id=task_id, case=case, trial=trial,
                                  output_path=outputs.get(name, trial_dir / "artifacts" / name), answer_path=golden,
                                  answer_position=position, answer_sheet=sheet,
                                  original_pass=None if reward is None else reward >= 1))
    untried = [task for task in tasks if task not in trials_of]
    for what, items in (("trials of tasks the dataset lacks, left out", unknown),
                        ("trials of tasks the dataset marks exclude, left out", of_excluded),
                        ("dataset tasks without a trial in this job, left out", untried),
                        ("output workbooks not collected from their trial (Harbor collects only the task's or job's "
                         "artifacts: list /app/output there)", uncollected),
                        ("trials without a verifier reward (no original grade)", unrewarded)):
        if items:
            job.notes.append(f"warning: Harbor job {job_dir.name} ({condition}): {len(items)} {what}: {first_few(items)}")
    return job


def _result(trial_dir: Path) -> dict:
    result = read_json(trial_dir / "result.json")
    if not isinstance(result, dict):
        raise RunError(f"{trial_dir / 'result.json'} is not a Harbor trial result (not a JSON object)")
    return result


def _reward(result: dict, trial_dir: Path) -> float | None:
    """The trial's reward, from the first of these that holds one: ``verifier_result.rewards``
    in result.json, ``verifier/reward.json`` (rewards by name), ``verifier/reward.txt`` (one
    number), as Harbor's verifier writes them. Of several rewards, the one named ``reward``;
    several without it, or a value that is not a finite number, give none."""
    rewards = (result.get("verifier_result") or {}).get("rewards")
    if not rewards and (trial_dir / "verifier" / "reward.json").is_file():
        try:
            rewards = json.loads((trial_dir / "verifier" / "reward.json").read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
    if not rewards and (trial_dir / "verifier" / "reward.txt").is_file():
        try:
            rewards = {"reward": float((trial_dir / "verifier" / "reward.txt").read_text(encoding="utf-8").strip())}
        except (ValueError, UnicodeDecodeError):
            return None
    if not isinstance(rewards, dict) or not ("reward" in rewards or len(rewards) == 1):
        return None
    value = rewards.get("reward", next(iter(rewards.values()), None))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _outputs(trial_dir: Path) -> dict[str, Path]:
    """Workbooks named as outputs anywhere in the trial's artifacts (a step's too), by name."""
    roots = [trial_dir / "artifacts", *sorted((trial_dir / "steps").glob("*/artifacts"))]
    found: dict[str, Path] = {}
    for root in roots:
        for path in sorted(root.rglob("*_output.xlsx")) if root.is_dir() else []:
            if path.is_file() and not path.is_symlink():
                found.setdefault(path.name, path)
    return found


def _stack(result: dict) -> str:
    agent = result.get("agent_info") or {}
    model = (agent.get("model_info") or {}).get("name")
    name = str(agent.get("name") or "harbor")
    return f"{name}/{model}" if model else name
