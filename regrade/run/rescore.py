"""Rescoring a whole run: a pool of workers, a results cache, and nothing lost.

- Each worker process (:mod:`regrade.run.pool`) opens its engines once (a LibreOffice
  per worker) and rescores cases; every engine still runs each workbook under its own time
  and memory limit (:mod:`regrade.engines.isolation`), so a crash or a hang makes that case
  ``unevaluable`` and the run goes on.
- A case's grading is cached under the content hash of what decides it: the output's
  and the golden's bytes, the answer position and sheet, the policy, the shallow and
  full engines with their versions, and regrade's version. A second run, or a run
  restarted after being killed, takes every finished case from the cache.
- Records are appended to a hidden ``.partial`` file as cases finish; the results
  file itself is written once, complete and in case order (see :mod:`regrade.results.files`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from regrade.results.files import case_fields, write_jsonl
from regrade.results.provenance import provenance
from regrade.results.records import CaseRecord
from regrade.run.cache import ResultCache, cache_key, code_versions, engine_versions
from regrade.run.job import (
    ENGINE_WORK, GOLDEN_READING, INTERNAL_ERROR, close_worker_engines, crashed_grading, grade, grade_or_later,
    open_worker_engines, preload_engines, rescoring_job,
)
from regrade.run.pool import WarmPool, grade_in_workers
from regrade.run.settings import RescoreSettings
from regrade.runs.cases import Case


def rescore_run(
    cases: list[Case],
    settings: RescoreSettings,
    workers: int = 1,
    cache: ResultCache | None = None,
    on_record: Callable[[int, CaseRecord, bool], None] | None = None,
    partial: Path | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    warm: WarmPool | None = None,
    work: EngineWork | None = None,
) -> list[CaseRecord]:
    """Every case's result record, in case order.

    Cases whose output and golden are byte-identical to an earlier case's, with the same
    cells, are graded once: the later ones reuse the grading (a second condition or trial that
    wrote the same file costs nothing). ``on_record(index, record, cached)`` is called as each
    case finishes (``cached``: taken from the cache or from such a case); ``partial``, when
    given, gets each record appended as it finishes. ``executor`` "local" grades in this
    process (``workers`` 1) or a pool of ``workers`` processes; "dask" on a Dask cluster
    (:mod:`regrade.run.dask_cluster`): a LocalCluster of ``workers`` processes, or the one at ``scheduler``.
    ``warm``: a pool whose case workers stay open between runs (``regrade serve``), for ``workers`` > 1.
    ``work``, where given, adds up the engines' CPU the cases graded now cost (:class:`EngineWork`).
    """
    versions = code_versions(settings)
    records: list[CaseRecord | None] = [None] * len(cases)
    keys = [cache_key(case, settings, versions) if case.output_path.is_file() else ""
            for case in cases]  # a missing output is graded afresh: its message names its path
    same_as: dict[int, list[int]] = {}  # a case graded now -> the later cases with the same key, which reuse it
    sink = partial.open("a", encoding="utf-8") if partial is not None else None

    def record_case(index: int, grading: dict, cached: bool) -> None:
        fields = {**case_fields(cases[index]), **grading}
        if sink is not None:
            sink.write(json.dumps(fields, ensure_ascii=False, default=str) + "\n")
            sink.flush()
        record = records[index] = CaseRecord.model_validate(fields)
        if on_record is not None:
            on_record(index, record, cached)

    def finish(index: int, grading: dict, cached: bool) -> None:
        spent = grading.pop(ENGINE_WORK, None)  # the engines' CPU for this case: the run's, never the record's
        if work is not None and spent:
            work.add(spent)
        if cache is not None and keys[index] and not cached and INTERNAL_ERROR not in grading["reasons"]:
            cache.put(keys[index], grading)
        record_case(index, grading, cached)
        for copy in same_as.pop(index, []):  # byte-identical output and golden, same cells and settings
            record_case(copy, grading, True)

    try:
        todo = []
        first_with: dict[str, int] = {}
        for index in range(len(cases)):
            hit = cache.get(keys[index]) if cache is not None and keys[index] else None
            if hit is not None:
                finish(index, hit, True)
            elif keys[index] in first_with:
                same_as.setdefault(first_with[keys[index]], []).append(index)
            else:
                if keys[index]:
                    first_with[keys[index]] = index
                todo.append(index)
        if todo and executor == "dask":
            from regrade.run.dask_cluster import grade_on_dask  # imports Dask only when asked for

            grade_on_dask(cases, longest_first(cases, todo), settings, workers, finish, scheduler)
        elif todo and (workers <= 1 or len(todo) == 1):
            open_worker_engines(settings)
            try:
                later = []
                for index in todo:  # the cases that need no engine first, while the engines start
                    if (grading := grade_or_later(cases[index])) is None:
                        later.append(index)
                    else:
                        finish(index, grading, False)
                for index in later:
                    finish(index, grade(cases[index]), False)
            finally:
                close_worker_engines()
        elif todo:
            if warm is None:
                preloaded = preload_engines(settings)  # once here: the case workers, and their engines' workers, inherit it
                if work is not None:
                    work.add(preloaded)  # a start of the engines, made once for all workers
            died_twice = grade_in_workers(cases, longest_first(cases, todo), workers, rescoring_job(settings),
                                          lambda index, grading: finish(index, grading, False), same_golden,
                                          warm=warm, warm_key=(settings, workers))
            for index in died_twice:
                finish(index, crashed_grading(cases[index], "a worker process died twice while grading this case"), False)
    finally:
        if sink is not None:
            sink.close()
    return [r for r in records if r is not None]


@dataclass
class EngineWork:
    """The engines' own CPU a run cost, by engine: on workbooks and starting (in the case
    workers, and their preload, once, in the process that starts them); the case workers'
    reading of the goldens' values; and the run's wall time. ``floor_s`` is what no run on
    ``workers`` workers can go below: that CPU (the engines' work, with the value-only reading
    of the outputs among it, and the goldens' reading: what any grader of these files needs)
    divided among them. regrade's own analysis and grading come on top."""

    cpu_s: dict[str, float] = field(default_factory=dict)
    start_cpu_s: dict[str, float] = field(default_factory=dict)
    shared: dict[str, int] = field(default_factory=dict)  # evaluations answered from shared work, by engine
    golden_reading_cpu_s: float = 0.0  # the case workers' reading of goldens' values, which any grader needs
    wall_s: float | None = None
    workers: int = 1

    def add(self, spent: dict[str, dict[str, float]]) -> None:
        for name, figures in spent.items():
            if name == GOLDEN_READING:
                self.golden_reading_cpu_s += figures.get("cpu_s", 0.0)
                continue
            self.cpu_s[name] = self.cpu_s.get(name, 0.0) + figures.get("cpu_s", 0.0)
            self.start_cpu_s[name] = self.start_cpu_s.get(name, 0.0) + figures.get("start_cpu_s", 0.0)
            if figures.get("shared"):
                self.shared[name] = self.shared.get(name, 0) + round(figures["shared"])

    @property
    def floor_s(self) -> float:
        spent = sum(self.cpu_s.values()) + sum(self.start_cpu_s.values()) + self.golden_reading_cpu_s
        return spent / max(self.workers, 1)

    def as_json(self) -> dict:
        return {"engine_cpu_s": {k: round(v, 3) for k, v in sorted(self.cpu_s.items())},
                "engine_start_cpu_s": {k: round(v, 3) for k, v in sorted(self.start_cpu_s.items())},
                "golden_reading_cpu_s": round(self.golden_reading_cpu_s, 3),
                "shared_evaluations": dict(sorted(self.shared.items())),
                "workers": self.workers, "floor_s": round(self.floor_s, 3),
                "wall_s": None if self.wall_s is None else round(self.wall_s, 3),
                "wall_over_floor": round(self.wall_s / self.floor_s, 2) if self.wall_s and self.floor_s else None}


def rescore_to_file(cases: list[Case], settings: RescoreSettings, output: Path, workers: int = 1,
                    cache: ResultCache | None = None, on_record: Callable[[int, CaseRecord, bool], None] | None = None,
                    command: dict | None = None, described_by: Sequence[Path] = (), executor: str = "local",
                    scheduler: str | None = None, left_out: dict[str, list[str]] | None = None,
                    warm: WarmPool | None = None) -> tuple[dict, list[CaseRecord]]:
    """Rescore and write the results file, provenance first (:mod:`regrade.results.files`); return both.

    Records go to a hidden ``.partial`` file beside ``output`` as they finish; ``output`` itself
    is written once, complete. ``command`` and ``described_by`` (dataset.json or the manifest)
    go into the provenance record, and ``left_out``: the dataset's tasks not graded, by why
    (:class:`regrade.runs.load.LeftOut`)."""
    partial = output.parent / f".{output.name}.partial"
    output.parent.mkdir(parents=True, exist_ok=True)
    partial.unlink(missing_ok=True)
    work = EngineWork(workers=workers)
    started = time.monotonic()
    records = rescore_run(cases, settings, workers, cache, on_record, partial, executor, scheduler, warm, work)
    work.wall_s = time.monotonic() - started
    record = run_provenance(settings, [*described_by, *(p for c in cases for p in (c.output_path, c.answer_path))],
                            workers, cache is not None, command, executor, scheduler, left_out)
    record["engine_work"] = work.as_json()  # the floor of this run, beside its wall time
    write_jsonl(output, [record, *(r.as_json() for r in records)])
    partial.unlink(missing_ok=True)
    return record, records


def run_provenance(settings: RescoreSettings, inputs: Iterable[Path], workers: int = 1, cached: bool = True,
                   command: dict | None = None, executor: str = "local", scheduler: str | None = None,
                   left_out: dict[str, list[str]] | None = None) -> dict:
    """The provenance record of a rescore: the command, the settings, the engines' versions and
    the sha256 of every input file (:mod:`regrade.results.provenance`)."""
    record = provenance(
        {**(command or {}), "policy": settings.policy, "shallow": settings.shallow, "full": list(settings.engines),
         "timeout_s": settings.timeout_s, "bridge_work": settings.bridge_work, "quorum": settings.quorum,
         "workers": workers, "executor": executor, "scheduler": scheduler, "cache": cached},
        engine_versions(settings),
        inputs,
    )
    record["left_out"] = left_out or {}
    return record


def longest_first(cases: list[Case], todo: Iterable[int]) -> list[int]:
    """The cases to grade, the likely longest first (by the bytes of output and golden), so
    that the workers finish together instead of one grading a large workbook at the end; the
    cases of one golden next to each other (ordered by their largest), so that the worker that
    reads a golden can grade its other cases too (:func:`same_golden`)."""
    def size(index: int) -> int:
        total = 0
        for path in (cases[index].output_path, cases[index].answer_path):
            try:
                total += path.stat().st_size
            except OSError:
                pass
        return total
    sizes = {index: size(index) for index in todo}
    largest: dict[Path, int] = {}
    for index, bytes_ in sizes.items():
        golden = same_golden(cases[index])
        largest[golden] = max(largest.get(golden, 0), bytes_)
    return sorted(sizes, key=lambda index: (-largest[same_golden(cases[index])], str(same_golden(cases[index])),
                                            -sizes[index], index))


def same_golden(case: Case) -> Path:
    """What a case worker keeps between cases: the golden it read (:func:`regrade.grading.grade.load_golden`)."""
    return case.answer_path
