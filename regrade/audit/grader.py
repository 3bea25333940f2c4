"""``regrade audit grader``: run a grader over a sealed control pack and count its mistakes.

A positive control the grader fails is a *false fail*; a negative control it passes is a
*false pass*. Counts are per control category, with the failing controls and the tasks they
come from named, and each rate with its Wilson 95% interval (over the controls the grader
judged: one it could not judge, ``errored``, is neither). Every report carries the pack
digest, the grader's identity and settings and regrade's version, and for a pack generated
from a benchmark (:mod:`regrade.audit.generated`) the test cases and controls that could
not be checked (``not_checked``); :func:`audit_table` puts several reports side by side and
says so when they were made with different packs or regrade versions.

Value, command and callable graders run over the controls in ``workers`` case workers, fresh
interpreters that find modules where this process finds them (:mod:`regrade.run.pool`: a
worker that dies costs the control it held, which is tried again alone and, if it ends that
worker too, counted as one the grader could not judge); a callable another process cannot
import (defined in the running script, or a lambda) is called in this process, one control at
a time. regrade's own grader runs as a rescore (its pool, results cache and per-case limits),
so auditing it on a pack it generated costs nothing more.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Callable

from regrade.audit.controls import Control, ControlPack
from regrade.audit.generated import not_checked_of
from regrade.run.pool import map_in_workers
from regrade.grading.graders import (CallableGrader, CommandGrader, Grader, GraderFailure, RegradeGrader,
                                     TaskContext, ValueGrader)
from regrade.paired.stats import wilson
from regrade.results.provenance import regrade_version


@dataclass
class CategoryAudit:
    category: str
    kind: str
    probes: int = 0
    false_fail: int = 0
    false_pass: int = 0
    errored: int = 0  # controls the grader could not judge (GraderAudit.errors says why): neither pass nor fail
    failing: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)  # the benchmark tasks the failing controls come from
    # a failing perturbed control's change (cell, from, to, relative): a tolerance, or a defect?
    perturbations: dict[str, dict] = field(default_factory=dict)

    @property
    def wrong(self) -> int:
        return self.false_fail + self.false_pass

    @property
    def judged(self) -> int:
        return self.probes - self.errored

    def rates(self) -> dict:
        """The category's error rate (false fails of a positive, false passes of a negative) with its interval."""
        judged = self.judged
        lower, upper = rate_interval(self.wrong, judged)
        rate = self.wrong / judged if judged else None
        positive = self.kind == "positive"
        return {"false_fail_rate": rate if positive else None, "false_pass_rate": None if positive else rate,
                "false_fail_interval": [lower, upper] if positive else None,
                "false_pass_interval": None if positive else [lower, upper]}


@dataclass
class GraderAudit:
    grader: str
    settings: dict
    pack_digest: str
    regrade_version: str
    categories: list[CategoryAudit]
    errors: dict[str, str] = field(default_factory=dict)  # control id -> what went wrong running the grader
    not_checked: list[dict] = field(default_factory=list)  # {task, case, reason, category}: what the pack left out
    selection: dict | None = None  # {tasks, calling, of}: only these of the pack's controls were graded

    def overall(self) -> dict:
        """Per kind: controls, wrong, the rate and its Wilson interval."""
        totals = {}
        for kind in ("positive", "negative"):
            rows = [c for c in self.categories if c.kind == kind]
            total = CategoryAudit("all", kind, sum(c.probes for c in rows), sum(c.false_fail for c in rows),
                                  sum(c.false_pass for c in rows), sum(c.errored for c in rows))
            totals[kind] = {"controls": total.probes, "judged": total.judged, "wrong": total.wrong, **total.rates()}
        return totals

    def as_json(self) -> dict:
        data = asdict(self)
        for row, category in zip(data["categories"], self.categories):
            row["controls"] = category.probes
            row.update(category.rates())
        data["overall"] = self.overall()
        return data


def rate_interval(wrong: int, judged: int) -> tuple[float | None, float | None]:
    """The Wilson 95% interval of wrong / judged, inside [0, 1] (None, None when nothing was judged)."""
    if not judged:
        return None, None
    lower, upper = wilson(wrong, judged)
    return max(0.0, lower), min(1.0, upper)


def audit_grader(grader: Grader, pack: ControlPack, workers: int = 1,
                 on_control: Callable[[Control], None] | None = None,
                 executor: str = "local", scheduler: str | None = None) -> GraderAudit:
    """Run ``grader`` on every control of ``pack`` (in ``workers`` processes; regrade's own grader
    on a Dask cluster with ``executor`` "dask"); ``on_control`` is called as each is graded."""
    by_category: dict[tuple[str, str], CategoryAudit] = {}
    errors: dict[str, str] = {}
    verdicts = grade_controls(grader, pack.controls, workers, on_control, executor, scheduler)
    for control, verdict in zip(pack.controls, verdicts):
        row = by_category.setdefault((control.kind, control.category), CategoryAudit(control.category, control.kind))
        row.probes += 1
        if isinstance(verdict, str):  # the grader could not judge this control: an error of it, not a fail
            errors[control.id] = verdict
            row.errored += 1
            continue
        if (control.kind == "positive") != verdict:
            row.false_fail += control.kind == "positive"
            row.false_pass += control.kind == "negative"
            row.failing.append(control.id)
            if control.perturbation is not None:
                row.perturbations[control.id] = control.perturbation
            if control.task_id is not None and control.task_id not in row.tasks:
                row.tasks.append(control.task_id)
    ordered = sorted(by_category.values(), key=lambda c: (c.kind != "positive", c.category))
    return GraderAudit(grader.name, grader.settings(), pack.digest, regrade_version(), ordered, errors,
                       not_checked_of(pack.folder), pack.selection)


def grade_controls(grader: Grader, controls: list[Control], workers: int = 1,
                   on_control: Callable[[Control], None] | None = None,
                   executor: str = "local", scheduler: str | None = None) -> list[bool | str]:
    """Each control's pass (True) or fail (False), or what went wrong running the grader (a text)."""
    told = on_control or (lambda control: None)
    if isinstance(grader, RegradeGrader):
        return _regrade_verdicts(grader, controls, workers, told, executor, scheduler)
    if workers <= 1 or len(controls) < 2 * workers or not runs_in_workers(grader):
        verdicts = []
        for control in controls:
            verdicts.append(_verdict(grader, control))
            told(control)
        return verdicts
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no engine or lock inherited
    # the controls of one golden go to one worker, which reads that golden once (grading.grade.load_golden)
    return map_in_workers(functools.partial(_verdict, grader), controls, workers, lambda index: told(controls[index]),
                          lambda control: "the grader's worker process died on this control twice (out of memory, "
                                          "or a crash in a reader)",
                          affinity=lambda control: control.answer, context=context)


def runs_in_workers(grader: Grader) -> bool:
    """Whether a case worker can be sent ``grader``: a spawned interpreter imports a callable's
    module by name (with this process's ``sys.path``), so one defined in the running script,
    or not found under its own name in its module, stays here."""
    if not isinstance(grader, CallableGrader):
        return isinstance(grader, (ValueGrader, CommandGrader))
    function = grader._function
    module = sys.modules.get(getattr(function, "__module__", None) or "")
    if module is None or module.__name__ == "__main__":
        return False
    return getattr(module, getattr(function, "__qualname__", ""), None) is function


def _verdict(grader: Grader, control: Control) -> bool | str:
    try:
        return bool(grader.passes(control.output, control.answer, control.answer_position, control.answer_sheet,
                                  TaskContext(control.input, control.instruction_type)))
    except Exception as exc:
        return str(exc) if isinstance(exc, GraderFailure) else f"{type(exc).__name__}: {exc}"


def _regrade_verdicts(grader: RegradeGrader, controls: list[Control], workers: int,
                      told: Callable[[Control], None], executor: str, scheduler: str | None) -> list[bool | str]:
    """regrade's grader over the controls as one rescore run: its pool, limits and results cache."""
    from regrade.run import ResultCache, default_cache_dir, rescore_run, rescore_settings
    from regrade.runs.cases import Case

    settings = rescore_settings(grader.engine_names(), grader.settings()["quorum"], grader.policy,
                                timeout_s=grader.timeout_s)
    cases = [Case(condition=c.category, task_id=c.task_id or c.id, case=1, output_path=c.output, answer_path=c.answer,
                  answer_position=c.answer_position, answer_sheet=c.answer_sheet) for c in controls]
    records = rescore_run(cases, settings, workers, ResultCache(default_cache_dir()),
                          lambda index, record, cached: told(controls[index]), executor=executor, scheduler=scheduler)
    return [r.full_pass is True for r in records]


def audit_table(reports: list[dict]) -> tuple[list[dict], list[str]]:
    """One row per (grader, category) from several reports (``GraderAudit.as_json``), and the
    warnings a reader needs: reports made with different packs, selections of controls or
    regrade versions, or one grader's reports made with different settings."""
    warnings = []
    for key, what in (("pack_digest", "control packs"), ("selection", "selections of controls"),
                      ("regrade_version", "regrade versions")):
        seen = defaultdict(list)
        for report in reports:
            value = report.get(key)
            seen[value if isinstance(value, str) else json.dumps(value, sort_keys=True)].append(report["grader"])
        if len(seen) > 1:
            detail = "; ".join(f"{value[:12] if key == 'pack_digest' else value}: {', '.join(graders)}"
                               for value, graders in seen.items())
            warnings.append(f"these reports were made with different {what} ({detail}): their counts do not compare")
    settings = defaultdict(set)
    for report in reports:
        settings[report["grader"]].add(json.dumps(report["settings"], sort_keys=True))
    for grader, variants in sorted(settings.items()):
        if len(variants) > 1:
            warnings.append(f"{len(variants)} reports of grader {grader!r} were made with different settings "
                            f"({' | '.join(sorted(variants))}): their rows are not the same grader")
    rows = []
    for report in reports:
        for c in report["categories"]:
            positive = c["kind"] == "positive"
            judged = c["probes"] - c.get("errored", 0)
            wrong = c["false_fail"] if positive else c["false_pass"]
            lower, upper = rate_interval(wrong, judged)
            rows.append({"grader": report["grader"], "pack": report["pack_digest"][:12], "kind": c["kind"],
                         "category": c["category"], "controls": c["probes"], "false_fail": c["false_fail"],
                         "false_pass": c["false_pass"], "rate": wrong / judged if judged else None,
                         "interval": None if lower is None else f"[{lower:.3f}, {upper:.3f}]",
                         "errored": c.get("errored", 0), "tasks": " ".join(c.get("tasks") or []),
                         "failing": " ".join(c["failing"])})
    return rows, warnings


AUDIT_COLUMNS = ["grader", "pack", "kind", "category", "controls", "false_fail", "false_pass", "rate", "interval",
                 "errored", "failing"]
