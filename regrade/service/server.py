"""``regrade serve``: the data folder set up (its database, its token), then the application
served by uvicorn.

The token is made at the first start (32 random bytes, URL-safe), written to ``DATA/token`` with
mode 0600 and kept in the database by its sha256; it is never printed or logged (uvicorn's access
log, which would show ``/login?token=``, is off).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Literal

from regrade.service.files import UploadLimits
from regrade.service.store import Store

TOKEN_FILE = "token"


def server_token(data: Path) -> str:
    """The server's token: read from ``DATA/token``, or made there (mode 0600) at the first start."""
    data.mkdir(parents=True, exist_ok=True)
    path = data / TOKEN_FILE
    if not path.is_file():
        token = secrets.token_urlsafe(32)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(token + "\n")
    token = path.read_text().strip()
    store = Store(data)
    store.add_token(token)
    store.close()
    return token


def serve(data: Path, host: str = "127.0.0.1", port: int = 8765, roots: list[Path] | None = None, workers: int = 1,
          limits: UploadLimits = UploadLimits(), executor: Literal["local", "dask"] = "local", scheduler: str | None = None) -> None:
    """Serve until stopped (Ctrl-C, SIGTERM)."""
    import uvicorn

    from regrade.service.app import create_app

    server_token(data)
    app = create_app(data, roots or [], workers, limits, executor=executor, scheduler=scheduler)
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning")
