"""Engines by name."""

from __future__ import annotations

from typing import Callable

from engines.base import Engine
from engines.cached import CachedEngine
from engines.ironcalc_ import IronCalcEngine

ENGINES: dict[str, Callable[[], Engine]] = {
    CachedEngine.name: CachedEngine,
    IronCalcEngine.name: IronCalcEngine,
}


def get_engine(name: str) -> Engine:
    try:
        return ENGINES[name]()
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINES)}") from None
