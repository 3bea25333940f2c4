"""A golden whose answer depends on TODAY(), judged as of the day Excel computed it.

Such a golden caches its answer of the day it was saved, and an output recomputed today
cannot be compared with it. :mod:`regrade.workbook.today` gives the days the file may have
been saved on (two or three, by time zone) and a copy of a workbook computed as of one of
them. A day *reproduces* the golden when the consensus of the full engines, computing the
golden's dated copy, gives every graded cell that depends on TODAY() its cached value and no
graded cell another one: that day is one Excel may have used. The output's dated copy is then graded on each such day. When every reproducing
day gives the same verdict, that is the case's verdict; when they differ, the day matters
and is not known (``save-day-unknown``); when no day reproduces the golden (it was saved
days after it was computed, or the engines abstain on it), it stays ``invalid-golden``.

Only TODAY() is dated: a golden whose answer depends on NOW() or RAND() stays invalid.
"""

from __future__ import annotations

import datetime as dt
from typing import Sequence

from regrade.engines.base import Engine
from regrade.grading.consensus import consensus
from regrade.grading.grade import Golden, grade, spilled_cells
from regrade.grading.policies import Policy
from regrade.runs.cases import Case
from regrade.values import CellRef
from regrade.workbook.today import dated_workbook, save_days

DATED = frozenset({"TODAY"})  # the volatile functions a dated copy fixes
SAVE_DAY_UNKNOWN = "save-day-unknown"  # the reproducing days give the output different verdicts
DATED_GOLDEN = "dated-golden"  # the case was judged as of the golden's day


def too_large_to_date(golden: Golden, fulls: Sequence[Engine]) -> bool:
    """Whether dating the golden asks for more work than the engines' budget
    (``EngineSettings.bridge_work``, a count of referenced cells, never a clock): each day
    it may have been saved on is one more recomputation of the whole golden."""
    return golden.referenced_cells() > min(e.settings.bridge_work for e in fulls)


def dated_cells(golden: Golden, targets: list[CellRef]) -> list[CellRef]:
    """The golden's graded formulas that depend on TODAY(), when that is its only obstacle:
    none of them calls another volatile function (its cached values are checked by
    ``Golden.problem``); otherwise none."""
    formulas = golden.formulas_among(targets)
    volatile, _ = golden.unrepeatable(formulas)
    return volatile if all(golden.volatile_calls(ref) <= DATED for ref in volatile) else []


_FOUND: dict[tuple, list[dt.date]] = {}  # this process's answers, per golden file and settings
MAX_REMEMBERED = 256


def reproducing_days(case: Case, policy: Policy, golden: Golden, targets: list[CellRef], dated: list[CellRef],
                     shallow: Engine, fulls: Sequence[Engine], quorum: int) -> list[dt.date]:
    """The days, among those the golden may have been saved on, as of which the engines'
    consensus gives each ``dated`` cell its cached value and no graded cell another value
    (an abstention elsewhere is judged as usual, on the output); worked out once per
    golden file, graded cells and engines in a process (the conditions of a task share it)."""
    info = case.answer_path.stat()
    key = (str(case.answer_path), info.st_mtime_ns, info.st_size, tuple(targets), policy.name,
           tuple(e.name for e in fulls), quorum)
    if key not in _FOUND:
        if len(_FOUND) >= MAX_REMEMBERED:
            _FOUND.clear()
        _FOUND[key] = _reproducing_days(case, policy, golden, targets, dated, shallow, fulls, quorum)
    return _FOUND[key]


def _reproducing_days(case: Case, policy: Policy, golden: Golden, targets: list[CellRef], dated: list[CellRef],
                      shallow: Engine, fulls: Sequence[Engine], quorum: int) -> list[dt.date]:
    stored = shallow.evaluate(case.answer_path, targets)
    if stored.failure is not None:
        return []
    spilled = spilled_cells(case.answer_path, stored)
    days = []
    for day in save_days(case.answer_path):
        with dated_workbook(case.answer_path, day) as copy:
            if copy == case.answer_path:
                return []  # no formula of the file calls TODAY(): nothing to date
            agreed = consensus(policy, stored, {e.name: e.evaluate(copy, targets) for e in fulls}, spilled, quorum)
        graded = grade(policy, targets, golden, "dated golden", agreed.view, recomputed=True)
        missed = {outcome.ref for outcome in graded.cells}  # differ, or no engine computed them
        if graded.passed is not False and not missed & set(dated):
            days.append(day)
    return days
