"""``regrade audit benchmark``: deterministic checks of a benchmark's data before anyone
publishes a number on it.

For a SpreadsheetBench-layout folder (``dataset.json``, ``spreadsheet/<id>/<n>_<id>_answer.xlsx``
and ``_input.xlsx``; the Verified naming ``_golden``/``_init`` too) every task and test case
is checked, and each problem is a :class:`Finding` with a stable id and a severity, one of
the kinds of :mod:`regrade.audit.findings` (listed in docs/audits.md).

With ``workers`` above one, tasks are audited in case workers (:mod:`regrade.run.pool`):
a worker that dies costs the task it held, which is tried again alone and reported
``task-audit-crashed`` if it ends that worker too; the other tasks go on.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from regrade.audit.findings import SEVERITIES, Finding, finding
from regrade.run.pool import WorkerJob, grade_in_workers
from regrade.values import CannotEvaluate
from regrade.engines.registry import open_engine
from regrade.workbook.screening import screen
from regrade.grading.policies import SpreadsheetBenchPolicy, TargetError
from regrade.grading.grade import GoldenError, load_golden
from regrade.grading.graders import make_grader
from regrade.runs.positions import PositionError, parse_answer_position
from regrade.results.provenance import regrade_version
from regrade.runs.cases import task_fields, golden_files, input_file, load_dataset

MOSTLY_EMPTY = 0.25
RECALC_ENGINES = ("gnumeric", "libreoffice")


@dataclass
class TaskAudit:
    task_id: str
    cases: int
    golden_fails: list[int] = field(default_factory=list)
    input_passes: list[int] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


@dataclass
class BenchmarkAudit:
    benchmark: str
    grader: str
    grader_settings: dict
    recalc: str | None
    regrade_version: str
    tasks: list[TaskAudit]

    def findings(self) -> list[Finding]:
        return [f for t in self.tasks for f in t.findings]

    def summary(self) -> dict[str, Any]:
        by_id = Counter(f.id for f in self.findings())
        return {
            "tasks": len(self.tasks),
            "cases": sum(t.cases for t in self.tasks),
            "golden_fails_itself": sum(len(t.golden_fails) for t in self.tasks),
            "inputs_passing": sum(len(t.input_passes) for t in self.tasks),
            "tasks_passing_unmodified": by_id["task-passes-unmodified"],
            "findings": dict(sorted(by_id.items())),
        }

    def as_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "grader": self.grader, "grader_settings": self.grader_settings,
                "recalc": self.recalc, "regrade_version": self.regrade_version, "summary": self.summary(),
                "findings": [asdict(f) for f in self.findings()]}

    def flatten(self) -> list[dict[str, Any]]:
        """One row per finding, for csv."""
        return [{"grader": self.grader, **asdict(f)} for f in self.findings()]

    def worst(self) -> str | None:
        levels = [SEVERITIES.index(f.severity) for f in self.findings()]
        return SEVERITIES[max(levels)] if levels else None


def audit_benchmark(folder: Path, grader: str = "spreadsheetbench-official", recalc: str | None = None,
                    workers: int | None = None, limit: int | None = None,
                    on_task: Callable[[TaskAudit], None] | None = None) -> BenchmarkAudit:
    """Audit every task of ``folder`` (the first ``limit`` in dataset.json order); ``on_task`` is
    called as each task's audit comes back, in dataset order."""
    if recalc is not None and recalc not in RECALC_ENGINES:
        raise ValueError(f"--recalc takes {' or '.join(RECALC_ENGINES)}, not {recalc!r}")
    identity = make_grader(grader)  # fails early on an unknown name
    records = load_dataset(folder)[:limit]
    for number, record in enumerate(records, start=1):  # an answer_position problem is a finding; no id is not a task
        if not isinstance(record, dict) or record.get("id") in (None, ""):
            task_fields(folder / "dataset.json", number, record)  # raises, naming the record
    workers = workers or os.cpu_count() or 1
    tasks = _audited(folder, records, grader, recalc, workers, on_task)
    counts = Counter(t.cases for t in tasks if t.cases)
    usual = counts.most_common(1)[0][0] if counts else 0
    for task in tasks:
        if task.cases and task.cases != usual:
            task.findings.append(finding("unusual-case-count", task.task_id, None,
                                         f"{task.cases} test cases; most tasks have {usual}"))
    return BenchmarkAudit(folder.name, identity.name, identity.settings(), recalc, regrade_version(), tasks)


def _audited(folder: Path, records: list[dict], grader: str, recalc: str | None, workers: int,
             on_task: Callable[[TaskAudit], None] | None) -> list[TaskAudit]:
    """Each record's audit, in dataset order; ``on_task`` called in that order as they come back."""
    start, stop = functools.partial(_open_auditors, grader, recalc), _close_auditors
    if workers <= 1 or len(records) <= 1:
        start()
        try:
            tasks = []
            for record in records:
                tasks.append(_audit_record(folder, record))
                if on_task is not None:
                    on_task(tasks[-1])
        finally:
            stop()
        return tasks
    found: dict[int, TaskAudit] = {}
    told = 0

    def finish(index: int, answer: dict) -> None:
        nonlocal told
        found[index] = answer["task"]
        while told in found:  # in dataset order
            if on_task is not None:
                on_task(found[told])
            told += 1

    job = WorkerJob(start, functools.partial(_audit_answer, folder), stop)
    for index in grade_in_workers(records, range(len(records)), workers, job, finish):
        finish(index, {"task": _crashed(records[index])})
    return [found[index] for index in range(len(records))]


_AUDITORS: dict[str, Any] = {}


def _open_auditors(grader: str, recalc: str | None) -> None:
    """The grader and the recalculating engine of this process (a case worker's, once)."""
    _AUDITORS.clear()  # a forked worker's copies of the parent's are the parent's to close
    _AUDITORS["grader"] = make_grader(grader)
    _AUDITORS["recalc"] = open_engine(recalc, as_grader=True) if recalc else None


def _close_auditors() -> None:
    if _AUDITORS.get("recalc") is not None:
        _AUDITORS["recalc"].close()
    _AUDITORS.clear()


def _audit_record(folder: Path, record: dict) -> TaskAudit:
    return audit_task(folder, record, _AUDITORS["grader"], _AUDITORS["recalc"])


def _audit_answer(folder: Path, record: dict) -> dict:
    return {"task": _audit_record(folder, record)}


def _crashed(record: dict) -> TaskAudit:
    task_id = str(record["id"])
    return TaskAudit(task_id, 0, findings=[finding("task-audit-crashed", task_id, None,
        "the audit of this task ended its worker process twice (out of memory, or a crash in a "
        "reader): its files were not checked")])


def audit_task(folder: Path, record: dict, grader: Any, recalc_engine: Any = None) -> TaskAudit:
    task_id = str(record["id"])
    position, answer_sheet = record.get("answer_position", "") or "", record.get("answer_sheet")
    goldens = golden_files(folder, task_id)
    task = TaskAudit(task_id, len(goldens))
    add = task.findings.append
    if not goldens:
        add(finding("golden-missing", task_id, None, f"no answer files in spreadsheet/{task_id}/"))
        return task
    add_position_findings(task, position, answer_sheet, goldens[min(goldens)])
    for number, golden_path in goldens.items():
        refused = screen(golden_path).failure
        if refused is not None:
            add(finding("golden-unreadable", task_id, number, f"{golden_path.name}: {refused.detail}"))
            continue
        if not grader.passes(golden_path, golden_path, position, answer_sheet):
            task.golden_fails.append(number)
            add(finding("golden-fails-itself", task_id, number,
                        f"{golden_path.name} graded against itself fails {grader.name}"))
        input_path = input_file(golden_path, task_id, number)
        if input_path is None:
            add(finding("input-missing", task_id, number, f"no input file beside {golden_path.name}"))
        elif grader.passes(input_path, golden_path, position, answer_sheet):
            task.input_passes.append(number)
            add(finding("input-passes", task_id, number,
                        f"the unmodified {input_path.name} passes {grader.name}"))
        add_golden_findings(task, number, golden_path, position, answer_sheet, recalc_engine)
    if task.input_passes and len(task.input_passes) == len(goldens):
        add(finding("task-passes-unmodified", task_id, None,
                    f"all {len(goldens)} unmodified inputs pass {grader.name}: a do-nothing agent scores this task"))
    return task


def add_position_findings(task: TaskAudit, position: str, answer_sheet: str | None, first_golden: Path) -> None:
    try:
        parsed = parse_answer_position(position)
    except PositionError as exc:
        task.findings.append(finding("position-malformed", task.task_id, None, str(exc)))
        return
    if parsed.repairs:
        task.findings.append(finding("position-repaired", task.task_id, None,
                                     f"{position!r} read after repairs: {'; '.join(parsed.repairs)}"))
    wanted = {name.strip().strip("'").casefold() for name in (answer_sheet or "").split(",") if name.strip()}
    if not wanted:
        return
    named = {b.sheet.strip().casefold() for b in parsed.boxes if b.sheet}
    if named and not named & wanted:
        task.findings.append(finding("position-ignores-answer-sheet", task.task_id, None,
                                     f"answer_sheet is {answer_sheet!r} but {position!r} names "
                                     f"{', '.join(sorted(repr(b.sheet) for b in parsed.boxes if b.sheet))}"))
    elif not named:
        try:
            first = load_golden(first_golden).sheet_names[0]
        except (GoldenError, IndexError):
            return
        if first.strip().casefold() not in wanted:
            task.findings.append(finding("position-ignores-answer-sheet", task.task_id, None,
                                         f"{position!r} names no sheet, so graders read the golden's first sheet "
                                         f"{first!r}; answer_sheet says {answer_sheet!r}"))


def add_golden_findings(task: TaskAudit, number: int, path: Path, position: str, answer_sheet: str | None,
                        recalc_engine: Any) -> None:
    add = task.findings.append
    try:
        golden = load_golden(path)
        targets = golden.targets(SpreadsheetBenchPolicy(), position, answer_sheet)
    except (GoldenError, TargetError):
        return  # the position or the file is reported above
    present = [t for t in targets if t.sheet in golden.sheet_names]
    formulas = [t for t in present if golden.is_formula(t)]
    uncached = [t for t in formulas if golden.value(t) is None]
    if uncached:
        add(finding("golden-uncached-formula", task.task_id, number,
                    f"{len(uncached)} of {len(formulas)} answer formulas have no cached value, e.g. {uncached[0]}"))
    volatile, _ = golden.unrepeatable(formulas)
    if volatile:
        calls = ", ".join(sorted(set().union(*(golden.volatile_calls(v) for v in volatile))))
        add(finding("golden-volatile", task.task_id, number,
                    f"{len(volatile)} answer cells depend on {calls}, e.g. {volatile[0]}"))
    filled = sum(1 for t in present if golden.value(t) not in (None, ""))
    if targets and filled / len(targets) < MOSTLY_EMPTY:
        add(finding("golden-mostly-empty", task.task_id, number,
                    f"{filled} of the {len(targets)} answer cells are filled ({filled / len(targets):.0%})"))
    if recalc_engine is not None and formulas:
        add_recalc_findings(task, number, path, golden, formulas, recalc_engine)


def add_recalc_findings(task: TaskAudit, number: int, path: Path, golden: Any, formulas: list, engine: Any) -> None:
    """Answer cells whose recalculated value is not the value Excel cached (an error such as
    ``#NAME?`` for a function the recalculation lacks, or a different number), so that a
    grader recalculating first fails the golden itself; named with the functions they call."""
    computed = engine.evaluate(path, formulas)
    if computed.failure is not None:
        task.findings.append(finding("recalc-unsupported", task.task_id, number,
                                     f"{engine.name} cannot recalculate {path.name}: {computed.failure.detail}"))
        return
    policy = SpreadsheetBenchPolicy()
    changed = []
    for ref in formulas:
        value = computed.cells.get(ref)
        if golden.value(ref) is None or (isinstance(value, CannotEvaluate) and value.reason == "external-link"):
            continue  # no cache to judge by; or a value from another workbook, which no recalculation has
        if isinstance(value, CannotEvaluate) or not policy.equal(golden.value(ref), value):
            changed.append(ref)
    if changed:
        functions = sorted(golden.functions_in_cone(changed))
        example = computed.cells.get(changed[0])
        shown = str(example) if isinstance(example, CannotEvaluate) else repr(example)
        task.findings.append(finding("recalc-unsupported", task.task_id, number,
            f"{engine.name} gives {len(changed)} answer cells a value other than Excel's (e.g. {changed[0]}: "
            f"{shown} for {golden.value(changed[0])!r}); their formulas call {', '.join(functions) or 'no function'}"))
