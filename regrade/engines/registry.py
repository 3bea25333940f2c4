"""Engines by name, and opening them ready to run on untrusted workbooks."""

from __future__ import annotations

from typing import Callable

from regrade.engines.base import Engine
from regrade.engines.cached import CachedEngine
from regrade.engines.formulas import FormulasEngine
from regrade.engines.gnumeric import GnumericEngine
from regrade.engines.ironcalc import IronCalcEngine
from regrade.engines.isolation import DEFAULT_TIMEOUT_S, IsolatedEngine
from regrade.engines.libreoffice import LibreOfficeEngine
from regrade.engines.pycel import PycelEngine

ENGINES: dict[str, Callable[[], Engine]] = {
    CachedEngine.name: CachedEngine,
    IronCalcEngine.name: IronCalcEngine,
    LibreOfficeEngine.name: LibreOfficeEngine,
    GnumericEngine.name: GnumericEngine,
    FormulasEngine.name: FormulasEngine,
    PycelEngine.name: PycelEngine,
}
FULL_ENGINES = [name for name, factory in ENGINES.items() if getattr(factory, "full", False)]


def get_engine(name: str) -> Engine:
    try:
        return ENGINES[name]()
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINES)}") from None


def open_engine(name: str, timeout_s: float = DEFAULT_TIMEOUT_S, as_grader: bool = False) -> Engine:
    """The engine with its time limit, in a worker process unless it isolates itself.

    ``as_grader``: the engine is a value-only grader's recalculation, so it must keep that
    grader's blind spots; regrade's mending of them (gnumeric's SUBTOTAL) stays off.
    """
    factory = ENGINES.get(name)
    if factory is None:
        raise ValueError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINES)}")
    if getattr(factory, "isolates_itself", False):
        return factory(timeout_s=timeout_s)  # type: ignore[call-arg]
    engine = factory()
    if as_grader and hasattr(engine, "mends"):
        engine.mends = False  # type: ignore[attr-defined]
    if hasattr(engine, "timeout_s"):
        engine.timeout_s = timeout_s  # type: ignore[attr-defined]
    return IsolatedEngine(engine, timeout_s=timeout_s)


def available_full_engines() -> list[str]:
    """The full engines that can run on this machine."""
    return [name for name in FULL_ENGINES if get_engine(name).unavailable_reason() is None]


def default_full_engines() -> list[str]:
    """The available full engines that form the consensus unless --engines says otherwise."""
    return [name for name in available_full_engines() if getattr(ENGINES[name], "in_default_consensus", True)]
