"""One workbook evaluated by several engines at once, each in its own worker process.

A case's full engines used to compute its workbook one after another; each runs in a worker
process of its own (:mod:`regrade.engines.isolation`), so nothing but the order made them wait
for each other. :func:`evaluate_together` hands the workbook to every engine's worker first
and then waits for all the answers, so that while one engine waits (for soffice, for a
pipe, for a worker being replaced) another computes.

Nothing an engine answers depends on this: each worker computes alone in its own process,
its time limit counts its own CPU seconds (:mod:`regrade.processes.cpu_time`), and what it
remembers (:mod:`regrade.engines.shared_work`) is its own. An evaluation goes in three steps
(:class:`PendingEvaluation`): begun in the thread that owns the engines, where a worker may be
started (a fork, which must not happen while other threads run); answered in a thread of its
own, which only sends the workbook, waits and receives; finished back in the owning thread,
where a crash in a worker that had served other workbooks is tried again in a fresh one.
An engine computing in this process (no worker of its own) is evaluated in the owning
thread, one after another, as before.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from regrade.engines.base import Engine
from regrade.values import CellRef, WorkbookValues


def _as_is(values: WorkbookValues) -> WorkbookValues:
    return values


@dataclass
class PendingEvaluation:
    """One workbook handed to one engine: :attr:`answer` gets its values (in any thread when
    ``in_worker``, never starting a process), :attr:`finish` completes them in the owning thread."""

    answer: Callable[[], WorkbookValues]
    finish: Callable[[WorkbookValues], WorkbookValues] = _as_is
    in_worker: bool = False  # the answer comes from a worker process: waiting for it leaves this process idle

    @classmethod
    def known(cls, values: WorkbookValues) -> PendingEvaluation:
        """An evaluation whose values are already there (remembered, or a failure to start)."""
        return cls(lambda: values)


def begin_evaluation(engine: Engine, path: Path, cells: Sequence[CellRef]) -> PendingEvaluation:
    """``engine``'s evaluation of ``cells`` in ``path``, begun here: in steps where the engine
    offers them (``begin``), otherwise its plain ``evaluate``, done in the owning thread."""
    begin = getattr(engine, "begin", None)
    if begin is not None:
        pending: PendingEvaluation = begin(path, cells)
        return pending
    return PendingEvaluation(lambda: engine.evaluate(path, cells))


def evaluate_together(engines: Sequence[Engine], path: Path, cells: Sequence[CellRef]) -> dict[str, WorkbookValues]:
    """Each engine's values of ``cells`` in ``path``, by engine name, the engines' workers
    computing at the same time; the same values as evaluating them one after another."""
    pending = {engine.name: begin_evaluation(engine, path, cells) for engine in engines}
    in_workers = [name for name, evaluation in pending.items() if evaluation.in_worker]
    answers: dict[str, WorkbookValues] = {}
    if len(in_workers) > 1:
        with ThreadPoolExecutor(max_workers=len(in_workers), thread_name_prefix="regrade-engine") as pool:
            futures = {name: pool.submit(pending[name].answer) for name in in_workers}
            answers = {name: future.result() for name, future in futures.items()}
    for name, evaluation in pending.items():  # in the owning thread: in-process engines, and every finish
        answers[name] = evaluation.finish(answers[name] if name in answers else evaluation.answer())
    return {engine.name: answers[engine.name] for engine in engines}
