"""Grading a run's cases on a Dask cluster (``regrade rescore --executor dask``).

The client (the ``regrade`` process) does what it does for the local pool: it reads the
results cache, sends the cases still to grade, and writes every record, cache entry and
``.partial`` line as each case comes back, so results, cache and resume are the same as
locally. Each Dask worker process grades its cases one at a time through a case worker of
its own (:class:`regrade.run.pool.CaseWorker`), started by spawning (a Dask worker runs
threads, which a fork must not copy), that opens the engines once and runs every case exactly as a local pool
worker does: in its main thread under the case's limit, each workbook in the engines'
isolated workers under theirs (:func:`regrade.run.job.rescore_case_grading`). A case worker
that dies is replaced and its case tried once more; a Dask worker that dies has its cases
sent to another worker by the scheduler, and a case that kills
``distributed.scheduler.allowed-failures`` + 1 workers (3 + 1 by default) is recorded as
``crashed``, never dropped.

Without ``--scheduler``, a ``distributed.LocalCluster`` of ``--workers`` processes, one
thread each, on loopback. With one, an existing cluster; its workers must be started
non-daemonic, one thread each (``DASK_DISTRIBUTED__WORKER__DAEMON=False dask worker
ADDRESS --nthreads 1 --nworkers N``), with regrade and its engines installed, and must see
the outputs and goldens at the same paths (docs/scale.md).
"""

from __future__ import annotations

import multiprocessing
import tempfile
import threading
import uuid
from typing import Callable

from regrade.run.pool import CaseWorker, WorkerDied, stop_workers
from regrade.run.settings import RescoreSettings
from regrade.run.job import crashed_grading, rescoring_job
from regrade.runs.cases import Case, RunError

DASK_MISSING = "--executor dask needs Dask's distributed package: pip install 'regrade[dask]'"


def grade_on_dask(cases: list[Case], todo: list[int], settings: RescoreSettings, workers: int,
                  finish: Callable[[int, dict, bool], None], scheduler: str | None = None) -> None:
    """Grade ``todo`` (indices into ``cases``) on a Dask cluster, calling ``finish`` as each comes back."""
    try:
        import dask
        from distributed import Client, KilledWorker, LocalCluster, as_completed
    except ImportError as exc:
        raise RunError(DASK_MISSING) from exc
    with tempfile.TemporaryDirectory(prefix="regrade-dask-") as scratch, \
            dask.config.set({"distributed.worker.daemon": False,  # a case worker is a child of the Dask worker
                             "temporary-directory": scratch}):  # Dask's own scratch files, removed after
        cluster = None if scheduler else LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                       dashboard_address=None, host="127.0.0.1", local_directory=scratch)
        try:
            with Client(cluster if cluster is not None else scheduler) as client:
                _check_workers(client)
                client.register_plugin(case_workers_plugin(settings), name="regrade-case-workers")
                run = uuid.uuid4().hex[:12]  # task keys unique on a cluster that other runs share
                futures = {client.submit(grade_one, cases[i], settings, pure=False, key=f"regrade-{run}-case-{i}"): i
                           for i in todo}
                try:
                    for future in as_completed(futures):
                        index = futures[future]
                        try:
                            grading = future.result()
                        except KilledWorker:  # the case took down every worker it was tried on
                            grading = crashed_grading(cases[index], "the Dask workers grading this case died each time")
                        finish(index, grading, False)
                except KeyboardInterrupt:
                    client.cancel(list(futures))
                    raise
        finally:
            if cluster is not None:
                cluster.close()


def _check_workers(client) -> None:
    """Refuse a cluster without workers, or whose workers cannot start a case worker (daemonic)."""
    problems = client.run(_worker_problem)
    found = sorted({problem for problem in problems.values() if problem})
    if not client.scheduler_info().get("workers"):
        raise RunError("the Dask cluster has no workers")
    if found:
        raise RunError(f"the Dask workers cannot grade: {'; '.join(found)} (see docs/scale.md)")


def _worker_problem() -> str:
    if multiprocessing.current_process().daemon:
        return "they are daemonic processes, which may not start the engines' processes " \
               "(start them with DASK_DISTRIBUTED__WORKER__DAEMON=False)"
    return ""


def case_workers_plugin(settings: RescoreSettings):
    """A Dask worker plugin: each worker's case worker for the run's settings, opened when the
    plugin is registered and closed with the worker."""
    from distributed import WorkerPlugin

    class CaseWorkers(WorkerPlugin):
        name = "regrade-case-workers"

        def setup(self, worker) -> None:
            _case_worker(settings)

        def teardown(self, worker) -> None:
            close_case_worker()

    return CaseWorkers()


_LOCK = threading.Lock()  # one case at a time per worker process, whatever its thread count
_CURRENT: dict = {}


def grade_one(case: Case, settings: RescoreSettings) -> dict:
    """One case's grading on this Dask worker, by its case worker (opened here if the plugin has not)."""
    with _LOCK:
        for attempt in range(2):
            try:
                return _case_worker(settings).grade(case)
            except WorkerDied:  # a fresh one, then the case is its own verdict
                close_case_worker()
        return crashed_grading(case, "a case worker died twice while grading this case")


def _case_worker(settings: RescoreSettings) -> CaseWorker:
    if _CURRENT.get("settings") != settings:
        close_case_worker()
        _CURRENT["worker"] = CaseWorker(rescoring_job(settings), multiprocessing.get_context("spawn"))
        _CURRENT["settings"] = settings
    return _CURRENT["worker"]


def close_case_worker() -> None:
    worker = _CURRENT.pop("worker", None)
    _CURRENT.clear()
    if worker is not None:
        stop_workers([worker])
