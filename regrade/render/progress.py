"""Progress on stderr: a bar with rate and time left on a terminal (rich), plain lines otherwise, nothing with -q.

Plain lines are for logs and CI, one per item (``[3/45] none task 59511 case 1: artifact``);
the bar is for people watching. Progress never goes to stdout, which carries the results.
"""

from __future__ import annotations

import sys
from types import TracebackType

import click
from rich.console import Console
from rich.progress import (
    BarColumn, MofNCompleteColumn, ProgressColumn, Task, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.text import Text


class _Rate(ProgressColumn):
    """Items a second, over the last moments (rich's own estimate)."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:.2f} {self.unit}/s")


class Progress:
    """``advance(label)`` once per finished item; use as a context manager. ``total`` None: not
    known ahead (a count, no bar's end)."""

    def __init__(self, total: int | None, unit: str = "cases", quiet: bool = False, terminal: bool | None = None):
        self.total, self.unit, self.quiet = total, unit, quiet
        self.done = 0
        self.cached = 0  # cases not graded now: from the results cache, or the same as an earlier case
        self._bar: RichProgress | None = None
        if not quiet and (sys.stderr.isatty() if terminal is None else terminal):
            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     _Rate(unit), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                                     console=Console(stderr=True, force_terminal=terminal), transient=False)
            self._task = self._bar.add_task(unit, total=total)

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, label: str, cached: bool = False) -> None:
        self.done += 1
        self.cached += cached
        if self.quiet:
            return
        if self._bar is not None:
            description = f"{self.unit} ({self.cached} reused)" if self.cached else self.unit
            self._bar.update(self._task, advance=1, description=description)
            return
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        click.echo(f"[{count}] {label}" + (" (reused)" if cached else ""), err=True)
