"""The work of one case worker in a rescore: open the run's engines once, grade each case under
its limit, close them when the worker leaves (:func:`rescoring_job`, run by :mod:`regrade.run.pool`
and :mod:`regrade.run.dask_cluster`, or in the calling process for one worker).

Each engine still runs each workbook in its own isolated worker under that workbook's time and
memory limit (:mod:`regrade.engines.isolation`); a fault of regrade's own on a case costs that case
only (``internal-error``, never cached).
"""

from __future__ import annotations

import functools
import time

from regrade.engines.base import Engine
from regrade.engines.preparation import share_preparations, stop_sharing
from regrade.engines.registry import open_engine
from regrade.engines.shared_work import SharingEngine
from regrade.grading.grade import golden_reading_cpu_s
from regrade.grading.policies import get_policy
from regrade.grading.rescore import CaseResult, EnginesStarting, rescore_case
from regrade.grading.verdicts import UNEVALUABLE
from regrade.processes.limits import DeadlineExceeded, deadline
from regrade.results.files import grading_fields
from regrade.run.pool import WorkerJob
from regrade.run.settings import RescoreSettings, case_limit_s
from regrade.runs.cases import Case

INTERNAL_ERROR = "internal-error"


def crashed_grading(case: Case, message: str) -> dict:
    """The grading of a case whose worker died each time it was tried."""
    return grading_fields(CaseResult(case, None, None, UNEVALUABLE, ["crashed"], message))


_WORKER: dict = {}
_WARM = {"keep": False}  # a long-lived process (regrade serve) keeps its engines open between runs


def keep_engines_warm(keep: bool = True) -> None:
    """Keep this process's engines open when a run ends, for the next run with the same
    settings (:mod:`regrade.service`); ``False`` closes them now. Every workbook still runs
    under its limits in the engines' isolated workers, so no verdict depends on it."""
    _WARM["keep"] = keep
    if not keep:
        close_worker_engines(force=True)


def open_worker_engines(settings: RescoreSettings) -> None:
    """Each worker opens its engines once; every workbook still runs under their limits."""
    if _WARM["keep"] and _WORKER.get("settings") == settings and "shallow" in _WORKER:
        return  # open and warm from an earlier run with the same settings
    if _WARM["keep"]:
        close_worker_engines(force=True)  # another run's settings
    _WORKER.clear()  # a forked worker's copies of the parent's engines are the parent's to close
    share_preparations()  # before the engines' workers fork: what one engine prepares, the others take
    _WORKER["settings"] = settings
    _WORKER["policy"] = get_policy(settings.policy)
    _WORKER["shallow"] = open_engine(settings.shallow, settings.timeout_s, as_grader=True, bridge_work=settings.bridge_work)
    _WORKER["fulls"] = [SharingEngine(open_engine(name, settings.timeout_s, bridge_work=settings.bridge_work))
                        for name in settings.engines]  # evaluations that differ only in formula caches done once
    for engine in [_WORKER["shallow"], *_WORKER["fulls"]]:  # each in a process of its own: they start together
        engine.start_in_background()


def close_worker_engines(force: bool = False) -> None:
    """Close this worker's engines (kept open with :func:`keep_engines_warm`, unless ``force``)."""
    if _WARM["keep"] and not force:
        return
    engines: list[Engine] = [_WORKER["shallow"], *_WORKER["fulls"]] if "shallow" in _WORKER else []
    for engine in engines:
        engine.close()
    _WORKER.clear()
    stop_sharing()


GOLDEN_READING = "golden-reading"  # in engine_work(): regrade's own reading of goldens, which any grader needs
ENGINE_WORK = "_engine_work"  # a grading's private field: the engines' CPU for the case, taken out before it is kept


def engine_work() -> dict[str, dict[str, float]]:
    """This worker's engines' CPU so far, by engine: on workbooks (``cpu_s``) and starting
    (``start_cpu_s``); the evaluations answered from shared work (``shared``,
    :mod:`regrade.engines.shared_work`); and, under :data:`GOLDEN_READING`, the CPU this
    process spent reading goldens' values."""
    engines = [_WORKER["shallow"], *_WORKER["fulls"]] if "shallow" in _WORKER else []
    work = {e.name: {"cpu_s": getattr(e, "cpu_s", 0.0), "start_cpu_s": getattr(e, "start_cpu_s", 0.0),
                     "shared": float(getattr(e, "shared", 0))} for e in engines}
    return {**work, GOLDEN_READING: {"cpu_s": golden_reading_cpu_s()}}  # this process's reading of goldens


def _work_since(before: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    now = engine_work()
    return {name: {k: max(v - before.get(name, {}).get(k, 0.0), 0.0) for k, v in spent.items()}  # 0: engines restarted
            for name, spent in now.items()}


def preload_engines(settings: RescoreSettings) -> dict[str, dict[str, float]]:
    """Each engine's preload (:meth:`regrade.engines.base.Engine.preload`), in this process; the
    CPU each spent, as :func:`engine_work` gives an engine's start (``start_cpu_s``)."""
    spent = {}
    for name in (settings.shallow, *settings.engines):
        started = time.process_time()
        open_engine(name, settings.timeout_s).preload()
        spent[name] = {"start_cpu_s": time.process_time() - started}
    return spent


def rescoring_job(settings: RescoreSettings) -> WorkerJob:
    """What a case worker does for a rescore (:mod:`regrade.run.pool`): open this run's
    engines once, grade each case sent under its limit, close the engines when it leaves."""
    return WorkerJob(functools.partial(open_worker_engines, settings), grade, close_worker_engines, grade_or_later)


def rescore_case_grading(case: Case, defer: bool = False) -> dict | None:
    """One case's grading with this worker's engines; a fault of regrade's own on this case
    costs this case only (``internal-error``, never cached) and the run goes on. Everything
    done for the case runs under its limit (:func:`case_limit_s`). ``defer``: None where the
    case needs the full engines and they are still starting (grade it later: the cases that
    need none are graded, and kept, meanwhile)."""
    settings: RescoreSettings = _WORKER["settings"]
    before = engine_work()
    try:
        with deadline(case_limit_s(settings)):
            result = rescore_case(case, _WORKER["policy"], _WORKER["shallow"], _WORKER["fulls"],
                                  _WORKER["settings"].quorum, defer)
    except EnginesStarting:
        return None
    except DeadlineExceeded as exc:
        close_worker_engines(force=True)  # a worker may still be busy with this case: start afresh
        open_worker_engines(settings)
        result = CaseResult(case, None, None, UNEVALUABLE, ["timeout"], str(exc))
    except Exception as exc:
        result = CaseResult(case, None, None, UNEVALUABLE, [INTERNAL_ERROR],
                            f"regrade failed on this case ({type(exc).__name__}: {exc}); please report it")
    return {**grading_fields(result), ENGINE_WORK: _work_since(before)}


def grade(case: Case) -> dict:
    grading = rescore_case_grading(case)
    assert grading is not None  # not deferred: it waits for the engines
    return grading


def grade_or_later(case: Case) -> dict | None:
    return rescore_case_grading(case, defer=True)
