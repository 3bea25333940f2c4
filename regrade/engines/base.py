"""The one protocol every engine follows (the values it returns: :mod:`regrade.values`)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

from regrade.values import CellRef, WorkbookValues


@runtime_checkable
class Engine(Protocol):
    """An engine evaluates the formulas of a workbook and reports cell values.

    ``name`` is the registry key; ``full`` is True for engines that recompute
    formulas (False for the cached, value-only view).
    """

    name: str
    full: bool

    def version(self) -> str:
        """The engine's version string, recorded in provenance."""
        ...

    def unavailable_reason(self) -> str | None:
        """None when the engine can run here, otherwise why not."""
        ...

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        """Values of ``cells`` in the workbook at ``path``; never raises for a bad file."""
        ...
