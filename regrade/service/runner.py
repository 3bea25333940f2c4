"""The job runner of ``regrade serve``: one thread that takes queued jobs in order and runs each
through :mod:`regrade.api`, as the command line would, keeping its engines warm between jobs.
Kinds: ``rescore`` (``api.rescore``), ``slice`` (a run over a refusal-slice pack,
``api.score_slice``) and ``audit-grader`` (a built-in grader on a sealed control pack, or on
controls generated from a dataset first, ``api.audit_grader``; its result is the audit as JSON,
with no report).

A rescore job is ``api.rescore`` over the paths its request names, the results file written to
``DATA/results/<job>.jsonl`` (its report to ``DATA/reports/<job>.html`` when first asked for); progress (cases done of
the run's total) is stored as each case is graded; a cancelled job stops after the case being
graded. Gradings go to the results cache under ``DATA/cache``, so a job the server was stopped
in the middle of is queued again at the next start and resumes from there; a job is done only
when its results file holds every case of its run.

With one case worker (``--workers 1``, the default) the engines stay open in this process from
one job to the next (:func:`regrade.run.job.keep_engines_warm`); with more, the case workers
and their engines stay open in a :class:`regrade.run.pool.WarmPool` between rescores with the
same settings: the start-up a command-line run pays is paid once per server. (A refusal-slice
job and an audit start their workers' engines per job; so does the Dask executor.) Every workbook still runs under its limits in the engines' isolated
workers, so no verdict depends on whether the engines were warm.
"""

from __future__ import annotations

import json
import shutil
import threading
import traceback
from pathlib import Path
from typing import Any, Literal

from regrade import api
from regrade.audit.controls import PACK, load_pack, select_controls
from regrade.run.job import keep_engines_warm
from regrade.run.pool import WarmPool
from regrade.runs.load import LoadedRun
from regrade.service.store import Job, Store


def report_path(data: Path, job_id: str) -> Path:
    return data / "reports" / f"{job_id}.html"


def job_report(job: Job) -> Path:
    """The job's HTML report, made the first time it is asked for (a results file nobody opens
    costs no report): against the request's baseline, else ``none``, else the first condition.
    A refusal slice's shows its exploratory conditions too, marked."""
    assert job.results is not None and job.report is not None
    report = Path(job.report)
    if not report.is_file():
        report.parent.mkdir(parents=True, exist_ok=True)
        conditions = sorted(job.request.get("conditions") or {})
        baseline = job.request.get("baseline") or ("none" if "none" in conditions else conditions[0])
        api.report(Path(job.results), report, baseline=baseline, title=f"regrade job {job.id}",
                   exploratory=job.kind == "slice")
    return report


class JobCancelled(Exception):
    """Raised between cases when the job's cancel was asked."""


class JobProgress:
    """A job's progress as its cases are graded: ``done`` of ``total`` stored as each finishes
    (``record`` is an ``on_record`` hook, ``control`` an ``on_control`` one), how many came from
    the results cache, and a cancel honoured between cases (:class:`JobCancelled`)."""

    def __init__(self, store: Store, job_id: str, total: int = 0):
        self.store, self.job_id = store, job_id
        self.done = self.cached = 0
        self.start(total)

    def start(self, total: int) -> None:
        """The job's total once known (a run loaded, a pack selected)."""
        self.total = total
        self.store.progress(self.job_id, 0, total)

    def record(self, index: int, record: object, cached: bool) -> None:
        self.done += 1
        self.cached += cached
        self.store.progress(self.job_id, self.done, max(self.total, self.done))
        if self.store.cancel_requested(self.job_id):
            raise JobCancelled()

    def control(self, control: object) -> None:
        self.record(self.done, control, False)


class Runner:
    def __init__(self, store: Store, data: Path, workers: int = 1, executor: Literal["local", "dask"] = "local",
                 scheduler: str | None = None):
        self.store, self.data, self.workers = store, data, workers
        self.executor, self.scheduler = executor, scheduler
        self.pool = WarmPool()  # with more than one worker: case workers kept between jobs
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="regrade-jobs", daemon=True)

    def start(self) -> None:
        for job_id in self.store.requeue_unfinished():
            self.store.log(job_id, "resuming")
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        keep_engines_warm(self.workers == 1 and self.executor == "local")
        try:
            while not self._stop.is_set():
                job = self.store.claim_next()
                if job is None:
                    self._wake.wait(timeout=1.0)
                    self._wake.clear()
                    continue
                self._run(job)
        finally:
            keep_engines_warm(False)
            self.pool.close()

    def _run(self, job: Job) -> None:
        kinds = {"rescore": self.rescore, "slice": self.score_slice, "audit-grader": self.audit_grader}
        try:
            if job.kind not in kinds:
                raise ValueError(f"unknown job kind {job.kind!r}")
            results, report = kinds[job.kind](job)
            self.store.finish(job.id, "done", results=results, report=report)
        except JobCancelled:
            self.store.finish(job.id, "cancelled", "cancelled while running; the cases graded are in the results cache")
        except Exception as exc:  # a job's failure is the job's, never the server's
            self.store.log(job.id, traceback.format_exc(limit=3).strip().splitlines()[-1])
            self.store.finish(job.id, "failed", f"{type(exc).__name__}: {exc}")

    def _files(self, job: Job, suffix: str = ".jsonl") -> tuple[Path, Path]:
        """Where the job's results file goes, and its report (written when first asked for:
        :func:`job_report`)."""
        results = self.data / "results" / f"{job.id}{suffix}"
        results.parent.mkdir(parents=True, exist_ok=True)
        return results, report_path(self.data, job.id)

    def score_slice(self, job: Job) -> tuple[Path, Path | None]:
        """A run over a refusal-slice pack (``api.score_slice``): its results file and report."""
        request: dict[str, Any] = job.request
        results, report = self._files(job)
        scored = api.score_slice(request["pack"], request["conditions"], request.get("key"),
                                 request.get("expect_digest"), self.workers, request.get("engines"),
                                 self.data / "cache", output=results, on_record=JobProgress(self.store, job.id).record,
                                 command={"command": "serve", "job": job.id})
        for note in scored.notes:
            self.store.log(job.id, note)
        conditions = sorted({r.condition for r in scored.records})
        self.store.add_results(job.id, results, job.id, len(scored.records), conditions, scored.provenance)
        return results, report

    def audit_grader(self, job: Job) -> tuple[Path, None]:
        """A built-in grader against a sealed control pack (``api.audit_grader``): the audit as JSON."""
        request: dict[str, Any] = job.request
        results, _ = self._files(job, ".json")
        folder = Path(request["pack"]) if request.get("pack") else PACK
        if request.get("controls_from"):  # controls generated from a dataset's own tasks, checked and sealed first
            folder = self.data / "packs" / job.id
            shutil.rmtree(folder, ignore_errors=True)  # a job resumed after a stop makes its pack afresh
            generated = api.generate_controls(request["controls_from"], folder, request.get("controls_tasks"),
                                              workers=self.workers, cache_dir=self.data / "cache",
                                              executor=self.executor, scheduler=self.scheduler)
            self.store.log(job.id, f"generated {len(generated.kept)} controls, pack digest {generated.digest}")
        pack = load_pack(folder, request.get("expect_digest"))
        selected = select_controls(pack, tuple(request.get("tasks") or ()))
        audit = api.audit_grader(request["grader"], selected, workers=self.workers, executor=self.executor,
                                 scheduler=self.scheduler,
                                 on_control=JobProgress(self.store, job.id, len(selected.controls)).control)
        results.write_text(json.dumps(audit.as_json(), indent=2, default=str))
        self.store.log(job.id, f"{request['grader']}: " + json.dumps(audit.overall(), default=str))
        return results, None

    def rescore(self, job: Job) -> tuple[Path, Path]:
        request: dict[str, Any] = job.request
        results, report = self._files(job)
        progress = JobProgress(self.store, job.id)

        def loaded(run: LoadedRun) -> None:
            progress.start(len(run.cases))
            self.store.log(job.id, f"{progress.total} cases in {len(run.inventories)} conditions")

        made = api.rescore(request["dataset"], request["conditions"], engines=request.get("engines"),
                           workers=self.workers, output=results, cache=bool(request.get("cache", True)),
                           cache_dir=self.data / "cache",
                           allow_missing=bool(request.get("allow_missing")),
                           tasks_with_outputs=bool(request.get("tasks_with_outputs")),
                           stack=request.get("stack") or "default", executor=self.executor,
                           scheduler=self.scheduler, on_loaded=loaded, on_record=progress.record,
                           command={"command": "serve", "job": job.id}, warm=self.pool)
        if len(made.cases) != progress.total:
            raise RuntimeError(f"the results file holds {len(made.cases)} of the run's {progress.total} cases")
        conditions = sorted({r.condition for r in made.cases})
        self.store.add_results(job.id, results, job.id, len(made.cases), conditions,
                               made.provenance.model_dump() if made.provenance else None)
        self.store.log(job.id, f"{progress.cached} of {progress.total} cases from the results cache (or an "
                               "identical output graded in this run); " + str(made.summary.get("headline", "")))
        return results, report
