"""A deadline for the work done for one case outside the engines' workers.

Each engine runs a workbook in its own worker under the workbook's time and memory limit
(:mod:`regrade.engines.isolation`). What regrade does besides, in the calling process
(reading the golden's cached values and formula graph, the output's array formulas,
conformance's check of contradicting caches), runs under :func:`deadline`: past it the
case is ``timeout``, and the run goes on. Like the engines' limits, the deadline counts
CPU seconds (this process's, not the time it waits for an engine), with a wall clock only
as a backstop for a stall that computes nothing (:mod:`regrade.processes.cpu_time`): a busy machine
does not move it, and no verdict on a case that finishes in time depends on the clock.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

from regrade.processes.cpu_time import wall_backstop_s


class DeadlineExceeded(Exception):
    """The case's work outside the engines took longer than its limit."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`DeadlineExceeded` in this thread once this process has spent ``seconds``
    of CPU time, or :func:`~regrade.processes.cpu_time.wall_backstop_s` of them have passed on the clock.

    Works in the main thread of a process on a system with SIGPROF and SIGALRM (the CLI, a
    pool worker); elsewhere it limits nothing. Nested deadlines keep the outer one.
    """
    usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not usable or seconds <= 0 or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        yield
        return

    def spent(signum: int, frame: object) -> None:
        raise DeadlineExceeded(f"the case spent more than its limit of {seconds:g} s of CPU time")

    def stalled(signum: int, frame: object) -> None:
        raise DeadlineExceeded(f"the case was still at work after {wall_backstop_s(seconds):g} s")

    previous = signal.signal(signal.SIGPROF, spent), signal.signal(signal.SIGALRM, stalled)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, wall_backstop_s(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous[0])
        signal.signal(signal.SIGALRM, previous[1])
