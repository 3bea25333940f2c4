"""A client of ``regrade serve``, for ``regrade submit``: send a run, follow its progress, fetch its
results. Standard library only (urllib); every error the server gives comes back as a
:class:`ServerError` with the server's error id and message."""

from __future__ import annotations

import io
import json
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any, Callable

FINISHED = ("done", "failed", "cancelled")


class ServerError(Exception):
    def __init__(self, error_id: str, message: str, status: int | None = None):
        super().__init__(f"{message} ({error_id})")
        self.id, self.message, self.status = error_id, message, status


class Client:
    def __init__(self, server: str, token: str, timeout_s: float = 60):
        self.server, self.token, self.timeout_s = server.rstrip("/"), token, timeout_s

    def call(self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json") -> bytes:
        request = urllib.request.Request(f"{self.server}{path}", data=body, method=method,
                                         headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            raise _server_error(exc) from None
        except urllib.error.URLError as exc:
            raise ServerError("unreachable", f"no regrade server at {self.server}: {exc.reason}") from None
        except ConnectionError as exc:  # reset or closed before it answered: a server starting or stopping
            raise ServerError("unreachable", f"the regrade server at {self.server} dropped the connection: "
                              f"{exc}") from None

    def json(self, method: str, path: str, payload: Any = None) -> Any:
        body = None if payload is None else json.dumps(payload).encode()
        return json.loads(self.call(method, path, body))

    def upload(self, folder: Path) -> str:
        """``folder`` zipped and uploaded; how a job names it (``upload:<id>``)."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(folder.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    archive.write(path, path.relative_to(folder).as_posix())
        return str(json.loads(self.call("POST", "/api/uploads", buffer.getvalue(), "application/zip"))["path"])

    def submit(self, request: dict[str, Any]) -> dict[str, Any]:
        return dict(self.json("POST", "/api/jobs", request))

    def wait(self, job_id: str, on_progress: Callable[[dict[str, Any]], None] | None = None,
             poll_s: float = 0.5) -> dict[str, Any]:
        """The job once it is finished (done, failed or cancelled)."""
        while True:
            job = dict(self.json("GET", f"/api/jobs/{job_id}"))
            if on_progress is not None:
                on_progress(job)
            if job["state"] in FINISHED:
                return job
            time.sleep(poll_s)

    def results(self, job_id: str) -> bytes:
        return self.call("GET", f"/api/jobs/{job_id}/results")


def _server_error(exc: urllib.error.HTTPError) -> ServerError:
    try:
        error = json.loads(exc.read())["error"]
        return ServerError(str(error["id"]), str(error["message"]), exc.code)
    except (ValueError, KeyError, TypeError):
        return ServerError("http-error", f"the server answered {exc.code} {exc.reason}", exc.code)
