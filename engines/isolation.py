"""Run an engine on one workbook in a worker process, with a time and memory limit.

Engines fail in ways a ``try`` cannot catch: IronCalc can panic (a Rust panic is a
``BaseException``), a native library can segfault, an evaluation can loop forever.
:class:`IsolatedEngine` wraps any engine so that each workbook is evaluated in a
forked child; a crash, a timeout or an exhausted memory limit becomes a
:class:`WorkbookFailure` for that workbook and the run goes on.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import resource
import signal
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Sequence

from engines.base import CellRef, Engine, WorkbookFailure, WorkbookValues

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 4096
OUT_OF_MEMORY_EXIT = 3  # a worker that could not even report running out of memory


class IsolatedEngine:
    """The same engine, one forked worker per workbook."""

    def __init__(self, engine: Engine, timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int | None = DEFAULT_MEMORY_MB):
        self.engine = engine
        self.name = engine.name
        self.full = engine.full
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb

    def version(self) -> str:
        return self.engine.version()

    def unavailable_reason(self) -> str | None:
        return self.engine.unavailable_reason()

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        worker = context.Process(target=_work, args=(self.engine, path, list(cells), self.memory_mb, sender), daemon=True)
        worker.start()
        sender.close()
        try:
            if not receiver.poll(self.timeout_s):
                return WorkbookValues(
                    failure=WorkbookFailure("timeout", f"{self.name} took longer than {self.timeout_s:g} s")
                )
            try:
                outcome = receiver.recv()
            except (EOFError, OSError):
                worker.join(5)
                return WorkbookValues(failure=_death(self.name, worker.exitcode))
        finally:
            receiver.close()
            if worker.is_alive():
                worker.kill()
            worker.join(5)
        if isinstance(outcome, WorkbookValues):
            return outcome
        return WorkbookValues(failure=outcome)


def _death(engine: str, exitcode: int | None) -> WorkbookFailure:
    if exitcode == OUT_OF_MEMORY_EXIT:
        return WorkbookFailure("memory-limit", f"{engine} ran out of memory under its limit")
    if exitcode is not None and exitcode < 0:
        try:
            signame = signal.Signals(-exitcode).name
        except ValueError:
            signame = str(-exitcode)
        return WorkbookFailure("crashed", f"{engine} worker died with signal {signame}")
    return WorkbookFailure("crashed", f"{engine} worker exited with status {exitcode} before answering")


def _work(engine: Engine, path: Path, cells: list[CellRef], memory_mb: int | None, sender: Connection) -> None:
    os.environ["RUST_BACKTRACE"] = "0"
    faulthandler.disable()  # it holds its own copy of stderr; a crash is reported by exit status
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # engines print to both (IronCalc: "Unexpected feature ..." on stdout);
    os.dup2(devnull, 2)  # the worker answers through its pipe, and regrade's stdout carries data only
    sys.stdout = sys.stderr = open(os.devnull, "w")  # Python-level writes may not go through fd 1 and 2
    out_of_memory = WorkbookFailure("memory-limit", f"{engine.name} needed more than {memory_mb} MB")  # made before the limit
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    outcome: WorkbookValues | WorkbookFailure = out_of_memory
    try:
        try:
            outcome = engine.evaluate(path, cells)
        except MemoryError:
            outcome = out_of_memory
        except BaseException as exc:  # a Rust panic is a BaseException
            outcome = WorkbookFailure("crashed", f"{engine.name} raised {type(exc).__name__}: {exc}")
    except MemoryError:  # memory ran out again while the first error was handled
        outcome = out_of_memory
    try:
        sender.send(outcome)
    except MemoryError:
        try:
            sender.send(out_of_memory)
        except MemoryError:
            os._exit(OUT_OF_MEMORY_EXIT)
    finally:
        sender.close()
    os._exit(0)
