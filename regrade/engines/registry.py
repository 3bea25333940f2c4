"""Engines by name, and opening them ready to run on untrusted workbooks."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from regrade.engines.base import DEFAULT_BRIDGE_WORK, DEFAULT_TIMEOUT_S, Engine, EngineFactory, EngineSettings
from regrade.engines.cached import CachedEngine
from regrade.engines.formulas import FormulasEngine
from regrade.engines.formulon import FormulonEngine
from regrade.engines.gnumeric import GnumericEngine
from regrade.engines.ironcalc.engine import IronCalcEngine
from regrade.engines.isolation import IsolatedEngine
from regrade.engines.libreoffice.engine import LibreOfficeEngine
from regrade.engines.pycel import PycelEngine


@dataclass(frozen=True)
class EngineInfo:
    """What the registry knows of an engine before opening it."""

    name: str
    full: bool  # recomputes formulas (False: the cached, value-only view)
    in_default_consensus: bool  # joins the consensus unless --engines says otherwise
    make: EngineFactory


ENGINES: dict[str, EngineInfo] = {
    kind.name: EngineInfo(kind.name, kind.full, kind.in_default_consensus, kind)
    for kind in (CachedEngine, IronCalcEngine, LibreOfficeEngine, FormulonEngine, GnumericEngine, FormulasEngine,
                 PycelEngine)
}
FULL_ENGINES = [name for name, info in ENGINES.items() if info.full]


def engine_info(name: str) -> EngineInfo:
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINES)}") from None


def get_engine(name: str, settings: EngineSettings = EngineSettings()) -> Engine:
    """The engine itself, in this process (for its version and availability, or a test)."""
    return engine_info(name).make(settings)


def open_engine(name: str, timeout_s: float = DEFAULT_TIMEOUT_S, as_grader: bool = False,
                bridge_work: int = DEFAULT_BRIDGE_WORK) -> Engine:
    """The engine in a worker process, everything it does for one workbook under that
    workbook's time and memory limit (:mod:`regrade.engines.isolation`).

    ``as_grader``: the engine is a value-only grader's recalculation, so it must keep that
    grader's blind spots; regrade's mending of them (gnumeric's SUBTOTAL) stays off.
    """
    settings = EngineSettings(timeout_s=timeout_s, as_grader=as_grader, bridge_work=bridge_work)
    return IsolatedEngine(engine_info(name).make(settings))


def available_full_engines() -> list[str]:
    """The full engines that can run on this machine."""
    return [name for name in FULL_ENGINES if get_engine(name).unavailable_reason() is None]


def default_full_engines() -> list[str]:
    """The available full engines that form the consensus unless --engines says otherwise.
    Only those are asked, all at once: asking imports an engine's package or runs its
    programs (``soffice --version``), and one can import while another's program runs."""
    names = [name for name in FULL_ENGINES if ENGINES[name].in_default_consensus]
    with ThreadPoolExecutor(len(names)) as asking:
        reasons = list(asking.map(lambda name: get_engine(name).unavailable_reason(), names))
    return [name for name, reason in zip(names, reasons) if reason is None]
