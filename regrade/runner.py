"""Rescoring a whole run: a pool of workers, a results cache, and nothing lost.

- Each worker process (:mod:`regrade.case_workers`) opens its engines once (a LibreOffice
  per worker) and rescores cases; every engine still runs each workbook under its own time
  and memory limit (:mod:`regrade.engines.isolation`), so a crash or a hang makes that case
  ``unevaluable`` and the run goes on.
- A case's grading is cached under the content hash of what decides it: the output's
  and the golden's bytes, the answer position and sheet, the policy, the shallow and
  full engines with their versions, and regrade's version. A second run, or a run
  restarted after being killed, takes every finished case from the cache.
- Records are appended to a hidden ``.partial`` file as cases finish; the results
  file itself is written once, complete and in case order (see :mod:`regrade.results`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from regrade.case_workers import WorkerJob, grade_in_workers
from regrade.engines.base import DEFAULT_BRIDGE_WORK, Engine
from regrade.engines.registry import open_engine
from regrade.grading.policies import get_policy
from regrade.limits import DeadlineExceeded, deadline
from regrade.provenance import git_revision, provenance, regrade_version, sha256_file
from regrade.grading.rescore import CaseResult, EnginesStarting, rescore_case
from regrade.results import case_fields, grading_fields, write_jsonl
from regrade.runs.cases import Case
from regrade.grading.verdicts import UNEVALUABLE

CACHE_FORMAT = 1
SHALLOW_ENGINES = ("cached", "gnumeric", "libreoffice")  # how a value-only grader may have read the values
INTERNAL_ERROR = "internal-error"


@dataclass(frozen=True)
class RescoreSettings:
    """Everything besides the files that decides a case's grading; part of the cache key."""

    policy: str
    shallow: str
    engines: tuple[str, ...]
    timeout_s: float
    bridge_work: int = DEFAULT_BRIDGE_WORK
    quorum: int = 1  # engines that must compute a graded cell (regrade.grading.consensus)


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/regrade`` (``~/.cache/regrade``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "regrade"


class ResultCache:
    """Gradings by content hash, one small JSON file each, written atomically."""

    def __init__(self, directory: Path):
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, grading: dict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp") as handle:
            json.dump(grading, handle, ensure_ascii=False, default=str)
        os.replace(handle.name, path)


def cache_key(case: Case, settings: RescoreSettings, versions: dict[str, str]) -> str:
    """The content hash of everything that decides a case's grading (``versions``: the
    engines' and regrade's own, see :func:`code_versions`)."""
    content = {
        "format": CACHE_FORMAT,
        "output": sha256_file(case.output_path),  # None when missing: the grading says so, and is cached as such
        "golden": sha256_file(case.answer_path),
        "task_id": case.task_id,  # a grading's message may name its task
        "answer_position": case.answer_position,
        "answer_sheet": case.answer_sheet,
        "settings": asdict(settings),
        "versions": versions,
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def code_versions(settings: RescoreSettings) -> dict[str, str]:
    """regrade's version and git revision (a code change is a new grader) and each engine's version."""
    return {"regrade": regrade_version(), "git": git_revision() or "", **engine_versions(settings)}


def engine_versions(settings: RescoreSettings) -> dict[str, str]:
    """Each engine of the run (the shallow one first) and its version."""
    return {name: open_engine(name).version() for name in (settings.shallow, *settings.engines)}


def rescore_run(
    cases: list[Case],
    settings: RescoreSettings,
    workers: int = 1,
    cache: ResultCache | None = None,
    on_record: Callable[[int, dict, bool], None] | None = None,
    partial: Path | None = None,
    executor: str = "local",
    scheduler: str | None = None,
) -> list[dict]:
    """Every case's result record, in case order.

    Cases whose output and golden are byte-identical to an earlier case's, with the same
    cells, are graded once: the later ones reuse the grading (a second condition or trial that
    wrote the same file costs nothing). ``on_record(index, record, cached)`` is called as each
    case finishes (``cached``: taken from the cache or from such a case); ``partial``, when
    given, gets each record appended as it finishes. ``executor`` "local" grades in this
    process (``workers`` 1) or a pool of ``workers`` processes; "dask" on a Dask cluster
    (:mod:`regrade.cluster`): a LocalCluster of ``workers`` processes, or the one at ``scheduler``.
    """
    versions = code_versions(settings)
    records: list[dict | None] = [None] * len(cases)
    keys = [cache_key(case, settings, versions) if case.output_path.is_file() else ""
            for case in cases]  # a missing output is graded afresh: its message names its path
    same_as: dict[int, list[int]] = {}  # a case graded now -> the later cases with the same key, which reuse it
    sink = partial.open("a", encoding="utf-8") if partial is not None else None

    def record_case(index: int, grading: dict, cached: bool) -> None:
        record = {**case_fields(cases[index]), **grading}
        records[index] = record
        if sink is not None:
            sink.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            sink.flush()
        if on_record is not None:
            on_record(index, record, cached)

    def finish(index: int, grading: dict, cached: bool) -> None:
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
            from regrade.cluster import grade_on_dask

            grade_on_dask(cases, longest_first(cases, todo), settings, workers, finish, scheduler)
        elif todo and (workers <= 1 or len(todo) == 1):
            _open_worker_engines(settings)
            try:
                later = []
                for index in todo:  # the cases that need no engine first, while the engines start
                    if (grading := _grade_or_later(cases[index])) is None:
                        later.append(index)
                    else:
                        finish(index, grading, False)
                for index in later:
                    finish(index, _grade(cases[index]), False)
            finally:
                _close_worker_engines()
        elif todo:
            preload_engines(settings)  # once here: the case workers, and the engines' workers they fork, inherit it
            died_twice = grade_in_workers(cases, longest_first(cases, todo), workers, rescoring_job(settings),
                                          lambda index, grading: finish(index, grading, False), same_golden)
            for index in died_twice:
                finish(index, crashed_grading(cases[index], "a worker process died twice while grading this case"), False)
    finally:
        if sink is not None:
            sink.close()
    return [r for r in records if r is not None]


def rescore_to_file(cases: list[Case], settings: RescoreSettings, output: Path, workers: int = 1,
                    cache: ResultCache | None = None, on_record: Callable[[int, dict, bool], None] | None = None,
                    command: dict | None = None, described_by: Sequence[Path] = (), executor: str = "local",
                    scheduler: str | None = None, left_out: dict[str, list[str]] | None = None) -> tuple[dict, list[dict]]:
    """Rescore and write the results file, provenance first (:mod:`regrade.results`); return both.

    Records go to a hidden ``.partial`` file beside ``output`` as they finish; ``output`` itself
    is written once, complete. ``command`` and ``described_by`` (dataset.json or the manifest)
    go into the provenance record, and ``left_out``: the dataset's tasks not graded, by why
    (:class:`regrade.runs.load.LeftOut`)."""
    partial = output.parent / f".{output.name}.partial"
    output.parent.mkdir(parents=True, exist_ok=True)
    partial.unlink(missing_ok=True)
    records = rescore_run(cases, settings, workers, cache, on_record, partial, executor, scheduler)
    inputs = [*described_by, *(p for c in cases for p in (c.output_path, c.answer_path))]
    record = provenance(
        {**(command or {}), "policy": settings.policy, "shallow": settings.shallow, "full": list(settings.engines),
         "timeout_s": settings.timeout_s, "bridge_work": settings.bridge_work, "quorum": settings.quorum,
         "workers": workers, "executor": executor, "scheduler": scheduler,
         "cache": cache is not None},
        engine_versions(settings),
        inputs,
    )
    record["left_out"] = left_out or {}
    write_jsonl(output, [record, *records])
    partial.unlink(missing_ok=True)
    return record, records


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


def crashed_grading(case: Case, message: str) -> dict:
    """The grading of a case whose worker died each time it was tried."""
    return grading_fields(CaseResult(case, None, None, UNEVALUABLE, ["crashed"], message))


_WORKER: dict = {}


def _open_worker_engines(settings: RescoreSettings) -> None:
    """Each worker opens its engines once; every workbook still runs under their limits."""
    _WORKER.clear()  # a forked worker's copies of the parent's engines are the parent's to close
    _WORKER["settings"] = settings
    _WORKER["policy"] = get_policy(settings.policy)
    _WORKER["shallow"] = open_engine(settings.shallow, settings.timeout_s, as_grader=True, bridge_work=settings.bridge_work)
    _WORKER["fulls"] = [open_engine(name, settings.timeout_s, bridge_work=settings.bridge_work) for name in settings.engines]
    for engine in [_WORKER["shallow"], *_WORKER["fulls"]]:  # each in a process of its own: they start together
        engine.start_in_background()


def _close_worker_engines() -> None:
    engines: list[Engine] = [_WORKER["shallow"], *_WORKER["fulls"]] if "shallow" in _WORKER else []
    for engine in engines:
        engine.close()
    _WORKER.clear()


def preload_engines(settings: RescoreSettings) -> None:
    """Each engine's preload (:meth:`regrade.engines.base.Engine.preload`), in this process."""
    for name in (settings.shallow, *settings.engines):
        open_engine(name, settings.timeout_s).preload()


def rescoring_job(settings: RescoreSettings) -> WorkerJob:
    """What a case worker does for a rescore (:mod:`regrade.case_workers`): open this run's
    engines once, grade each case sent under its limit, close the engines when it leaves."""
    return WorkerJob(functools.partial(_open_worker_engines, settings), _grade, _close_worker_engines, _grade_or_later)


def case_limit_s(settings: RescoreSettings) -> float:
    """The limit of one case as a whole, in CPU seconds of the process grading it (with the
    wall-clock backstop of :mod:`regrade.cpu_time`): the limit of each engine that reads the
    output (the value-only one and every full one), and one more each for regrade's own
    reading of the golden and of the output outside the engines."""
    return settings.timeout_s * (len(settings.engines) + 3)


def rescore_case_grading(case: Case, defer: bool = False) -> dict | None:
    """One case's grading with this worker's engines; a fault of regrade's own on this case
    costs this case only (``internal-error``, never cached) and the run goes on. Everything
    done for the case runs under its limit (:func:`case_limit_s`). ``defer``: None where the
    case needs the full engines and they are still starting (grade it later: the cases that
    need none are graded, and kept, meanwhile)."""
    settings: RescoreSettings = _WORKER["settings"]
    try:
        with deadline(case_limit_s(settings)):
            result = rescore_case(case, _WORKER["policy"], _WORKER["shallow"], _WORKER["fulls"],
                                  _WORKER["settings"].quorum, defer)
    except EnginesStarting:
        return None
    except DeadlineExceeded as exc:
        _close_worker_engines()  # a worker may still be busy with this case: start afresh
        _open_worker_engines(settings)
        result = CaseResult(case, None, None, UNEVALUABLE, ["timeout"], str(exc))
    except Exception as exc:
        result = CaseResult(case, None, None, UNEVALUABLE, [INTERNAL_ERROR],
                            f"regrade failed on this case ({type(exc).__name__}: {exc}); please report it")
    return grading_fields(result)


def _grade(case: Case) -> dict:
    grading = rescore_case_grading(case)
    assert grading is not None  # not deferred: it waits for the engines
    return grading


def _grade_or_later(case: Case) -> dict | None:
    return rescore_case_grading(case, defer=True)
