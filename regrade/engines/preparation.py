"""A workbook's preparation, made once for all the full engines of a case.

Before a full engine computes a workbook, its pipeline (:mod:`regrade.engines.pipeline`)
prepares it: the linked copy, the abstentions every engine shares, the cone copy. None of that
depends on the engine: it is made from the file's bytes and the cells asked for. A case
worker's engines evaluate one after another, each in a worker process of its own
(:mod:`regrade.engines.isolation`); once the worker has called :func:`share_preparations`, the
first of its engines to prepare a workbook leaves what it made in a folder the worker owns,
under the sha256 of the file's bytes and of the cells asked, and the others take it from there
instead of making it again (task 52450: 10 of an engine's 12 CPU seconds).

Limits are as before. The CPU the first engine spent preparing is recorded with what it made,
and charged to each engine that takes it (:func:`prepared_cpu_s`, which the isolating parent
reads before it sends the workbook), so a workbook that overran an engine's limit still does.
What is left is complete or absent: it is written under a temporary name and renamed. One that
cannot be read is made again. The folder keeps the last :data:`KEPT` preparations, and goes
with the worker's engines (:func:`stop_sharing`) or, after a run killed outright, with the next
run's sweep of stale folders (:func:`regrade.engines.isolation.remove_stale_scratch`).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from regrade.values import CannotEvaluate, CellRef

KEPT = 4  # preparations a case worker keeps: an output's and its golden's, and the case's before


@dataclass
class _Sharing:
    folder: Path  # where this process's engines leave their preparations
    owner: int  # the pid of the worker that made it (a forked child makes its own)


_SHARING: _Sharing | None = None
_RECORD = "preparation.pickle"


@dataclass
class Preparation:
    """What one engine made of a workbook before computing it."""

    cpu_s: float  # what making it cost, charged to each engine that takes it
    computed: str | None = None  # the name of the copy to compute, in the preparation's folder; None: the file itself
    unrepeatable: dict[CellRef, CannotEvaluate] = field(default_factory=dict)  # the abstentions every engine shares
    abstained: bool = False  # every cell asked is one of them: nothing is computed
    sheet_names: list[str] = field(default_factory=list)  # the workbook's sheets, where nothing is computed


def share_preparations() -> None:
    """Share preparations among the engines this process opens from now on (a case worker's)."""
    global _SHARING
    if _SHARING is not None and _SHARING.owner == os.getpid():
        return
    _SHARING = _Sharing(Path(tempfile.mkdtemp(prefix=f"regrade-prepared-worker-{os.getpid()}-")), os.getpid())


def stop_sharing() -> None:
    """Remove this process's folder of preparations (a forked child leaves its parent's alone)."""
    global _SHARING
    if _SHARING is not None and _SHARING.owner == os.getpid():
        shutil.rmtree(_SHARING.folder, ignore_errors=True)
    _SHARING = None


def preparation_key(path: Path, cells: Iterable[CellRef]) -> str | None:
    """The sha256 of the file's bytes and of the cells asked, in their order; None when
    preparations are not shared here or the file cannot be read."""
    if _SHARING is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest = hashlib.sha256(data)
    digest.update(repr([(c[0], c[1], c[2]) for c in cells]).encode())
    return digest.hexdigest()


def taken(key: str | None) -> tuple[Preparation, Path] | None:
    """The preparation left under ``key`` and its folder, or None (none left, or unreadable)."""
    if key is None or _SHARING is None:
        return None
    folder = _SHARING.folder / key
    try:
        with open(folder / _RECORD, "rb") as record:
            preparation = pickle.load(record)  # written by an engine of this worker, in its own folder
    except Exception:
        return None
    if not isinstance(preparation, Preparation):
        return None
    if preparation.computed is not None and not (folder / preparation.computed).is_file():
        return None
    return preparation, folder


def leave(key: str | None, preparation: Preparation, copy: Path | None = None) -> None:
    """Leave ``preparation`` (and the copy to compute, if any) under ``key`` for the other engines."""
    if key is None or _SHARING is None:
        return
    root = _SHARING.folder
    try:
        building = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=root))
    except OSError:  # the folder is gone (its worker stopped sharing)
        return
    try:
        if copy is not None:
            shutil.copyfile(copy, building / copy.name)
            preparation.computed = copy.name
        with open(building / _RECORD, "wb") as record:
            pickle.dump(preparation, record)
        os.rename(building, root / key)
    except OSError:  # left already, or no room: the other engines prepare it themselves
        shutil.rmtree(building, ignore_errors=True)
        return
    kept = sorted((p for p in root.iterdir() if "." not in p.name), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in kept[KEPT:]:
        shutil.rmtree(old, ignore_errors=True)


def prepared_cpu_s(path: Path, cells: Iterable[CellRef]) -> float:
    """The CPU an engine will not spend preparing ``path`` for ``cells``, having found it prepared: 0 if not."""
    found = taken(preparation_key(path, cells))
    return found[0].cpu_s if found is not None else 0.0
