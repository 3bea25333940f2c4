"""What a result was made from: versions, settings and the digest of every input file."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import platform
import stat
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Iterable

FORMAT_VERSION = 1


def regrade_version() -> str:
    try:
        return metadata.version("regrade")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def sha256_file(path: Path) -> str | None:
    """The file's sha256, or None when it is not a regular file that can be read (missing, a
    folder, a pipe or a device, which could block or never end)."""
    digest = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def provenance(settings: dict, engines: dict[str, str], inputs: Iterable[Path]) -> dict:
    return {
        "record": "provenance",
        "format_version": FORMAT_VERSION,
        "regrade_version": regrade_version(),
        "git_revision": git_revision(),
        "python": platform.python_version(),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "settings": settings,
        "engines": engines,
        "inputs": {str(p): sha256_file(p) for p in sorted(set(inputs), key=str)},
    }
