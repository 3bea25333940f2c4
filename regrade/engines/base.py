"""The one protocol every engine follows, and the settings it is opened with.

An engine's values are :mod:`regrade.values`. Every capability the registry, the runner
and the graders use is declared here; nothing is probed with ``getattr``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar, Protocol, Sequence, runtime_checkable

from regrade.values import CellRef, WorkbookValues

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 4096
DEFAULT_BRIDGE_WORK = 40_000_000


@dataclass(frozen=True)
class EngineSettings:
    """How an engine is opened; recorded in provenance and part of the results-cache key.

    ``timeout_s`` and ``memory_mb`` limit everything done for one workbook (screening,
    analysis, the engine, the rules); ``memory_mb`` is address space beyond what the worker
    inherits from the process that forked it (:func:`regrade.engines.isolation.inherited_address_space`). ``as_grader``: the engine stands for a value-only
    grader's recalculation and keeps that grader's blind spots (no mending of totals).
    ``bridge_work``: how many formula-cell evaluations IronCalc's bridge may add for one
    workbook before it bridges only the functions IronCalc lacks (a count, never a clock).
    """

    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_mb: int | None = DEFAULT_MEMORY_MB
    as_grader: bool = False
    bridge_work: int = DEFAULT_BRIDGE_WORK


@runtime_checkable
class Engine(Protocol):
    """An engine evaluates the formulas of a workbook and reports cell values.

    ``name`` is the registry key; ``full`` is True for engines that recompute formulas
    (False for the cached, value-only view); ``in_default_consensus`` says whether a full
    engine joins the consensus unless ``--engines`` says otherwise.
    """

    @property
    def name(self) -> str: ...

    @property
    def full(self) -> bool: ...

    @property
    def in_default_consensus(self) -> bool: ...

    @property
    def settings(self) -> EngineSettings: ...

    @property
    def reserved_mb(self) -> int:
        """Address space the engine reserves without using it (Formulon's WebAssembly memory),
        added to its worker's memory limit so that the limit bounds what it uses."""
        ...

    def version(self) -> str:
        """The engine's version string, recorded in provenance."""
        ...

    def unavailable_reason(self) -> str | None:
        """None when the engine can run here, otherwise why not."""
        ...

    def start(self) -> None:
        """Get ready to evaluate (LibreOffice starts soffice); called once in the worker
        before the first workbook, outside any workbook's time limit."""
        ...

    def preload(self) -> None:
        """Do once, in the process that forks the engine's workers, what every worker would
        otherwise do again when it starts (Formulon compiles its WebAssembly module); the
        workers inherit it. Outside any workbook's time limit; safe to call twice."""
        ...

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        """Values of ``cells`` in the workbook at ``path``; never raises for a bad file."""
        ...

    def close(self) -> None:
        """Release what the engine holds (processes, files); safe to call twice."""
        ...


EngineFactory = Callable[[EngineSettings], Engine]


WORKBOOKS_PER_WORKER = 100  # an engine's isolating worker is replaced after this many (EngineBase.workbooks_per_worker)


class EngineBase:
    """Defaults for the optional parts of :class:`Engine`: nothing to start or close."""

    in_default_consensus: ClassVar[bool] = True
    reserved_mb: ClassVar[int] = 0
    # workbooks one isolating worker evaluates before a fresh one replaces it
    # (:mod:`regrade.engines.isolation`): an engine whose start is dear keeps its worker longer
    workbooks_per_worker: ClassVar[int] = WORKBOOKS_PER_WORKER

    def __init__(self, settings: EngineSettings = EngineSettings()) -> None:
        self.settings = settings

    def start(self) -> None:
        return None

    def preload(self) -> None:
        return None

    def close(self) -> None:
        return None
