"""The results cache: a case's grading kept under the content hash of everything that decides it.

The key (:func:`cache_key`) covers the output's and the golden's bytes, the answer position and
sheet, the settings, and the versions of regrade and of every engine of the run, so a second
run, or a run restarted after being killed, takes every finished case from here and a change of
any of those grades afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from regrade.engines.registry import open_engine
from regrade.results.provenance import git_revision, regrade_version, sha256_file
from regrade.run.settings import RescoreSettings
from regrade.runs.cases import Case

CACHE_FORMAT = 1


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/regrade`` (``~/.cache/regrade``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "regrade"


class ResultCache:
    """Gradings by content hash, one small JSON file each, written atomically."""

    def __init__(self, directory: Path):
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, grading: dict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp") as handle:
            json.dump(grading, handle, ensure_ascii=False, default=str)
        os.replace(handle.name, path)


def cache_key(case: Case, settings: RescoreSettings, versions: dict[str, str]) -> str:
    """The content hash of everything that decides a case's grading (``versions``: the
    engines' and regrade's own, see :func:`code_versions`)."""
    content = {
        "format": CACHE_FORMAT,
        "output": sha256_file(case.output_path),  # None when missing: the grading says so, and is cached as such
        "golden": sha256_file(case.answer_path),
        "task_id": case.task_id,  # a grading's message may name its task
        "answer_position": case.answer_position,
        "answer_sheet": case.answer_sheet,
        "settings": asdict(settings),
        "versions": versions,
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def code_versions(settings: RescoreSettings) -> dict[str, str]:
    """regrade's version and git revision (a code change is a new grader) and each engine's version."""
    return {"regrade": regrade_version(), "git": git_revision() or "", **engine_versions(settings)}


def engine_versions(settings: RescoreSettings) -> dict[str, str]:
    """Each engine of the run (the shallow one first) and its version."""
    return {name: open_engine(name).version() for name in (settings.shallow, *settings.engines)}
