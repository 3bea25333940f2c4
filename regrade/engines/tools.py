"""Asking an installed command what it is."""

from __future__ import annotations

import functools
import shutil
import subprocess


@functools.cache
def version_output(command: str) -> str | None:
    """What ``command --version`` prints, or None when the tool is missing or fails."""
    if shutil.which(command) is None:
        return None
    try:
        run = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return run.stdout or None
