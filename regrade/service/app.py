"""The HTTP face of ``regrade serve``: a JSON API under ``/api/`` (its OpenAPI document at
``/api/openapi.json``, checked into ``docs/openapi.json``) and server-side HTML pages that reuse
the report's page and style (no build step; they work with JavaScript off).

Every request that reads or writes jobs or results needs the server's bearer token: the header
``Authorization: Bearer TOKEN``, or for a browser the cookie that ``/login?token=TOKEN`` sets.
Every error is a JSON body ``{"error": {"id": ..., "message": ...}}`` with a stable id.
"""

from __future__ import annotations

import hashlib
import html
import json
from contextlib import asynccontextmanager
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, AsyncIterator, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from regrade import api
from regrade.grading.graders import GRADERS
from regrade.render.paper import paper_table
from regrade.render.rows import render
from regrade.results.files import ResultsError
from regrade.results.provenance import regrade_version
from regrade.results.records import Results
from regrade.run import SettingsError, rescore_settings
from regrade.service.files import ServiceError, UploadLimits, resolve, unpack_upload
from regrade.service.runner import Runner, job_report
from regrade.service.store import Job, Store

COOKIE = "regrade_token"


class RescoreRequest(BaseModel):
    """A rescore of a run given as paths under the server's roots (or ``upload:<id>[/sub]``)."""

    kind: Literal["rescore"] = "rescore"
    dataset: str = Field(description="A SpreadsheetBench-layout folder (dataset.json, spreadsheet/).")
    conditions: dict[str, str] = Field(description="Each condition's run: an outputs folder or a Harbor job.",
                                       min_length=1)
    engines: list[str] | None = Field(default=None, description="Full engines (default: the server's default).")
    baseline: str | None = Field(default=None, description="The report's baseline (default: none, else the first).")
    allow_missing: bool = False
    tasks_with_outputs: bool = False
    stack: str | None = None
    cache: bool = Field(default=True, description="Take finished gradings from the results cache (false: grade "
                        "every case afresh).")


class SliceRequest(BaseModel):
    """A run over a refusal-slice pack (``regrade rescore --pack``), paths as a rescore's."""

    kind: Literal["slice"]
    pack: str = Field(description="The sealed pack (regrade slice build).")
    key: str | None = Field(default=None, description="Its key (default: the pack's folder name + .key).")
    expect_digest: str | None = Field(default=None, description="Refuse the job unless the pack's digest is this.")
    conditions: dict[str, str] = Field(description="Each condition's run: an outputs folder, a Harbor job or "
                                       "inspect_ai logs.", min_length=1)
    engines: list[str] | None = None
    baseline: str | None = None


class AuditRequest(BaseModel):
    """A built-in grader against a sealed control pack (``regrade audit grader``)."""

    kind: Literal["audit-grader"]
    grader: str = Field(description="A built-in grader's name (regrade audit grader --help lists them).")
    pack: str | None = Field(default=None, description="A control pack (default: the hand-made one regrade ships).")
    controls_from: str | None = Field(default=None, description="Instead of a pack: generate controls from this "
                                      "dataset's own tasks (regrade audit grader --controls-from), then audit.")
    controls_tasks: int | None = Field(default=None, ge=1, description="With controls_from: how many tasks to draw.")
    expect_digest: str | None = None
    tasks: list[str] = Field(default=[], description="Grade only these tasks' controls.")


JobRequest = Annotated[RescoreRequest | SliceRequest | AuditRequest, Field(discriminator="kind")]


class JobState(BaseModel):
    id: str
    kind: str
    state: Literal["queued", "running", "done", "failed", "cancelled"]
    done: int = Field(description="Cases graded so far.")
    total: int = Field(description="Cases of the run (0 until it is loaded).")
    created: str
    started: str | None
    finished: str | None
    message: str
    request: dict[str, Any]
    runs: int = Field(description="Times the runner started the job (more than 1: resumed after a stop).")
    results_id: str | None
    log: list[str] = []


class Upload(BaseModel):
    id: str
    path: str = Field(description="How a job names it: upload:<id>, or upload:<id>/sub/folder.")
    files: int
    bytes: int


class ResultsEntry(BaseModel):
    id: str
    job_id: str | None = Field(description="The job that made it; null for a results file given to the server.")
    created: str
    cases: int
    conditions: list[str]
    provenance: dict[str, Any] = Field(description="Its provenance record: versions, settings, input digests.")


class ErrorBody(BaseModel):
    id: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse}
                                           for code in (400, 401, 403, 404, 409, 413, 415, 422)}


def create_app(data: Path, roots: list[Path], workers: int = 1, limits: UploadLimits = UploadLimits(),
               start_runner: bool = True, executor: Literal["local", "dask"] = "local", scheduler: str | None = None) -> FastAPI:
    """The application over the data folder ``data`` (its database, results, reports, uploads)."""
    store = Store(data)
    runner = Runner(store, data, workers, executor, scheduler)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if start_runner:
            runner.start()
        try:
            yield
        finally:
            if start_runner:
                runner.stop()
            store.close()

    app = FastAPI(title="regrade", version=regrade_version(), openapi_url="/api/openapi.json", docs_url=None,
                  redoc_url=None, description=__doc__, lifespan=lifespan,
                  redirect_slashes=False)  # a path that names no route is a 404, never another route's answer
    app.state.store, app.state.runner = store, runner

    def token_of(request: Request) -> str:
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else request.cookies.get(COOKIE, "")
        if not token or not store.knows_token(token):
            raise ServiceError("unauthorized", "a bearer token is needed (Authorization: Bearer TOKEN; the server "
                               "wrote it to DATA/token at its first start)", 401)
        return token

    authorized = [Depends(token_of)]

    @app.exception_handler(ServiceError)
    def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return _error(exc.status, exc.id, exc.message)

    @app.exception_handler(RequestValidationError)
    def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return _error(400, "bad-request", f"{where}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, "not-found" if exc.status_code == 404 else "http-error", str(exc.detail))

    # ----------------------------------------------------------------------- the JSON API

    @app.get("/api/health", tags=["server"])
    def health() -> dict[str, Any]:
        """Whether the server is up (no token needed)."""
        return {"status": "ok", "schema_version": store.schema_version}

    @app.post("/api/jobs", status_code=202, dependencies=authorized, responses=ERRORS, tags=["jobs"])
    def submit(body: JobRequest) -> JobState:
        """Queue a job: a rescore of a run named by paths under the server's roots or in an upload,
        a run over a refusal-slice pack, or a built-in grader's audit on a control pack."""
        uploads = data / "uploads"
        request = body.model_dump()
        for name in ("dataset", "pack", "key", "controls_from"):
            if request.get(name):
                request[name] = str(resolve(request[name], roots, uploads))
        if "conditions" in request:
            request["conditions"] = {name: str(resolve(path, roots, uploads))
                                     for name, path in request["conditions"].items()}
        if isinstance(body, AuditRequest):
            if body.grader not in GRADERS:
                raise ServiceError("bad-request", f"grader: {body.grader!r} is no built-in grader (one of "
                                   f"{', '.join(sorted(GRADERS))}); the server runs no grader of a user's")
        else:
            try:
                rescore_settings(body.engines)
            except (SettingsError, ValueError, KeyError) as exc:
                raise ServiceError("bad-request", f"engines: {exc}") from None
        job = store.add_job(body.kind, request)
        runner.wake()
        return _state(store.job(job.id) or job)

    @app.get("/api/jobs", dependencies=authorized, responses=ERRORS, tags=["jobs"])
    def jobs() -> list[JobState]:
        """Every job, newest first."""
        return [_state(job) for job in store.jobs()]

    @app.get("/api/jobs/{job_id}", dependencies=authorized, responses=ERRORS, tags=["jobs"])
    def job(job_id: str) -> JobState:
        """A job: its state, progress (done of total) and log."""
        return _state(_job(store, job_id, with_log=True))

    @app.delete("/api/jobs/{job_id}", dependencies=authorized, responses=ERRORS, tags=["jobs"])
    def cancel(job_id: str) -> JobState:
        """Cancel a job: a queued one now, a running one once the case being graded is done."""
        _job(store, job_id)
        return _state(store.request_cancel(job_id) or _job(store, job_id))

    @app.get("/api/jobs/{job_id}/results", dependencies=authorized, responses=ERRORS, tags=["jobs"],
             response_class=PlainTextResponse)
    def job_results(job_id: str) -> Response:
        """The job's results file, JSON Lines as ``regrade rescore`` writes it (provenance first);
        an audit's, its JSON as ``regrade audit grader --format json`` gives it."""
        done = Path(_done(store, job_id).results or "")
        media = "application/x-ndjson" if done.suffix == ".jsonl" else "application/json"
        return FileResponse(done, media_type=media, filename=f"{job_id}{done.suffix}")

    @app.get("/api/jobs/{job_id}/report", dependencies=authorized, responses=ERRORS, tags=["jobs"],
             response_class=HTMLResponse)
    def job_report(job_id: str) -> Response:
        """The job's HTML report, as ``regrade report`` writes it (an audit has none)."""
        return FileResponse(_report(store, job_id), media_type="text/html")

    @app.post("/api/uploads", status_code=201, dependencies=authorized, responses=ERRORS, tags=["uploads"],
              openapi_extra={"requestBody": {"required": True, "content": {"application/zip": {
                  "schema": {"type": "string", "format": "binary"}}}}})
    async def upload(request: Request) -> Upload:
        """Upload a zip (an outputs folder, a Harbor job, a dataset ...), checked whole before anything
        is written; a job names it as ``upload:<id>``."""
        body = await _body(request, limits.bytes, "the upload")
        upload_id, folder, count = unpack_upload(body, data / "uploads", limits)
        store.add_upload(upload_id, folder, len(body), count)
        return Upload(id=upload_id, path=f"upload:{upload_id}", files=count, bytes=len(body))

    @app.get("/api/results", dependencies=authorized, responses=ERRORS, tags=["results"])
    def results() -> list[ResultsEntry]:
        """Every results file the server made or was given, newest first, with its provenance."""
        return [ResultsEntry.model_validate(r) for r in store.results()]

    @app.post("/api/results", status_code=201, dependencies=authorized, responses=ERRORS, tags=["results"],
              openapi_extra={"requestBody": {"required": True, "content": {"application/x-ndjson": {
                  "schema": {"type": "string"}}}}})
    async def give_results(request: Request) -> ResultsEntry:
        """Give the server a results file ``regrade rescore`` wrote elsewhere (JSON Lines), to list and
        compare beside its own; checked record by record, refused whole when any record is not one."""
        body = await _body(request, limits.bytes, "the results file")
        results_id = f"r{hashlib.sha256(body).hexdigest()[:12]}"
        target = data / "results" / f"{results_id}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.with_suffix(".partial")
        scratch.write_bytes(body)
        try:
            read = Results.read_rescored(scratch)
        except (ResultsError, ValueError, UnicodeDecodeError) as exc:
            scratch.unlink()
            raise ServiceError("not-results", f"not a regrade results file: {exc}", 422) from None
        scratch.replace(target)
        provenance = read.provenance.model_dump() if read.provenance is not None else {}
        store.add_results(results_id, target, None, len(read.cases), sorted({r.condition for r in read.cases}),
                          provenance)
        return ResultsEntry.model_validate(store.result(results_id))

    @app.get("/api/compare", dependencies=authorized, responses=ERRORS, tags=["results"],
             response_class=PlainTextResponse)
    def compare(results: list[str] = Query(description="Results ids to take together."),
                baseline: str = "none",
                format: Literal["json", "csv", "markdown", "latex", "html"] = "json") -> Response:
        """The paired table of results files taken together against ``baseline``, as ``regrade
        table`` prints it (or ``regrade report``'s page: format html)."""
        paths = _results_paths(store, results)
        if format == "html":
            return FileResponse(_compared_page(data, paths, baseline), media_type="text/html")
        try:
            table = api.table(paths, baseline)
        except (ResultsError, ValueError) as exc:
            raise ServiceError("bad-request", str(exc)) from None
        rows = table.rows()
        if format in ("markdown", "latex"):
            return PlainTextResponse(paper_table(rows, format, table.alpha, remark=table.caption))
        columns = list(rows[0]) if rows else []
        if format == "csv":
            return PlainTextResponse(render(columns, rows, "csv"), media_type="text/csv")
        return PlainTextResponse(render(columns, rows, "json", table.as_json()), media_type="application/json")

    # ----------------------------------------------------------------------- the pages

    @app.get("/login", include_in_schema=False)
    def login(token: str, next: str = "/") -> Response:
        """Sign a browser in: the token kept in a cookie, then on to ``next`` (a page of this server)."""
        if not store.knows_token(token):
            return HTMLResponse(_page("regrade: not signed in", "<p>That is not this server's token.</p>"), 401)
        response = RedirectResponse(next if next.startswith("/") and not next.startswith("//") else "/",
                                    status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response

    @app.get("/", include_in_schema=False, dependencies=authorized)
    def jobs_page() -> HTMLResponse:
        listed = store.jobs()
        rows = "".join(
            f'<tr data-state="{j.state}"><td><a href="/jobs/{j.id}">{j.id}</a></td><td>{j.kind}</td>'
            f'<td>{j.state}</td><td class="num">{j.done} of {j.total}</td><td>{html.escape(j.created)}</td>'
            f"<td>{html.escape(', '.join(j.request.get('conditions', {})) or j.request.get('grader', ''))}</td></tr>"
            for j in listed)
        running = any(j.state in ("queued", "running") for j in listed)
        return HTMLResponse(_page("regrade jobs", '<p><a href="/results">results and comparisons</a></p>'
                                  '<table class="sortable jobs"><thead><tr><th>job</th><th>kind</th><th>state</th>'
                                  '<th class="num">cases</th><th>created</th><th>conditions</th></tr></thead>'
                                  f"<tbody>{rows}</tbody></table>", refresh=running))

    @app.get("/jobs/{job_id}", include_in_schema=False, dependencies=authorized)
    def job_page(job_id: str) -> HTMLResponse:
        found = _job(store, job_id, with_log=True)
        share = f"{100 * found.done / found.total:.0f}%" if found.total else "loading"
        report = f'<a href="/jobs/{job_id}/report">the report</a> · ' if found.report else ""
        links = (f'<p>{report}<a href="/api/jobs/{job_id}/results">the results file</a></p>'
                 if found.state == "done" else "")
        log = html.escape("\n".join(found.log))
        return HTMLResponse(_page(f"regrade job {job_id}",
                                  f'<p class="lede">{found.state}: <progress value="{found.done}" '
                                  f'max="{max(found.total, 1)}"></progress> {found.done} of {found.total} cases '
                                  f"({share}). {html.escape(found.message)}</p>{links}<h2>Log</h2><pre>{log}</pre>"
                                  '<p><a href="/">all jobs</a></p>',
                                  refresh=found.state in ("queued", "running")))

    @app.get("/jobs/{job_id}/report", include_in_schema=False, dependencies=authorized)
    def job_report_page(job_id: str) -> Response:
        return FileResponse(_report(store, job_id), media_type="text/html")

    @app.get("/results", include_in_schema=False, dependencies=authorized)
    def results_page() -> HTMLResponse:
        entries = store.results()
        rows = "".join(
            f'<tr><td><input type="checkbox" name="results" value="{r["id"]}" checked></td><td>{r["id"]}</td>'
            f'<td>{html.escape(", ".join(r["conditions"]))}</td><td class="num">{r["cases"]}</td>'
            f'<td>{html.escape(r["created"])}</td><td>{html.escape(str(r["provenance"].get("regrade_version")))}'
            "</td></tr>" for r in entries)
        form = ('<form action="/compare" method="get"><table class="results"><thead><tr><th></th><th>results</th>'
                '<th>conditions</th><th class="num">cases</th><th>created</th><th>regrade</th></tr></thead>'
                f'<tbody>{rows}</tbody></table><p><label>baseline <input name="baseline" value="none"></label> '
                '<button type="submit">compare</button> <label>or download the table as <select name="format">'
                '<option value="html">the report (HTML)</option><option value="csv">CSV</option>'
                '<option value="json">JSON</option><option value="markdown">Markdown</option>'
                '<option value="latex">LaTeX</option></select></label></p></form>')
        return HTMLResponse(_page("regrade results", form + '<p><a href="/">jobs</a></p>'))

    @app.get("/compare", include_in_schema=False, dependencies=authorized)
    def compare_page(results: list[str] = Query(), baseline: str = "none",
                     format: Literal["json", "csv", "markdown", "latex", "html"] = "html") -> Response:
        if format != "html":
            return compare(results, baseline, format)
        return FileResponse(_compared_page(data, _results_paths(store, results), baseline), media_type="text/html")

    return app


async def _body(request: Request, limit: int, what: str) -> bytes:
    """A request's body, refused (``upload-too-large``) as soon as it is seen to pass ``limit`` bytes."""
    too_large = ServiceError("upload-too-large", f"{what} is more than the {limit} bytes this server takes "
                             "(--max-upload-mb)", 413)
    if int(request.headers.get("content-length") or 0) > limit:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large
    return bytes(body)


def _error(status: int, error_id: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"id": error_id, "message": message}}, status_code=status)


def _state(job: Job) -> JobState:
    return JobState(**job.as_json(), log=job.log)


def _job(store: Store, job_id: str, with_log: bool = False) -> Job:
    found = store.job(job_id, with_log)
    if found is None:
        raise ServiceError("job-not-found", f"no job {job_id}", 404)
    return found


def _done(store: Store, job_id: str) -> Job:
    found = _job(store, job_id)
    if found.state != "done":
        raise ServiceError("job-not-done", f"job {job_id} is {found.state}, not done", 409)
    return found


def _report(store: Store, job_id: str) -> Path:
    done = _done(store, job_id)
    if not done.report:
        raise ServiceError("no-report", f"job {job_id} is a {done.kind} job, which has no report: its results are "
                           f"at /api/jobs/{job_id}/results", 409)
    try:
        return job_report(done)
    except (ResultsError, ValueError) as exc:
        raise ServiceError("bad-request", f"the report of job {job_id}: {exc}") from None


def _results_paths(store: Store, ids: list[str]) -> list[Path]:
    paths = []
    for results_id in ids:
        path = store.results_path(results_id)
        if path is None:
            raise ServiceError("results-not-found", f"no results {results_id}", 404)
        paths.append(path)
    if not paths:
        raise ServiceError("bad-request", "name at least one results id")
    return paths


def _compared_page(data: Path, paths: list[Path], baseline: str) -> Path:
    """The report of several results files against ``baseline``, made once per choice."""
    key = hashlib.sha256(json.dumps([str(p) for p in paths] + [baseline]).encode()).hexdigest()[:16]
    page = data / "compare" / f"{key}.html"
    if not page.is_file():
        page.parent.mkdir(parents=True, exist_ok=True)
        try:
            api.report(paths, page, baseline=baseline, title="regrade comparison")
        except (ResultsError, ValueError) as exc:
            raise ServiceError("bad-request", str(exc)) from None
    return page


def _page(title: str, body: str, refresh: bool = False) -> str:
    css = (files("regrade.reporting") / "assets" / "report.css").read_text()
    meta = '<meta http-equiv="refresh" content="2">' if refresh else ""
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title>{meta}<style>{css}pre {{ white-space: pre-wrap; }}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>{body}</body></html>")
