"""Case workers: processes that grade a run's cases one at a time, each over a pipe of its own.

``regrade rescore --workers N`` grades in N case workers (:func:`grade_in_workers`); on Dask
each Dask worker process has one (:mod:`regrade.run.dask_cluster`). What a worker does is a
:class:`WorkerJob`: open the engines once, grade each case it is sent, close them when it
leaves (for rescoring, :mod:`regrade.run`).

Two facts shape it:

- **Ctrl-C reaches every process of the terminal's group.** An exception raised wherever
  the main thread happens to be can leave a lock of a pool's own machinery held; a rescore
  built on ``concurrent.futures`` once waited forever after a Ctrl-C for that reason. So the
  parent only notes a Ctrl-C (:class:`CtrlC`), between answers stops its workers and then
  raises ``KeyboardInterrupt`` itself; a worker holds Ctrl-C back except while it grades, so
  one ends its case, closes its engines and leaves, and is never stopped inside a pipe's
  read or write.
- **A worker can die** (the kernel's out-of-memory killer, a crash no engine limit caught).
  The parent knows which case each worker holds, so a death costs that case only: the rest
  go on, and once they are done the case is tried again alone in a fresh worker; a case
  that kills that one too is reported to the caller (for rescoring, ``crashed``).
"""

from __future__ import annotations

import functools
import gc
import itertools
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Callable, Container, Hashable, Iterable, Sequence

from regrade.processes.supervisor import end_processes, leave_when_orphaned

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext, SpawnContext

    Context = ForkContext | SpawnContext

STOP_GRACE_S = 30.0  # a worker asked to leave (or told of a Ctrl-C) closing its engines, before SIGTERM
KILL_GRACE_S = 5.0  # after SIGTERM, before SIGKILL
# A case worker's garbage collection: a collection of the youngest objects after 20,000 new ones,
# not Python's 700. Reading a graded range makes hundreds of thousands of cells, nearly none in a
# cycle; at Python's thresholds, a case worker grading bench/rescore.py's 200 files in one process
# spent 1.8 to 2.1 of its 8 to 10 CPU seconds collecting (6,071 young, 552 middle and 19 full
# collections; gc.callbacks), at these 0.7 to 1.0 (1,005, 91 and 5, most while starting).
GC_THRESHOLDS = (20_000, 10, 10)
# A warm case worker's goldens of runs before: a later run sends it their cases first, as it may
# still hold them (regrade.grading.grade.load_golden keeps up to a million cells of goldens read).
KNOWN_GROUPS = 4096
AFFINITY_LOOKAHEAD = 64  # groups looked over for one a worker had: a take costs no more however long the run


@dataclass(frozen=True)
class WorkerJob:
    """What a case worker runs, in the worker: ``start`` once (open the engines), ``grade``
    for each case sent, ``stop`` when it leaves (close them). Module-level functions (or
    partials of them), so that a spawned worker can be sent them.

    ``grade_or_later``, where given, is tried first on each case: None means "send it again
    later" (the engines it needs are still starting); the parent sends it once more, after the
    cases queued behind it, to ``grade``, which always answers."""

    start: Callable[[], None]
    grade: Callable[[Any], dict]
    stop: Callable[[], None]
    grade_or_later: Callable[[Any], dict | None] | None = None


class WorkerDied(Exception):
    """The worker ended before it answered."""


class CaseWorker:
    """One case worker process and the parent's end of its pipe. ``case`` is the index of the
    case it is grading, None while idle."""

    def __init__(self, job: WorkerJob, context: Context,
                 siblings: Sequence[Connection] = ()):
        ours, theirs = context.Pipe(duplex=True)
        forked = context.get_start_method() == "fork"
        inherited = [ours, *siblings] if forked else []  # a forked worker's copies of the parent's ends: closed
        held = _hold_ctrl_c()  # born with Ctrl-C held back: a worker lets it in only while grading
        try:
            self.process = context.Process(target=_serve, args=(job, theirs, inherited), name="regrade-case-worker")
            self.process.start()
        finally:
            _release_ctrl_c(held)
        theirs.close()
        self.connection = ours
        self.case: int | None = None
        self.kept: Hashable = None  # what it kept from its last case (grade_in_workers' affinity)
        self.known: dict[Hashable, None] = {}  # the groups it graded, the latest last: what it may still hold

    def graded(self, group: Hashable) -> None:
        """Note that it takes a case of ``group`` (at most :data:`KNOWN_GROUPS` are kept in mind)."""
        self.known.pop(group, None)
        self.known[group] = None
        if len(self.known) > KNOWN_GROUPS:
            del self.known[next(iter(self.known))]

    def send(self, index: int, case: Any, first_try: bool = False) -> None:
        """Send a case; on its ``first_try`` the job may answer None, "later" (:class:`WorkerJob`)."""
        try:
            self.connection.send((case, first_try))
        except (OSError, ValueError):
            pass  # a worker already gone: its sentinel says so to the next wait
        self.case = index

    def answer(self) -> dict | None:
        """The grading of the case sent (None: send it again later), once the pipe or the
        process's end has been seen; :class:`WorkerDied` if the worker ended without one."""
        self.case = None
        try:
            if self.connection.poll():
                return self.connection.recv()
        except (EOFError, OSError):
            pass
        raise WorkerDied(f"the case worker ended with status {self.process.exitcode}")

    def grade(self, case: Any) -> dict:
        """Send one case and wait for its grading (:class:`WorkerDied` if the worker ends first)."""
        self.send(0, case)
        multiprocessing.connection.wait([self.connection, self.process.sentinel])
        grading = self.answer()
        assert grading is not None  # not a first try: the job grades it
        return grading

    def ask_to_leave(self, interrupt: bool) -> None:
        """Ask the worker to close its engines and end; a busy one is first told of the Ctrl-C
        (a terminal's has reached it already; a ``kill -INT`` of the parent alone has not)."""
        if interrupt and self.case is not None and self.process.pid is not None and self.process.is_alive():
            try:
                os.kill(self.process.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        try:
            self.connection.send(None)
        except (OSError, ValueError):
            pass


def stop_workers(workers: Iterable[CaseWorker], interrupt: bool = False) -> None:
    """End every worker: asked first, given :data:`STOP_GRACE_S` together to close their
    engines, then SIGTERM, then SIGKILL; nothing waits past that."""
    workers = list(workers)
    for worker in workers:
        worker.ask_to_leave(interrupt)
    end_processes([worker.process for worker in workers], STOP_GRACE_S, KILL_GRACE_S)
    for worker in workers:
        worker.connection.close()
        if not worker.process.is_alive():
            worker.process.close()


class WarmPool:
    """Case workers kept between runs, for a long-lived process (``regrade serve``): a run with
    the same ``key`` (its settings) takes the workers the last one left, their engines open. The
    workers are spawned, never forked (the process that keeps them has threads). A run that ends
    by an exception (a Ctrl-C, a cancel) stops them; :meth:`close` stops them for good."""

    def __init__(self) -> None:
        self.key: Hashable = None
        self.workers: list[CaseWorker] = []
        self.context = multiprocessing.get_context("spawn")

    def take(self, key: Hashable) -> list[CaseWorker]:
        """The workers of a run with ``key`` (another key's are stopped first)."""
        if key != self.key:
            self.close()
            self.key = key
        self.workers[:] = [w for w in self.workers if w.process.is_alive()]
        return self.workers

    def close(self) -> None:
        stop_workers(self.workers)
        self.workers.clear()
        self.key = None


def grade_in_workers(cases: Sequence[Any], todo: Iterable[int], workers: int, job: WorkerJob,
                     finish: Callable[[int, dict], None], affinity: Callable[[Any], Hashable] | None = None,
                     context: Context | None = None, warm: WarmPool | None = None,
                     warm_key: Hashable = None) -> list[int]:
    """Grade ``cases[i]`` for each ``i`` in ``todo`` in ``workers`` case workers, calling
    ``finish(i, grading)`` in this process as each is answered. Returns the cases that ended
    their worker twice (the second time alone, in a fresh worker). A Ctrl-C stops the workers
    and raises ``KeyboardInterrupt`` here, with every case answered so far finished.

    Cases are sent in ``todo``'s order, but for ``affinity``: cases with the same
    ``affinity(case)`` (what a worker keeps from one case to the next, such as the golden it
    read) go to the worker that had the last of them, and an idle worker passes over the cases
    of a group another worker is on (:class:`_Queue`). With a ``warm`` pool, the workers come
    from it (those of the last run with the same ``warm_key``, their engines open) and stay in
    it when the run ends well; an idle one takes first a group it had in a run before, then
    one no other worker had. Which worker grades a case never changes its grading."""
    if warm is not None:
        context = warm.context
    elif context is None:
        forks = "fork" in multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork") if forks else multiprocessing.get_context("spawn")
    queue = _Queue(cases, todo, affinity)
    died: list[int] = []
    pool: list[CaseWorker] = warm.take(warm_key) if warm is not None else []
    for worker in pool:
        worker.kept = None  # another run's golden: no affinity to it
    later: set[int] = set()  # cases a worker asked to have again later (job.grade_or_later): their last try
    with CtrlC() as ctrl_c:
        try:
            while queue or any(w.case is not None for w in pool):
                while queue and (idle := _idle_worker(pool, workers, job, context)) is not None:
                    others = [w.known for w in pool if w is not idle and w.known]
                    index, idle.kept = queue.take(idle.kept, {w.kept for w in pool if w.case is not None},
                                                  idle.known, (lambda group: any(group in known for known in others))
                                                  if others else None)
                    if affinity is not None:
                        idle.graded(idle.kept)
                    idle.send(index, cases[index], first_try=job.grade_or_later is not None and index not in later)
                for worker in _answered(pool, ctrl_c):
                    held = worker.case
                    assert held is not None
                    try:
                        grading = worker.answer()
                    except WorkerDied:
                        pool.remove(worker)
                        stop_workers([worker])
                        died.append(held)
                        continue
                    if grading is None:  # its engines are starting: after the cases queued now
                        later.add(held)
                        queue.put_back(held)
                        continue
                    finish(held, grading)
                    ctrl_c.raise_if_pressed()
            if warm is None:
                stop_workers(pool)
            pool = []  # ended well: nothing left to stop (a warm pool keeps its workers)
            return [index for index in died if not _graded_alone(cases, index, job, context, finish, ctrl_c)]
        finally:
            stop_workers(pool, interrupt=ctrl_c.pressed)  # an exception: every worker, a warm pool's too
            pool.clear()


def map_in_workers(function: Callable[[Any], Any], items: Sequence[Any], workers: int,
                   on_done: Callable[[int], None], if_died: Callable[[Any], Any],
                   affinity: Callable[[Any], Hashable] | None = None, context: Context | None = None) -> list[Any]:
    """``function(item)`` for each of ``items``, in ``workers`` case workers that open nothing
    ahead, in the order of ``items``; ``on_done(index)`` as each is answered. An item whose worker
    died twice gets ``if_died(item)``. ``function`` is sent to the workers: a module-level
    function, or a partial of one. ``affinity`` and ``context`` as :func:`grade_in_workers`."""
    found: dict[int, Any] = {}

    def finish(index: int, answer: dict) -> None:
        found[index] = answer["value"]
        on_done(index)

    job = WorkerJob(_nothing, functools.partial(_answer_of, function), _nothing)
    for index in grade_in_workers(items, range(len(items)), workers, job, finish, affinity, context):
        finish(index, {"value": if_died(items[index])})
    return [found[index] for index in range(len(items))]


def _answer_of(function: Callable[[Any], Any], item: Any) -> dict:
    return {"value": function(item)}


def _nothing() -> None:
    """The start and stop of a job that opens nothing."""


def _idle_worker(pool: list[CaseWorker], size: int, job: WorkerJob,
                 context: Context) -> CaseWorker | None:
    """An idle worker of the pool, a new one while it has fewer than ``size``, or None."""
    for worker in pool:
        if worker.case is None:
            return worker
    if len(pool) < size:
        pool.append(CaseWorker(job, context, [w.connection for w in pool]))
        return pool[-1]
    return None


class _Queue:
    """The cases still to send, in groups of the same affinity (one group per case without
    one), the groups in the order of their first case."""

    def __init__(self, cases: Sequence[Any], todo: Iterable[int], affinity: Callable[[Any], Hashable] | None):
        self.groups: OrderedDict[Hashable, deque[int]] = OrderedDict()  # first group found at once, however many left
        for index in todo:
            self.groups.setdefault(affinity(cases[index]) if affinity is not None else ("case", index),
                                   deque()).append(index)

    def __bool__(self) -> bool:
        return bool(self.groups)

    def put_back(self, index: int) -> None:
        """A case to send again after every case queued now (a group of its own)."""
        self.groups[("again", index)] = deque([index])

    def take(self, kept: Hashable, busy: set[Hashable], known: Container[Hashable] = (),
             known_elsewhere: Callable[[Hashable], bool] | None = None) -> tuple[int, Hashable]:
        """A case and its group for a worker that kept ``kept``, while busy workers keep
        ``busy``: the next of its own group; else the first group no busy worker keeps that it
        ``known`` (had in a run before), then that no other worker had (``known_elsewhere``),
        both among the next :data:`AFFINITY_LOOKAHEAD` groups; then any; else the first."""
        group = kept if kept in self.groups else None
        if group is None and (known or known_elsewhere is not None):
            ahead = list(itertools.islice(self.groups, AFFINITY_LOOKAHEAD))
            if known:
                group = next((g for g in ahead if g in known and g not in busy), None)
            if group is None and known_elsewhere is not None:
                group = next((g for g in ahead if g not in busy and not known_elsewhere(g)), None)
        if group is None:
            group = next((g for g in self.groups if g not in busy), None)
        if group is None:
            group = next(iter(self.groups))
        indices = self.groups[group]
        index = indices.popleft()
        if not indices:
            del self.groups[group]
        return index, group


def _answered(pool: list[CaseWorker], ctrl_c: CtrlC) -> list[CaseWorker]:
    """The busy workers with an answer, or whose process ended, once there is one."""
    busy = [w for w in pool if w.case is not None]
    ready = set(multiprocessing.connection.wait([*(w.connection for w in busy), *(w.process.sentinel for w in busy),
                                                 ctrl_c.reader]))
    ctrl_c.raise_if_pressed()
    return [w for w in busy if w.connection in ready or w.process.sentinel in ready]


def _graded_alone(cases: Sequence[Any], index: int, job: WorkerJob, context: Context,
                  finish: Callable[[int, dict], None], ctrl_c: CtrlC) -> bool:
    """Grade a case whose worker died, alone in a fresh worker; False if it ends that one too."""
    worker = CaseWorker(job, context)
    try:
        worker.send(index, cases[index])
        while not _answered([worker], ctrl_c):
            pass
        grading = worker.answer()
    except WorkerDied:
        return False
    finally:
        stop_workers([worker], interrupt=ctrl_c.pressed)
    assert grading is not None  # not a first try: the job grades it
    finish(index, grading)
    return True


class CtrlC:
    """While entered, in the main thread, a Ctrl-C (SIGINT) is noted, not raised: ``pressed``
    becomes true and a byte arrives on ``reader``, which a wait can include; the code that
    waits raises ``KeyboardInterrupt`` where it is safe to (:meth:`raise_if_pressed`). Where
    SIGINT is ignored (``nohup``, a background job) or handled by someone else's handler, or
    outside the main thread, nothing changes."""

    def __init__(self) -> None:
        self.pressed = False
        self.reader = -1
        self._writer = -1
        self._previous: Any = None

    def __enter__(self) -> CtrlC:
        self.reader, self._writer = os.pipe()
        os.set_blocking(self._writer, False)
        if threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous = signal.signal(signal.SIGINT, self._note)
        return self

    def _note(self, signum: int, frame: object) -> None:
        self.pressed = True
        try:
            os.write(self._writer, b"\0")
        except OSError:
            pass  # the pipe is full: a byte is there already

    def raise_if_pressed(self) -> None:
        if self.pressed:
            raise KeyboardInterrupt

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        os.close(self.reader)
        os.close(self._writer)


def _hold_ctrl_c() -> Any:
    """Hold SIGINT back in this thread (a process started now is born with it held); the mask before."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if hasattr(signal, "pthread_sigmask") else None


def _release_ctrl_c(previous: Any) -> None:
    if previous is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _serve(job: WorkerJob, connection: Connection, inherited: list[Connection]) -> None:
    """The case worker: start the job, grade each case sent until told to leave (None) or the
    parent is gone, then stop the job. Ctrl-C is let in only while a case is graded; it ends
    the worker without an answer (the parent is stopping) and without a traceback."""
    for end in inherited:
        end.close()
    _hold_ctrl_c()  # forked: held already; spawned: from here on
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # started with Ctrl-C ignored (nohup, &): kept so
        signal.signal(signal.SIGINT, signal.default_int_handler)
    gc.freeze()  # what it inherited or imported is never collected: no full collection walks those objects again
    gc.set_threshold(*GC_THRESHOLDS)  # its engines' workers, forked at the start, inherit both
    job.start()
    leave_when_orphaned(job.stop)
    try:
        while True:
            try:
                sent = connection.recv()
            except (EOFError, OSError):
                return
            if sent is None:
                return
            case, first_try = sent
            try:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
                grading = job.grade_or_later(case) if first_try and job.grade_or_later else job.grade(case)
            finally:
                _hold_ctrl_c()
            try:
                connection.send(grading)
            except (OSError, ValueError):
                return
    except KeyboardInterrupt:
        return
    finally:
        job.stop()
