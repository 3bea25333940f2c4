"""TODAY() on the day a workbook was saved: the dated copy.

A golden whose answer depends on ``TODAY()`` caches the value of the day Excel last computed
it; recomputed on another day it gives another value, so it cannot judge an output as it
stands. The file records when it was saved: ``dcterms:modified`` in ``docProps/core.xml``
(ECMA-376 Part 2, core properties), in UTC. The local day was then one of the days that UTC
instant falls on somewhere between UTC-12 and UTC+14: two or three candidates
(:func:`save_days`). A *dated copy* has every ``TODAY()`` of its formulas and defined names
replaced by ``DATE(y, m, d)`` of one such day, so that every engine computes the workbook as
of that day; its addresses are the original's. Which candidate Excel used is settled by the
golden itself (:mod:`regrade.grading.dated`).

``NOW()`` (the time of day is not known to the second) and ``RAND()`` and its kin are not
dated: a cell that depends on them stays unjudgeable.
"""

from __future__ import annotations

import datetime as dt
import re
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from regrade.workbook.formula import rewritten_outside_quotes
from regrade.workbook.origin import saved_at
from regrade.workbook.rewrite import READ_ERRORS, rewritten_parts, write_copy
from regrade.workbook.screening import screen

EARLIEST_OFFSET = dt.timedelta(hours=-12)  # UTC-12, the earliest local time anywhere
LATEST_OFFSET = dt.timedelta(hours=14)  # UTC+14 (Line Islands), the latest
_TODAY = re.compile(r"(?<![A-Za-z0-9_.])TODAY\(\s*\)", re.IGNORECASE)


def save_days(path: Path) -> list[dt.date]:
    """The local days the workbook may have been saved on: those its UTC save time falls on
    in some time zone (two or three, earliest first); none when the file records no time."""
    saved = saved_at(path)
    if saved is None:
        return []
    first, last = (saved + EARLIEST_OFFSET).date(), (saved + LATEST_OFFSET).date()
    return [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]


def dated_formula(formula: str, day: dt.date) -> str:
    """``formula`` with each ``TODAY()`` outside quoted text replaced by ``DATE(y,m,d)``."""
    date = f"DATE({day.year},{day.month},{day.day})"
    return rewritten_outside_quotes(formula, lambda piece: _TODAY.sub(date, piece))


def write_dated_copy(path: Path, copy: Path, day: dt.date) -> bool:
    """Write ``path`` to ``copy`` with TODAY() as ``day``; False (nothing written) when no
    formula calls TODAY() or the file cannot be read. Never raises for a bad file."""
    try:
        with zipfile.ZipFile(path) as archive:
            replaced = rewritten_parts(archive, lambda formula: dated_formula(formula, day), b"TODAY(")
            if not replaced:
                return False
            write_copy(archive, copy, replaced, {})
    except READ_ERRORS:
        return False
    return True


@contextmanager
def dated_workbook(path: Path, day: dt.date) -> Iterator[Path]:
    """The dated copy of ``path`` in a temporary folder while the block runs; ``path`` itself
    when it calls no TODAY() or screening refuses it (the engines then refuse it too)."""
    with tempfile.TemporaryDirectory(prefix="regrade-dated-") as folder:
        copy = Path(folder) / path.name
        yield copy if screen(path).failure is None and write_dated_copy(path, copy, day) else path
