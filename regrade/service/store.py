"""The server's state in an embedded SQLite file (``DATA/regrade.sqlite``): jobs, their logs, the
results files it made, uploads and the bearer tokens' digests. Migrations are numbered SQL
scripts applied in order (``PRAGMA user_version`` says how many ran); results files, reports and
uploads are files beside the database.

One connection serves every thread, behind a lock; each change is a transaction of its own, so a
server killed at any point leaves the database as the last change left it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIGRATIONS = [
    """
    CREATE TABLE jobs (
        id TEXT PRIMARY KEY, kind TEXT NOT NULL, state TEXT NOT NULL, request TEXT NOT NULL,
        created TEXT NOT NULL, started TEXT, finished TEXT, done INTEGER NOT NULL DEFAULT 0,
        total INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '', results TEXT, report TEXT,
        cancel INTEGER NOT NULL DEFAULT 0, runs INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE job_log (job_id TEXT NOT NULL REFERENCES jobs(id), at TEXT NOT NULL, line TEXT NOT NULL);
    CREATE INDEX job_log_by_job ON job_log(job_id);
    CREATE TABLE results (
        id TEXT PRIMARY KEY, path TEXT NOT NULL, job_id TEXT, created TEXT NOT NULL,
        cases INTEGER NOT NULL, conditions TEXT NOT NULL, provenance TEXT NOT NULL);
    CREATE TABLE uploads (id TEXT PRIMARY KEY, path TEXT NOT NULL, created TEXT NOT NULL, bytes INTEGER NOT NULL,
        files INTEGER NOT NULL);
    CREATE TABLE tokens (digest TEXT PRIMARY KEY, name TEXT NOT NULL, created TEXT NOT NULL);
    """,
]
STATES = ("queued", "running", "done", "failed", "cancelled")
FINISHED = ("done", "failed", "cancelled")


@dataclass
class Job:
    id: str
    kind: str
    state: str
    request: dict[str, Any]
    created: str
    started: str | None = None
    finished: str | None = None
    done: int = 0
    total: int = 0
    message: str = ""
    results: str | None = None
    report: str | None = None
    cancel: bool = False
    runs: int = 0  # how many times the runner started it (more than 1: resumed after a stop)
    log: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "state": self.state, "done": self.done, "total": self.total,
                "created": self.created, "started": self.started, "finished": self.finished,
                "message": self.message, "request": self.request, "runs": self.runs,
                "results_id": Path(self.results).stem if self.results else None}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Store:
    """The database under ``folder`` (made, and migrated, on first use)."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(folder / "regrade.sqlite", check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    def _migrate(self) -> None:
        with self._lock:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                self._db.executescript(f"BEGIN; {script}; PRAGMA user_version = {number}; COMMIT;")

    @property
    def schema_version(self) -> int:
        return int(self._execute("PRAGMA user_version")[0][0])

    def _execute(self, sql: str, parameters: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, parameters).fetchall()

    # --------------------------------------------------------------- tokens

    def add_token(self, token: str, name: str = "server") -> None:
        self._execute("INSERT OR IGNORE INTO tokens VALUES (?, ?, ?)", (token_digest(token), name, now()))

    def knows_token(self, token: str) -> bool:
        return bool(self._execute("SELECT 1 FROM tokens WHERE digest = ?", (token_digest(token),)))

    # --------------------------------------------------------------- jobs

    def add_job(self, kind: str, request: dict[str, Any]) -> Job:
        job = Job(f"j{uuid.uuid4().hex[:12]}", kind, "queued", request, now())
        self._execute("INSERT INTO jobs (id, kind, state, request, created) VALUES (?, ?, ?, ?, ?)",
                      (job.id, kind, job.state, json.dumps(request), job.created))  # in order: the conditions' order is the cases'
        self.log(job.id, f"queued: {kind}")
        return job

    def job(self, job_id: str, with_log: bool = False) -> Job | None:
        rows = self._execute("SELECT * FROM jobs WHERE id = ?", (job_id,))
        if not rows:
            return None
        job = _job(rows[0])
        if with_log:
            job.log = [f"{r['at']} {r['line']}" for r in
                       self._execute("SELECT at, line FROM job_log WHERE job_id = ? ORDER BY rowid", (job_id,))]
        return job

    def jobs(self) -> list[Job]:
        return [_job(r) for r in self._execute("SELECT * FROM jobs ORDER BY created DESC, rowid DESC")]

    def claim_next(self) -> Job | None:
        """The oldest queued job, now running (None when none is queued)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute("SELECT * FROM jobs WHERE state = 'queued' ORDER BY created, rowid LIMIT 1"
                                       ).fetchone()
                if row is not None:
                    self._db.execute("UPDATE jobs SET state = 'running', started = ?, runs = runs + 1, done = 0 "
                                     "WHERE id = ?", (now(), row["id"]))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return self.job(row["id"]) if row is not None else None

    def requeue_unfinished(self) -> list[str]:
        """Jobs a stopped server left running, queued again (their finished cases are in the
        results cache, so they resume from there)."""
        running = [r["id"] for r in self._execute("SELECT id FROM jobs WHERE state = 'running'")]
        for job_id in running:
            self._execute("UPDATE jobs SET state = 'queued' WHERE id = ?", (job_id,))
            self.log(job_id, "the server stopped while this job ran: queued again, to resume from the results cache")
        return running

    def progress(self, job_id: str, done: int, total: int) -> None:
        self._execute("UPDATE jobs SET done = ?, total = ? WHERE id = ?", (done, total, job_id))

    def finish(self, job_id: str, state: str, message: str = "", results: Path | None = None,
               report: Path | None = None) -> None:
        assert state in FINISHED
        self._execute("UPDATE jobs SET state = ?, finished = ?, message = ?, results = ?, report = ? WHERE id = ?",
                      (state, now(), message, str(results) if results else None, str(report) if report else None,
                       job_id))
        self.log(job_id, f"{state}" + (f": {message}" if message else ""))

    def request_cancel(self, job_id: str) -> Job | None:
        """A queued job is cancelled now; a running one when its current case is graded."""
        job = self.job(job_id)
        if job is None or job.state in FINISHED:
            return job
        if job.state == "queued":
            self.finish(job_id, "cancelled", "cancelled before it started")
        else:
            self._execute("UPDATE jobs SET cancel = 1 WHERE id = ?", (job_id,))
            self.log(job_id, "cancel asked: stops after the case being graded")
        return self.job(job_id)

    def cancel_requested(self, job_id: str) -> bool:
        rows = self._execute("SELECT cancel FROM jobs WHERE id = ?", (job_id,))
        return bool(rows and rows[0]["cancel"])

    def log(self, job_id: str, line: str) -> None:
        self._execute("INSERT INTO job_log VALUES (?, ?, ?)", (job_id, now(), line))

    # --------------------------------------------------------------- results and uploads

    def add_results(self, results_id: str, path: Path, job_id: str | None, cases: int, conditions: list[str],
                    provenance: dict[str, Any] | None) -> None:
        self._execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?)",
                      (results_id, str(path), job_id, now(), cases, json.dumps(conditions),
                       json.dumps(provenance or {}, sort_keys=True, default=str)))

    def results(self) -> list[dict[str, Any]]:
        """Every results file, newest first: id, path, job_id, created, cases, conditions, provenance."""
        return [_results(r) for r in self._execute("SELECT * FROM results ORDER BY created DESC, rowid DESC")]

    def result(self, results_id: str) -> dict[str, Any] | None:
        """One results file's entry (as :meth:`results` gives it), or None."""
        rows = self._execute("SELECT * FROM results WHERE id = ?", (results_id,))
        return _results(rows[0]) if rows else None

    def results_path(self, results_id: str) -> Path | None:
        found = self.result(results_id)
        return Path(found["path"]) if found else None

    def add_upload(self, upload_id: str, path: Path, size: int, files: int) -> None:
        self._execute("INSERT INTO uploads VALUES (?, ?, ?, ?, ?)", (upload_id, str(path), now(), size, files))

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _results(row: sqlite3.Row) -> dict[str, Any]:
    return {"id": row["id"], "path": row["path"], "job_id": row["job_id"], "created": row["created"],
            "cases": row["cases"], "conditions": json.loads(row["conditions"]), "provenance": json.loads(row["provenance"])}


def _job(row: sqlite3.Row) -> Job:
    return Job(row["id"], row["kind"], row["state"], json.loads(row["request"]), row["created"], row["started"],
               row["finished"], row["done"], row["total"], row["message"], row["results"], row["report"],
               bool(row["cancel"]), row["runs"])
