"""A refusal-slice run's traces as Harbor and inspect_ai record them, each in its own records.

**Harbor** (a job folder, :mod:`regrade.runs.harbor`): each trial of a pack task leaves its
outputs *and its abstention files* in its artifacts, named as in an outputs folder
(``<n>_<id>_output.xlsx``, ``<n>_<id>_abstain.json`` or ``.txt``; harbor mirrors ``/app/output``
there), trials of one task numbered in the order they started. Covariates from the trial's
``result.json`` (Harbor's ``TrialResult``): ``tokens`` = the agent's ``n_input_tokens`` +
``n_output_tokens``, ``cost_usd``, ``wall_s`` = the agent's execution time; ``tool_calls`` from
the agent's trajectory (``agent/trajectory.json``, ATIF: the steps' ``tool_calls``) where the
agent wrote one. ``retries`` is absent: harbor removes a retried attempt's folder. The settings
the run names: the agent's ``model_name`` and any ``temperature``, ``top_p`` or ``max_tokens``
among its kwargs (each trial's ``config.json``), the job's ``retry.max_retries`` (the job's
``config.json``) and the tools its trajectories called.

**inspect_ai** (a log, or a folder of logs): one sample per pack task (its id the task's id,
its epoch the trial); a sample that stops sets ``abstained`` (true) and ``abstain_reason`` in
its store, one that writes workbooks lists them in its store's ``outputs`` (paths absolute or
relative to the log's folder, named ``<n>_<id>_output.xlsx``). Covariates: ``tokens`` (the
sample's model usage, total), ``cost_usd`` (where the usage has a cost), ``tool_calls`` (its
``tool`` events), ``wall_s`` (its working time) and ``retries`` (its error retries). The
settings: the eval's model, its generate config's temperature, top_p and max_tokens, its
``retry_on_error``, the most retries a sample took and the tools its samples called.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from regrade.refusal.traces import ABSTAIN_SUFFIXES, ConditionTraces, Trace
from regrade.runs.cases import RunError
from regrade.runs.harbor import artifacts_named, is_harbor_job, trials_in_start_order
from regrade.runs.inspect_logs import InspectLogError, is_inspect_log, log_files, log_samples

DECODING = ("temperature", "top_p", "max_tokens")


def harbor_traces(job_dir: Path, cases: dict[str, list[int]]) -> ConditionTraces:
    """The traces of every trial of ``job_dir`` of the pack's tasks (``cases``: task -> its cases)."""
    found = ConditionTraces({})
    tools: set[str] = set()
    trials_of: dict[str, int] = {}
    unknown = []
    for trial_dir, result in trials_in_start_order(job_dir):
        task_id = str(result.get("task_name", "")).rsplit("/", 1)[-1]
        if task_id not in cases:
            unknown.append(trial_dir.name)
            continue
        trials_of[task_id] = trial = trials_of.get(task_id, 0) + 1
        outputs = artifacts_named(trial_dir, "*_output.xlsx")
        stops = {**artifacts_named(trial_dir, "*_abstain.json"), **artifacts_named(trial_dir, "*_abstain.txt")}
        called = _trajectory_tools(trial_dir)
        tools.update(called or [])
        covariates = _harbor_covariates(result, called)
        for index, case in enumerate(cases[task_id]):
            output = outputs.get(f"{case}_{task_id}_output.xlsx")
            abstained = any(f"{case}_{task_id}{suffix}" in stops for suffix in ABSTAIN_SUFFIXES)
            found.traces[(task_id, case, trial)] = Trace(output, abstained, covariates if index == 0 else {})
        found.settings.update(_harbor_settings(trial_dir))
    found.settings.update(_job_settings(job_dir))
    if tools:
        found.settings["tools"] = sorted(tools)
    if unknown:
        found.notes.append(f"{len(unknown)} trials of tasks the pack does not hold, left out: {', '.join(unknown[:5])}")
    return found


def _harbor_covariates(result: dict, tool_calls: list[str] | None) -> dict[str, float]:
    agent = result.get("agent_result") or {}
    covariates: dict[str, float] = {}
    tokens = [agent.get(name) for name in ("n_input_tokens", "n_output_tokens")]
    if any(isinstance(t, (int, float)) for t in tokens):
        covariates["tokens"] = float(sum(t for t in tokens if isinstance(t, (int, float))))
    if isinstance(agent.get("cost_usd"), (int, float)):
        covariates["cost_usd"] = float(agent["cost_usd"])
    timing = result.get("agent_execution") or {}
    started, finished = _instant(timing.get("started_at")), _instant(timing.get("finished_at"))
    if started is not None and finished is not None:
        covariates["wall_s"] = (finished - started).total_seconds()
    if tool_calls is not None:
        covariates["tool_calls"] = float(len(tool_calls))
    return covariates


def _trajectory_tools(trial_dir: Path) -> list[str] | None:
    """The functions the agent's ATIF trajectory called, one per call; None without a trajectory."""
    path = trial_dir / "agent" / "trajectory.json"
    if not path.is_file():
        return None
    try:
        steps = json.loads(path.read_text(encoding="utf-8")).get("steps") or []
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return None
    return [str(call.get("function_name")) for step in steps if isinstance(step, dict)
            for call in step.get("tool_calls") or [] if isinstance(call, dict)]


def _harbor_settings(trial_dir: Path) -> dict[str, object]:
    agent = _json_object(trial_dir / "config.json").get("agent") or {}
    settings: dict[str, object] = {}
    if agent.get("model_name"):
        settings["model"] = str(agent["model_name"])
    kwargs = agent.get("kwargs") or {}
    settings.update({name: kwargs[name] for name in DECODING if isinstance(kwargs.get(name), (int, float))})
    return settings


def _job_settings(job_dir: Path) -> dict[str, object]:
    retry = _json_object(job_dir / "config.json").get("retry") or {}
    return {"retry_cap": retry["max_retries"]} if isinstance(retry.get("max_retries"), int) else {}


def inspect_traces(path: Path, cases: dict[str, list[int]]) -> ConditionTraces:
    """The traces of every sample of the log (or folder of logs) at ``path`` (see the module docstring)."""
    found = ConditionTraces({})
    tools: set[str] = set()
    retries = 0
    logs = log_files(path)
    if not logs:
        raise RunError(f"{path} holds no inspect_ai log")
    for log in logs:
        header, samples = log_samples(log)
        _inspect_settings(header, found.settings)
        unknown = []
        for sample in samples:
            task_id = str(sample.get("id"))
            if task_id not in cases:
                unknown.append(task_id)
                continue
            store = sample.get("store") or {}
            called = [str(e.get("function")) for e in sample.get("events") or []
                      if isinstance(e, dict) and e.get("event") == "tool"]
            tools.update(called)
            retries = max(retries, len(sample.get("error_retries") or []))
            covariates = _inspect_covariates(sample, called)
            outputs = {Path(p).name: _resolved(log.parent, p) for p in store.get("outputs") or [] if isinstance(p, str)}
            trial = int(sample.get("epoch") or 1)
            for index, case in enumerate(cases[task_id]):
                output = outputs.get(f"{case}_{task_id}_output.xlsx")
                found.traces[(task_id, case, trial)] = Trace(output if output is not None and output.is_file() else None,
                                                             store.get("abstained") is True,
                                                             covariates if index == 0 else {})
        if unknown:
            found.notes.append(f"{log.name}: {len(unknown)} samples of tasks the pack does not hold, left out: "
                               f"{', '.join(unknown[:5])}")
    found.settings["retries"] = retries
    if tools:
        found.settings["tools"] = sorted(tools)
    return found


def _inspect_settings(header: dict, settings: dict[str, object]) -> None:
    info = header.get("eval") or {}
    if info.get("model"):
        settings["model"] = str(info["model"])
    generate = info.get("model_generate_config") or {}
    settings.update({name: generate[name] for name in DECODING if isinstance(generate.get(name), (int, float))})
    retry = (info.get("config") or {}).get("retry_on_error")
    if isinstance(retry, int):
        settings["retry_cap"] = int(retry)


def _inspect_covariates(sample: dict, tool_calls: list[str]) -> dict[str, float]:
    covariates: dict[str, float] = {"tool_calls": float(len(tool_calls)),
                                    "retries": float(len(sample.get("error_retries") or []))}
    usage = [u for u in (sample.get("model_usage") or {}).values() if isinstance(u, dict)]
    if usage:
        covariates["tokens"] = float(sum(u.get("total_tokens") or 0 for u in usage))
        costs = [u["total_cost"] for u in usage if isinstance(u.get("total_cost"), (int, float))]
        if costs:
            covariates["cost_usd"] = float(sum(costs))
    time = sample.get("working_time", sample.get("total_time"))
    if isinstance(time, (int, float)):
        covariates["wall_s"] = float(time)
    return covariates


def is_inspect_source(path: Path) -> bool:
    """An inspect_ai log, or a folder holding at least one."""
    try:
        return bool(log_files(path)) if path.is_dir() else is_inspect_log(path)
    except InspectLogError:
        return False


def condition_traces(path: Path, cases: dict[str, list[int]]) -> ConditionTraces | None:
    """The traces of a Harbor job or inspect_ai logs at ``path``; None when it is neither (an outputs folder)."""
    if is_harbor_job(path):
        return harbor_traces(path, cases)
    if is_inspect_source(path):
        return inspect_traces(path, cases)
    return None


def _resolved(folder: Path, text: str) -> Path:
    path = Path(text)
    return path if path.is_absolute() else folder / path


def _instant(text: object) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def _json_object(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}
