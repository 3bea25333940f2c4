"""A deadline for the work done for one case outside the engines' workers.

Each engine runs a workbook in its own worker under the workbook's time and memory limit
(:mod:`regrade.engines.isolation`). What regrade does besides, in the calling process
(reading the golden's cached values and formula graph, the output's array formulas,
conformance's check of contradicting caches), runs under :func:`deadline`: past it the
case is ``timeout``, and the run goes on. The deadline is a limit, as the engines' are; no
verdict on a case that finishes in time depends on the clock.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


class DeadlineExceeded(Exception):
    """The case's work outside the engines took longer than its limit."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`DeadlineExceeded` in this thread once ``seconds`` have passed.

    Works in the main thread of a process on a system with SIGALRM (the CLI, a pool worker);
    elsewhere it limits nothing. Nested deadlines keep the outer one.
    """
    usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not usable or seconds <= 0 or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise DeadlineExceeded(f"the case took longer than its limit of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
