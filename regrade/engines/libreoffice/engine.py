"""LibreOffice Calc: a warm soffice over UNO, recalculating every formula of each workbook.

The UNO bridge lives in Debian's ``python3-uno`` for ``/usr/bin/python3``, so the
engine talks to a helper process on that interpreter (``worker.py`` beside it),
which owns a headless soffice with a private, throw-away profile: each workbook is loaded
without computing (``OOXMLRecalcMode`` = 1), its rewrites set, and every formula computed
once by ``calculateAll`` (a hard recalculation: no stale cache is ever echoed), external
links never updated, macros never run, and, where ``unshare`` allows it (Linux),
in a network namespace of its own with no way out. A workbook calling WEBSERVICE,
which LibreOffice would fetch, is declined (``network-function``) before LibreOffice
sees it, sandbox or not. Opened through the registry, the engine runs in an isolated
worker like every other (:mod:`regrade.engines.isolation`), so its rewrites and rules run
under the workbook's limit too; soffice starts when the worker does (:meth:`start`), and
the helper and soffice die with a worker killed at its limit. A helper that does not
answer within the timeout is killed with its soffice and started afresh.

regrade's set-up installs LibreOffice 25.2 (bookworm-backports on Debian 12), which
computes XLOOKUP, XMATCH, FILTER, SORT, SORTBY, UNIQUE, SEQUENCE and LET; Debian 12's own
7.4 lacks them all. Either leaves functions it lacks (TEXTSPLIT, VSTACK, LAMBDA ... in
25.2) lower-cased in a formula (rule ``libreoffice-lacks-function``) and reports ``Err:5xx`` for
formulas it cannot compile (``libreoffice-engine-error``). ``#NAME?`` always abstains
(``libreoffice-name-error``); the rules are in :mod:`regrade.engines.rules`. Before it
computes, structured references become ranges and MOD gets Excel's precision
(:mod:`regrade.engines.libreoffice.rewrites`); where it departs from Excel in ways regrade cannot
mend (:data:`_DEPARTURES`), a cell whose cone holds such a call abstains. Numbers come
back plain: LibreOffice formats a ``=TIME(6,0,0)`` cell as a time of its own accord,
where the file says General; a date is a date when the file's format says so
(:func:`regrade.grading.grade.recomputed_view`).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import select
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Sequence

from regrade.processes.cpu_time import wall_backstop_s
from regrade.engines.base import DEFAULT_MEMORY_MB, EngineSettings
from regrade.engines.departures import Departure, abstain_on_departures, any_call, hazards_binding
from regrade.engines.libreoffice.logicals import abstain_where_logicals_are_numbers
from regrade.processes.supervisor import die_with_parent
from regrade.engines.libreoffice.office_files import kill_office_processes, office_environment, remove_office_files
from regrade.engines.libreoffice.rewrites import imported_copy, libreoffice_rewrites
from regrade.engines.pipeline import ComputingEngine
from regrade.engines.readings import unknown_functions
from regrade.engines.rules import abstention
from regrade.engines.tools import version_output
from regrade.values import EXCEL_ERROR_CODES, CellRef, CellResult, ExcelError, WorkbookFailure, WorkbookValues
from regrade.workbook.analysis import WorkbookAnalysis

SYSTEM_PYTHON = "/usr/bin/python3"
WORKER = Path(__file__).with_name("worker.py")
START_TIMEOUT_S = 90.0


def _soffice_version() -> str | None:
    words = (version_output("soffice") or "").split()
    return " ".join(words[:2]) if words else None  # "LibreOffice 25.2.3.2"


@functools.cache
def _uno_reason() -> str | None:
    if not Path(SYSTEM_PYTHON).exists():
        return f"{SYSTEM_PYTHON} is missing (LibreOffice's UNO bridge is installed for it)"
    check = subprocess.run([SYSTEM_PYTHON, "-c", "import uno"], capture_output=True, text=True)
    if check.returncode != 0:
        return "the UNO bridge is missing: apt-get install python3-uno"
    return None


@functools.cache
def network_sandbox() -> list[str]:
    """The command that runs soffice with no network (a namespace of its own), or [] where
    this system does not allow one."""
    command = ["unshare", "--net", "--map-current-user"]
    try:
        works = subprocess.run([*command, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        works = False
    return command if works else []


class LibreOfficeEngine(ComputingEngine):
    name = "libreoffice"
    full = True
    # a worker's start is soffice's, some 1.5 CPU s (a light workbook costs it tens of ms): a
    # worker serves a thousand before it is replaced (one that crashes or passes its memory
    # limit is replaced at once, and the workbook tried again in a fresh one)
    workbooks_per_worker = 1000

    def __init__(self, settings: EngineSettings = EngineSettings()) -> None:
        super().__init__(settings)
        self.timeout_s = settings.timeout_s
        self.memory_mb = settings.memory_mb or DEFAULT_MEMORY_MB
        self._helper: subprocess.Popen | None = None
        # named now, made when soffice starts: the copy of this engine in the process that
        # opened it can remove what a worker killed at its limit left there
        self._profile = os.path.join(tempfile.gettempdir(), f"regrade-libreoffice-{uuid.uuid4().hex[:12]}")
        atexit.register(self.close)

    def version(self) -> str:
        return _soffice_version() or "not installed"

    def unavailable_reason(self) -> str | None:
        if _soffice_version() is None:
            return "soffice is not on PATH: apt-get install libreoffice-calc-nogui"
        return _uno_reason()

    def start(self) -> None:
        """Start soffice before the first workbook, so that its start-up is no workbook's time."""
        try:
            self._ensure_helper()
        except RuntimeError:
            pass  # the first workbook reports it

    def compute(self, analysis: WorkbookAnalysis, cells: Sequence[CellRef]) -> WorkbookValues:
        path = analysis.path
        if analysis.screening.network_functions:
            called = ", ".join(analysis.screening.network_functions)
            return WorkbookValues(failure=WorkbookFailure(
                "network-function", f"the workbook calls {called}, which LibreOffice would fetch from the network"))
        try:
            helper = self._ensure_helper()
        except RuntimeError as exc:
            return WorkbookValues(failure=WorkbookFailure("crashed", str(exc)))
        with imported_copy(path, libreoffice_rewrites(path)) as (imported, rewrites):
            request = {"path": str(imported.resolve()), "cells": [[c.sheet, c.row, c.column] for c in cells],
                       "formulas": [list(rewrite) for rewrite in rewrites]}
            try:
                assert helper.stdin is not None
                helper.stdin.write(json.dumps(request) + "\n")
                helper.stdin.flush()
                reply = self._read_line(helper, wall_backstop_s(self.timeout_s))  # its worker counts the CPU limit
            except (BrokenPipeError, OSError) as exc:
                self.close()
                return WorkbookValues(failure=WorkbookFailure("crashed", f"LibreOffice helper died: {exc}"))
        if reply is None:
            died = helper.poll() is not None
            self.close()
            if died:
                return WorkbookValues(failure=WorkbookFailure(
                    "crashed", f"LibreOffice died while evaluating (a crash, or its {self.memory_mb} MB memory limit)"))
            return WorkbookValues(failure=WorkbookFailure(
                "timeout", f"LibreOffice was still at work after {wall_backstop_s(self.timeout_s):g} s"))
        if not reply.get("ok"):
            return WorkbookValues(failure=WorkbookFailure(reply.get("reason", "crashed"), reply.get("detail", "")))
        values = abstain_on_departures(analysis, _values(reply, cells), _DEPARTURES)
        return abstain_where_logicals_are_numbers(analysis, values)

    def _ensure_helper(self) -> subprocess.Popen:
        if self._helper is not None and self._helper.poll() is None:
            return self._helper
        self.close()
        os.makedirs(self._profile, mode=0o700)
        self._helper = subprocess.Popen(
            [SYSTEM_PYTHON, str(WORKER), self._profile, str(self.memory_mb), *network_sandbox()],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            start_new_session=True,  # the helper and its soffice share a process group we can kill
            preexec_fn=die_with_parent,  # a worker killed at its time limit takes the helper with it
            env=office_environment(self._profile),
        )
        ready = self._read_line(self._helper, START_TIMEOUT_S)
        if not ready or not ready.get("ready"):
            self.close()
            raise RuntimeError("LibreOffice did not start")
        return self._helper

    @staticmethod
    def _read_line(helper: subprocess.Popen, timeout_s: float) -> dict | None:
        assert helper.stdout is not None
        ready, _, _ = select.select([helper.stdout], [], [], timeout_s)
        if not ready:
            return None
        line = helper.stdout.readline()
        if not line:
            return None
        return json.loads(line)

    def close(self) -> None:
        helper, self._helper = self._helper, None
        if helper is not None:
            try:
                os.killpg(helper.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            helper.wait(10)
            for stream in (helper.stdin, helper.stdout):
                if stream is not None:
                    stream.close()
        if os.path.exists(self._profile):
            if helper is None:  # a worker killed at its limit left them running: found by the profile they name
                kill_office_processes(self._profile)
            remove_office_files(self._profile)


_STORED_BOOLEANS = ("=TRUE()", "=FALSE()")


_VALUE = ExcelError("#VALUE!")


_DEPARTURES = (
    Departure("FILTERXML", any_call, "libreoffice-filterxml"),
    *(Departure(name, any_call, "libreoffice-small-large-k", only_on=_VALUE) for name in ("SMALL", "LARGE")),
    *hazards_binding("libreoffice"),
)


def _values(reply: dict, cells: Sequence[CellRef]) -> WorkbookValues:
    sheets = reply["sheets"]
    result = WorkbookValues(sheet_names=sheets)
    for ref, reading in zip(cells, reply["cells"]):
        if reading is None:  # no such sheet
            continue
        kind, raw, number_format, formula = reading
        if formula in _STORED_BOOLEANS:  # LibreOffice loads a stored TRUE as the formula =TRUE()
            formula = None
        if formula:
            result.formulas[ref] = formula
        result.cells[ref] = _cell_value(kind, raw, number_format, formula)
    return result


def _cell_value(kind: str, raw: object, number_format: str | None, formula: str | None) -> CellResult:
    unknown = unknown_functions(formula) if formula else []
    if unknown:
        return abstention("libreoffice-lacks-function", f"LibreOffice lacks {', '.join(unknown)}")
    if kind == "error":
        code = str(raw)
        if code == "#NAME?":
            return abstention("libreoffice-name-error")
        if code in EXCEL_ERROR_CODES:
            return ExcelError(code)
        return abstention("libreoffice-engine-error", f"LibreOffice {code}")
    if kind == "number":
        return float(raw)  # type: ignore[arg-type]  # LibreOffice's automatic formats are not the file's
    if kind == "bool":
        return bool(raw)
    if kind == "empty":
        return None
    return raw  # type: ignore[return-value]
