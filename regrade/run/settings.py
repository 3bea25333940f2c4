"""What decides a case's grading besides its files, made in one place (:func:`rescore_settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from regrade.engines.base import DEFAULT_BRIDGE_WORK, DEFAULT_TIMEOUT_S
from regrade.engines.registry import default_full_engines
from regrade.grading.consensus import default_quorum

SHALLOW_ENGINES = ("cached", "gnumeric", "libreoffice")  # how a value-only grader may have read the values


class SettingsError(ValueError):
    """Settings that cannot be run (a quorum beyond the engines chosen); the message names the option."""


@dataclass(frozen=True)
class RescoreSettings:
    """Everything besides the files that decides a case's grading; part of the cache key."""

    policy: str
    shallow: str
    engines: tuple[str, ...]
    timeout_s: float
    bridge_work: int = DEFAULT_BRIDGE_WORK
    quorum: int = 1  # engines that must compute a graded cell (regrade.grading.consensus)


def rescore_settings(engines: Sequence[str] | None = None, quorum: int | None = None,
                     policy: str = "spreadsheetbench", shallow: str = "cached",
                     timeout_s: float = DEFAULT_TIMEOUT_S, bridge_work: int = DEFAULT_BRIDGE_WORK) -> RescoreSettings:
    """The settings of a run: ``engines`` default to this machine's default consensus, ``quorum``
    to :func:`regrade.grading.consensus.default_quorum` of them. Every command, the API, the audits
    and the demo make theirs here."""
    names = tuple(engines) if engines else tuple(default_full_engines())
    if quorum is None:
        quorum = default_quorum(len(names))
    elif not 1 <= quorum <= len(names):
        raise SettingsError(f"a quorum of {quorum} needs between 1 and the {len(names)} engines chosen "
                            f"({', '.join(names)})")
    return RescoreSettings(policy, shallow, names, timeout_s, bridge_work, quorum)


def case_limit_s(settings: RescoreSettings) -> float:
    """The limit of one case as a whole, in CPU seconds of the process grading it (with the
    wall-clock backstop of :mod:`regrade.processes.cpu_time`): the limit of each engine that reads
    the output (the value-only one and every full one), and one more each for regrade's own
    reading of the golden and of the output outside the engines."""
    return settings.timeout_s * (len(settings.engines) + 3)
