"""Ending the processes regrade starts, one way for all: the engines' isolated workers
(:mod:`regrade.engines.isolation`) and the case workers (:mod:`regrade.run.pool`).

A process asked to leave gets a grace to close what it holds (LibreOffice: its soffice and
profile), then SIGTERM, which a worker in Python answers by closing and leaving, then SIGKILL
for one busy in native code (:func:`end_processes`). A child dies with the process that started
it (:func:`die_with_parent`), and a worker whose parent is gone stops its job and leaves
(:func:`leave_when_orphaned`), so a run killed at any point leaves no engine computing on.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from multiprocessing.process import BaseProcess
from typing import Callable, Sequence

ORPHAN_CHECK_S = 2.0  # how often a worker looks whether the process that started it is gone
KILL_WAIT_S = 5.0  # after SIGKILL, for the kernel to reap
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def end_processes(processes: Sequence[BaseProcess], asked_grace_s: float, terminate_grace_s: float) -> None:
    """End ``processes``, already asked to leave: ``asked_grace_s`` for all of them together to
    do so, then SIGTERM and ``terminate_grace_s``, then SIGKILL. Nothing waits past that."""
    for grace, end in ((asked_grace_s, "terminate"), (terminate_grace_s, "kill"), (KILL_WAIT_S, None)):
        deadline = time.monotonic() + grace
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
        if end is not None:
            for process in processes:
                if process.is_alive():
                    getattr(process, end)()


def die_with_parent() -> None:
    """For a child process (its first act, or ``preexec_fn``): be killed when the process that
    started it dies (a run killed with SIGTERM), even inside an engine's native code where no
    orphan check runs. Linux only; elsewhere the orphan checks do it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def leave_when_orphaned(stop: Callable[[], None]) -> None:
    """Call ``stop`` and end this process once the process that started it is gone (a run, or a
    Dask worker, killed with SIGKILL), even while it works: nothing else would, and its engines'
    processes, soffice among them, would wait for work forever. A thread checks every
    :data:`ORPHAN_CHECK_S`; the parent's death signal is not used, as it follows the thread that
    started the worker, not the process."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_CHECK_S)
        stop()
        os._exit(1)

    threading.Thread(target=watch, name="regrade-orphan-check", daemon=True).start()
