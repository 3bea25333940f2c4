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
grade (a pass when it is at least 1, as SpreadsheetBench's all-cases-pass rule has it), and
trials of one task are numbered in the order they started (``started_at``; harbor's trial names
end in random letters). Harbor's own verdict on a reward is honoured: a trial whose
``reward_valid`` is false, or one of whose exceptions has an error policy without a valid reward
(``exception_info.policy.has_valid_reward``: a rate limit, a verifier timeout), has no original
grade; one whose policy says it should not be graded (the sandbox never started) is left out.
Where a workbook is missing, the trial's ``artifacts/manifest.json`` says why: the output folder
was not listed as an artifact, was listed but could not be collected, or was collected with no
output workbook in it. Each of these, a trial without a reward, a trial of a task the dataset
lacks, and a dataset task without a trial are said in :attr:`HarborJob.notes`.
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
    unknown, unrewarded, of_excluded, invalid, ungraded = [], [], [], [], []
    missing: dict[str, list[str]] = {why: [] for why in MISSING_WHY}
    for trial_dir, result in trials_in_start_order(job_dir):
        task_id = str(result.get("task_name", "")).rsplit("/", 1)[-1]
        validity = _reward_validity(result)
        if validity == "not graded":
            ungraded.append(f"{trial_dir.name} ({_exception_types(result)})")
            continue
        if task_id in excluded:
            of_excluded.append(f"{trial_dir.name} (task {task_id})")
            continue
        if task_id not in tasks:
            unknown.append(f"{trial_dir.name} (task {task_id or '?'})")
            continue
        trials_of[task_id] = trial = trials_of.get(task_id, 0) + 1
        reward = _reward(result, trial_dir)
        if reward is not None and validity == "invalid":
            invalid.append(f"{trial_dir.name} ({_exception_types(result) or 'reward_valid false'})")
            reward = None
        elif reward is None:
            unrewarded.append(trial_dir.name)
        outputs = _outputs(trial_dir)
        position, sheet = tasks[task_id]
        why = None  # the trial's manifest, read at its first missing workbook
        for case, golden in golden_files(dataset_dir, task_id).items():
            name = f"{case}_{task_id}_output.xlsx"
            if name not in outputs:
                why = why or why_missing(trial_dir)
                missing[why].append(f"{trial_dir.name} ({name})")
            job.cases.append(Case(stack=stack or _stack(result), benchmark=benchmark, condition=condition,
                                  task_id=task_id, case=case, trial=trial,
                                  output_path=outputs.get(name, trial_dir / "artifacts" / name), answer_path=golden,
                                  answer_position=position, answer_sheet=sheet,
                                  original_pass=None if reward is None else reward >= 1,
                                  original_grader=HARBOR_GRADER))
    untried = [task for task in tasks if task not in trials_of]
    for what, items in (("trials of tasks the dataset lacks, left out", unknown),
                        ("trials of tasks the dataset marks exclude, left out", of_excluded),
                        ("dataset tasks without a trial in this job, left out", untried),
                        ("trials Harbor's error policy says not to grade (should_grade false), left out", ungraded),
                        *((f"output workbooks missing: {why}", items) for why, items in missing.items()),
                        ("trials whose reward Harbor marks invalid (reward_valid false), so no original grade",
                         invalid),
                        ("trials without a verifier reward (no original grade)", unrewarded)):
        if items:
            job.notes.append(f"warning: Harbor job {job_dir.name} ({condition}): {len(items)} {what}: {first_few(items)}")
    return job


HARBOR_GRADER = "Harbor's verifier reward"
NOT_LISTED = "the trial's artifacts do not list the output folder (list /app/output in the task's or job's artifacts)"
NOT_COLLECTED = "listed as an artifact, but harbor could not collect it (artifacts/manifest.json: failed; no such folder?)"
NONE_WRITTEN = "the output folder was collected with no output workbook in it (the agent wrote none)"
MISSING_WHY = (NOT_LISTED, NOT_COLLECTED, NONE_WRITTEN)


def trials_in_start_order(job_dir: Path) -> list[tuple[Path, dict]]:
    """The job's trial folders with their results, by ``started_at`` (then name; a trial that never
    started, last)."""
    trials = [(p, _result(p)) for p in sorted(job_dir.iterdir()) if (p / "result.json").is_file()]
    return sorted(trials, key=lambda t: (not t[1].get("started_at"), str(t[1].get("started_at") or ""), t[0].name))


def _exceptions(result: dict) -> list[dict]:
    """The trial's exceptions, its own and its steps' (Harbor's ``recorded_exceptions``)."""
    found = [result.get("exception_info"), *((step or {}).get("exception_info") for step in result.get("step_results") or [])]
    return [e for e in found if isinstance(e, dict)]


def _exception_types(result: dict) -> str:
    return ", ".join(str(e.get("exception_type", "?")) for e in _exceptions(result))


def _reward_validity(result: dict) -> str:
    """``not graded`` when an exception's error policy says the trial should not be graded,
    ``invalid`` when Harbor marks its reward invalid (``reward_valid`` false, or a policy without
    a valid reward), else ``valid``. A result written before harbor recorded policies is valid."""
    policies: list[dict] = [p for e in _exceptions(result) if isinstance(p := e.get("policy"), dict)]
    if any(p.get("should_grade") is False for p in policies):
        return "not graded"
    if result.get("reward_valid") is False or any(p.get("has_valid_reward") is False for p in policies):
        return "invalid"
    return "valid"


def why_missing(trial_dir: Path) -> str:
    """Why a trial's output workbook is not in its artifacts, by its ``artifacts/manifest.json``:
    the entries harbor wrote for each path it tried to collect (status ok, empty, failed, skipped)."""
    try:
        entries = json.loads((trial_dir / "artifacts" / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        entries = []
    outputs = [e for e in entries if isinstance(e, dict) and str(e.get("source", "")).rstrip("/") in ("/app/output", "/app")]
    if not outputs:
        return NOT_LISTED
    return NOT_COLLECTED if all(e.get("status") == "failed" for e in outputs) else NONE_WRITTEN


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
    return artifacts_named(trial_dir, "*_output.xlsx")


def artifacts_named(trial_dir: Path, pattern: str) -> dict[str, Path]:
    """The files of the trial's artifacts (a step's too) whose name matches ``pattern``, by
    name: regular files only, never a link."""
    roots = [trial_dir / "artifacts", *sorted((trial_dir / "steps").glob("*/artifacts"))]
    found: dict[str, Path] = {}
    for root in roots:
        for path in sorted(root.rglob(pattern)) if root.is_dir() else []:
            if path.is_file() and not path.is_symlink():
                found.setdefault(path.name, path)
    return found


def _stack(result: dict) -> str:
    agent = result.get("agent_info") or {}
    model = (agent.get("model_info") or {}).get("name")
    name = str(agent.get("name") or "harbor")
    return f"{name}/{model}" if model else name
