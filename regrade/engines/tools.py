"""Asking an installed tool (a command or a Python package) what it is."""

from __future__ import annotations

import functools
import importlib
import shutil
import subprocess
from importlib import metadata
from typing import ClassVar


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


class PythonPackageEngine:
    """The availability and version of an engine that is a Python package (a mixin).

    The package is imported when the engine is made, so that forked workers inherit it
    instead of importing it once per workbook.
    """

    package: ClassVar[str]  # the import name, which is also the name on PyPI here

    def import_package(self) -> None:
        try:
            importlib.import_module(self.package)
        except ImportError:
            pass

    def version(self) -> str:
        try:
            return f"{self.package} {metadata.version(self.package)}"
        except metadata.PackageNotFoundError:
            return "not installed"

    def unavailable_reason(self) -> str | None:
        try:
            importlib.import_module(self.package)
        except ImportError as exc:
            return f"the {self.package} package is not installed ({exc}); pip install {self.package}"
        return None
