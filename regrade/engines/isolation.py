"""Run an engine on one workbook at a time in a worker process, with a time and memory limit.

Engines fail in ways a ``try`` cannot catch: IronCalc can panic (a Rust panic is a
``BaseException``), a native library can segfault, an evaluation can loop forever.
:class:`IsolatedEngine` wraps any engine so that workbooks are evaluated in a forked
worker; a crash, a timeout or an exhausted memory limit becomes a
:class:`WorkbookFailure` for that workbook and the run goes on.

The worker lives on between workbooks (forking a fresh one costs more than reading
a small workbook). A worker that timed out, crashed or ran out of memory is
replaced, and one that has served its engine's ``workbooks_per_worker`` workbooks
(:data:`WORKBOOKS_PER_WORKER` for an engine that does not say) too. A
crash or memory limit in a worker that had served other workbooks is tried once
more in a fresh one, so the verdict is the workbook's own, not its predecessors'.

Each worker's temporary files go to a folder named after the process that made it
(``regrade-<engine>-worker-<pid>-*``), removed however the worker ends. A run killed with
SIGKILL removes nothing; the next worker to start removes the folders of processes that no
longer exist (:func:`remove_stale_scratch`).
"""

from __future__ import annotations

import faulthandler
import gc
import glob
import multiprocessing
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
import weakref
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Sequence

from regrade.processes.cpu_time import process_tree_cpu_seconds, wall_backstop_s
from regrade.processes.supervisor import ORPHAN_CHECK_S, die_with_parent, end_processes
from regrade.engines.base import WORKBOOKS_PER_WORKER, Engine
from regrade.workbook.screening import forget_screenings
from regrade.values import (AlignedValues, CellRef, WorkbookFailure, WorkbookValues, aligned_answer, packed_cells,
                            unpacked_cells, values_from_answer)

START_TIMEOUT_S = 120.0  # a worker's engine getting ready (LibreOffice starting soffice): no workbook's time
CLOSE_TIMEOUT_S = 10.0  # a worker closing its engine (LibreOffice: soffice and its profile)
TERMINATE_GRACE_S = 3.0  # a worker past its limit, told to close its engine, before it is killed
POLL_S = 0.25  # how often a workbook's CPU time is read while its answer is awaited
OUT_OF_MEMORY_EXIT = 3  # a worker that could not even report running out of memory
_FRESH_START_FAULTS = ("crashed", "memory-limit")


class IsolatedEngine:
    """The same engine, in a worker process under the time and memory limit of its settings."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.settings = engine.settings
        self.name = engine.name
        self.full = engine.full
        self.in_default_consensus = engine.in_default_consensus
        self.timeout_s = engine.settings.timeout_s
        self.memory_mb = engine.settings.memory_mb
        self.reserved_mb = engine.reserved_mb
        self.workbooks_per_worker: int = getattr(engine, "workbooks_per_worker", WORKBOOKS_PER_WORKER)
        self._worker: BaseProcess | None = None
        self._connection: Connection | None = None
        self._scratch: weakref.finalize | None = None  # removes the worker's temporary folder, however it ends
        self._served = 0
        self._preloaded = False
        self._awaiting_ready = False  # started in the background; its "ready" not yet read
        self.cpu_s = 0.0  # CPU seconds its workers spent on workbooks (theirs and their children's)
        self.start_cpu_s = 0.0  # ... and starting its engine (up to its "ready")

    def version(self) -> str:
        return self.engine.version()

    def unavailable_reason(self) -> str | None:
        return self.engine.unavailable_reason()

    def start(self) -> None:
        return None  # the worker starts its engine when it starts

    def start_in_background(self) -> None:
        """Start the worker and its engine now without waiting for it (LibreOffice's soffice takes
        seconds): the first workbook waits for what is left of the start, and :meth:`starting`
        says meanwhile whether the engine is still getting ready."""
        if self._worker is None:
            self._spawn()

    def starting(self) -> bool:
        """True while an engine started in the background has not yet said it is ready (or failed)."""
        if not self._awaiting_ready or self._connection is None:
            return False
        try:
            return not self._connection.poll(0)
        except (EOFError, OSError):
            return False

    def preload(self) -> None:
        """The engine's preload, here, once: every worker forked from now on inherits it. One
        that fails is left to the worker's own start, which reports it."""
        if not self._preloaded:
            try:
                self.engine.preload()
            except Exception:
                return
            self._preloaded = True

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        fresh = self._worker is None or self._served == 0  # a crash in a worker that served others: tried again
        asked = cells if isinstance(cells, list) else list(cells)  # a CellBoxes as it is: sent as its boxes
        values = self._evaluate_once(path, asked)
        if not fresh and values.failure is not None and values.failure.reason in _FRESH_START_FAULTS:
            values = self._evaluate_once(path, asked)  # the workbook's own verdict, in a fresh worker
        return values

    def close(self) -> None:
        """Ask the worker to close its engine and leave; one that does not (busy past its
        limit) is killed, and what its engine left is removed from here."""
        self._stop(ask_first=True)

    def _stop(self, ask_first: bool) -> None:
        """End the worker: asked to close its engine first, or killed at once (a worker past its
        limit, dead, or failed: it answers nothing)."""
        if self._connection is not None:
            if ask_first:
                try:
                    self._connection.send(None)
                except (OSError, ValueError):
                    pass
            self._connection.close()
        if self._worker is not None:  # SIGTERM: a worker in Python closes its engine and leaves; SIGKILL if busy
            end_processes([self._worker], CLOSE_TIMEOUT_S if ask_first else 0.0, TERMINATE_GRACE_S)
            self.engine.close()  # what a killed worker's engine left (LibreOffice: its profile, by name)
        if self._scratch is not None:  # the copies a killed worker was computing (linked, dated ...)
            self._scratch()
        self._worker, self._connection, self._scratch, self._served = None, None, None, 0
        self._awaiting_ready = False

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _evaluate_once(self, path: Path, cells: list[CellRef]) -> WorkbookValues:
        if self._worker is None or not self._worker.is_alive() or self._served >= self.workbooks_per_worker:
            self.close()
            self._spawn()
        if self._awaiting_ready and (failure := self._await_ready()) is not None:
            return WorkbookValues(failure=failure)
        assert self._connection is not None and self._worker is not None
        try:
            spent_before = process_tree_cpu_seconds(self._worker.pid) if self._worker.pid is not None else None
            # a preparation another engine made counts against this one's limit as if it had made it
            charged = getattr(self.engine, "prepared_cpu_s", lambda *_: 0.0)(path, cells)
            self._connection.send((path, packed_cells(cells)))
            if (overrun := self._await_answer(None if spent_before is None else spent_before - charged)) is not None:
                self._stop(ask_first=False)
                return WorkbookValues(failure=WorkbookFailure("timeout", overrun))
            outcome = self._connection.recv()
            spent_after = process_tree_cpu_seconds(self._worker.pid) if self._worker.pid is not None else None
            if spent_before is not None and spent_after is not None:
                self.cpu_s += max(spent_after - spent_before, 0.0)
        except (EOFError, OSError):
            self._worker.join(5)
            failure = _death(self.name, self._worker.exitcode, self.memory_mb)
            self._stop(ask_first=False)
            return WorkbookValues(failure=failure)
        self._served += 1
        if isinstance(outcome, (WorkbookValues, AlignedValues)):
            return values_from_answer(outcome, cells)
        self._stop(ask_first=False)  # a worker that ran out of memory or raised is not trusted with the next workbook
        return WorkbookValues(failure=outcome)

    def _await_answer(self, spent_before: float | None) -> str | None:
        """Wait for the worker's answer to the workbook just sent; None once it is there, or
        how the workbook overran its limit: more than ``timeout_s`` CPU seconds spent by the
        worker and the processes it started (soffice, ssconvert), or, computing or not,
        :func:`~regrade.processes.cpu_time.wall_backstop_s` of wall clock (:mod:`regrade.processes.cpu_time`). The
        CPU time is read once more when the answer is there, so an answer counts by what it
        cost, not by when the polls fell."""
        assert self._connection is not None and self._worker is not None and self._worker.pid is not None
        pid, limit = self._worker.pid, self.timeout_s
        started = time.monotonic()
        while True:
            answered = self._connection.poll(POLL_S)
            spent_now = process_tree_cpu_seconds(pid)
            if spent_before is None or spent_now is None:  # no /proc: the limit is wall clock
                if not answered and time.monotonic() - started > limit:
                    return f"{self.name} took longer than {limit:g} s"
            elif spent_now - spent_before > limit:  # also once answered: when the polls fall decides nothing
                return f"{self.name} spent more than {limit:g} s of CPU time"
            if answered:
                return None
            if time.monotonic() - started > wall_backstop_s(limit):
                return f"{self.name} was still at work after {wall_backstop_s(limit):g} s"

    def _spawn(self) -> None:
        """A fresh worker, starting its engine (outside any workbook's time); :meth:`_await_ready` waits for it."""
        context = multiprocessing.get_context("fork")
        ours, theirs = context.Pipe(duplex=True)
        remove_stale_scratch()
        scratch = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{self.name}-worker-{os.getpid()}-")
        self._scratch = weakref.finalize(self, shutil.rmtree, scratch, ignore_errors=True)  # also at exit
        self.preload()
        reserved_mb = 0 if self._preloaded else self.engine.reserved_mb  # preloaded: in what the worker inherits
        self._worker = context.Process(target=_serve, args=(self.engine, self.memory_mb, reserved_mb, theirs, ours,
                                                            scratch), daemon=True)
        self._worker.start()
        theirs.close()
        self._connection = ours
        self._awaiting_ready = True

    def _await_ready(self) -> WorkbookFailure | None:
        """Wait for the worker's engine to say it is ready; None once it is, or why it is not."""
        assert self._connection is not None
        self._awaiting_ready = False
        try:
            ready = self._connection.poll(START_TIMEOUT_S) and self._connection.recv()
        except (EOFError, OSError):
            ready = None
        if ready is True:
            assert self._worker is not None
            spent = process_tree_cpu_seconds(self._worker.pid) if self._worker.pid is not None else None
            self.start_cpu_s += spent or 0.0
            return None
        self._stop(ask_first=False)
        return WorkbookFailure("crashed", f"{self.name} did not start in its worker" if not ready else str(ready))


SCRATCH_PREFIX = "regrade-"


def remove_stale_scratch() -> int:
    """Remove the worker folders whose maker no longer runs (a run killed with SIGKILL); how many.
    A folder of a live process, or of a pid now reused, is left alone."""
    removed = 0
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), f"{SCRATCH_PREFIX}*-worker-*-*")):
        owner = os.path.basename(folder).rsplit("-", 2)[-2]
        if not owner.isdigit() or _running(int(owner)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _death(engine: str, exitcode: int | None, memory_mb: int | None) -> WorkbookFailure:
    if exitcode == OUT_OF_MEMORY_EXIT:  # so short of memory that even the failure could not be sent
        return WorkbookFailure("memory-limit", f"{engine} needed more than {memory_mb} MB")
    if exitcode is not None and exitcode < 0:
        try:
            signame = signal.Signals(-exitcode).name
        except ValueError:
            signame = str(-exitcode)
        return WorkbookFailure("crashed", f"{engine} worker died with signal {signame}")
    return WorkbookFailure("crashed", f"{engine} worker exited with status {exitcode} before answering")


def inherited_address_space() -> int:
    """The bytes of address space this process holds now: what a forked worker inherits from its
    parent (Python, the engines' libraries, and whatever the parent mapped: a Formulon module
    evaluated in the parent reserves 4 GiB). The memory limit is counted on top of it, so a
    workbook gets ``memory_mb`` of its own whatever the parent holds. 0 where /proc is absent."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _serve(engine: Engine, memory_mb: int | None, reserved_mb: int, connection: Connection,
           parents_end: Connection, scratch: str) -> None:
    """The worker: evaluate each workbook sent until the parent goes away. Its temporary
    files go to ``scratch``, which the parent removes however the worker ends."""
    parents_end.close()  # so that the parent's death reads as the end of the requests
    gc.freeze()  # what it inherited is never collected here: no collection walks (and copies) those pages
    die_with_parent()  # even inside the engine's native code, where no orphan check runs
    tempfile.tempdir = scratch
    signal.signal(signal.SIGTERM, lambda signum, frame: _leave(engine))
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # a terminal's Ctrl-C: as SIGTERM, its owner stops too
        signal.signal(signal.SIGINT, lambda signum, frame: _leave(engine))
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # born where a case worker held it back
    os.environ["RUST_BACKTRACE"] = "0"
    faulthandler.disable()  # it holds its own copy of stderr; a crash is reported by exit status
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # engines print to both (IronCalc: "Unexpected feature ..." on stdout);
    os.dup2(devnull, 2)  # the worker answers through its pipe, and regrade's stdout carries data only
    sys.stdout = sys.stderr = open(os.devnull, "w")  # Python-level writes may not go through fd 1 and 2
    out_of_memory = WorkbookFailure("memory-limit", f"{engine.name} needed more than {memory_mb} MB")  # made before the limit
    if memory_mb:
        limit = inherited_address_space() + (memory_mb + reserved_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        engine.start()
        connection.send(True)
    except BaseException as exc:  # an engine that cannot start says so; the parent reports it per workbook
        connection.send(f"{engine.name} could not start: {type(exc).__name__}: {exc}")
        os._exit(0)
    parent = os.getppid()
    while True:
        try:
            while not connection.poll(ORPHAN_CHECK_S):
                if os.getppid() != parent:  # the parent died; a sibling may still hold our pipe open
                    engine.close()
                    os._exit(0)
            request = connection.recv()
        except (EOFError, OSError):
            request = None
        if request is None:  # the parent closes this engine, or went away
            engine.close()
            os._exit(0)
        path, packed = request
        forget_screenings()  # a workbook is screened here afresh, whatever this process or its parent saw before
        asked = unpacked_cells(packed)
        outcome = _evaluate(engine, path, asked, out_of_memory)
        try:
            connection.send(aligned_answer(outcome, asked) if isinstance(outcome, WorkbookValues) else outcome)
        except MemoryError:
            try:
                connection.send(out_of_memory)
            except MemoryError:
                os._exit(OUT_OF_MEMORY_EXIT)
        if not isinstance(outcome, WorkbookValues):
            os._exit(0)  # the parent replaces a worker that failed


def _evaluate(engine: Engine, path: Path, cells: list[CellRef],
              out_of_memory: WorkbookFailure) -> WorkbookValues | WorkbookFailure:
    try:
        try:
            return engine.evaluate(path, cells)
        except MemoryError:
            return out_of_memory
        except BaseException as exc:  # a Rust panic is a BaseException
            return WorkbookFailure("crashed", f"{engine.name} raised {type(exc).__name__}: {exc}")
    except MemoryError:  # memory ran out again while the first error was handled
        return out_of_memory


def _leave(engine: Engine) -> None:
    """The worker's answer to SIGTERM: close the engine (LibreOffice: kill its helper and soffice,
    remove its profile), then exit."""
    try:
        engine.close()
    finally:
        os._exit(0)
