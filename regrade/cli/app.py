"""The ``regrade`` group itself: its --debug and -q, how library errors become exit statuses, progress."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Callable

import click

from regrade.paired.tables import (
    PairingError,
)
from regrade.render.pipes import tolerate_closed_pipes
from regrade.render.progress import Progress
from regrade.results.files import ResultsError
from regrade.runs.cases import ArgumentError, RunError
from regrade.runs.inventory import EmptyCondition


LIBRARY_ERRORS = (RunError, ResultsError, PairingError, ValueError, OSError)


def library_errors(command: Callable) -> Callable:
    """Library errors become ``Error: ...`` and exit status 1; ``--debug`` keeps the traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            raise click.exceptions.Exit(INTERRUPTED) from None
        except (EmptyCondition, ArgumentError) as exc:
            if debugging():
                raise
            raise click.UsageError(str(exc)) from exc  # exit status 2: nothing of the run was graded
        except LIBRARY_ERRORS as exc:
            if debugging():
                raise
            raise click.ClickException(str(exc)) from exc

    return wrapper


POSITIVE_SECONDS = click.FloatRange(min=0, min_open=True)
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a program Ctrl-C stopped
REPOSITORY = Path(__file__).resolve().parents[2]


def in_repository(path: Path) -> str:
    """A bundled path as --help shows it: relative to the repository, the same in every clone."""
    return path.relative_to(REPOSITORY).as_posix()


def debugging() -> bool:
    """Whether --debug was given."""
    return bool(click.get_current_context().find_root().params.get("debug"))


def progress(total: int | None, unit: str) -> Progress:
    """The progress display of this command line: none with -q."""
    return Progress(total, unit, quiet=quiet())


class CommandLine(click.Group):
    """The ``regrade`` group: ``--debug`` and ``-q`` are read anywhere on the line, not only before the subcommand."""

    def main(self, args=None, *rest, **extra):
        words = list(sys.argv[1:] if args is None else args)
        for flag, spellings in (("--debug", ("--debug",)), ("--quiet", ("-q", "--quiet"))):
            if any(w in spellings for w in words[1:]):
                words = [flag, *(w for w in words if w not in spellings)]
        streams = sys.stdout, sys.stderr
        tolerate_closed_pipes()  # a reader that goes away (| head) costs no work and is no error
        try:
            return super().main(words, *rest, **extra)
        finally:
            sys.stdout, sys.stderr = streams




def quiet() -> bool:
    """-q anywhere on the line: no progress, no lines that only report that all is well."""
    return bool(click.get_current_context().find_root().params.get("quiet"))


@click.group(cls=CommandLine)
@click.version_option(package_name="regrade")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of short error messages (anywhere on the line).")
@click.option("-q", "--quiet", is_flag=True, help="No progress, inventory or summary on stderr; warnings, what was "
              "missing or not judged, and errors still show (anywhere on the line).")
def main(debug: bool, quiet: bool) -> None:
    """regrade: find which spreadsheet-benchmark failures are real.

    It grades each agent output twice: as value-only graders do (the values cached
    in the file) and with a full formula engine that recomputes every formula, then
    says which failures were grader artifacts and how paired tables change.

    \b
    Start with:  regrade demo
    Then:        regrade rescore --dataset DATA --condition none=OUT_NONE \\
                     --condition skills=OUT_SKILLS -o results.jsonl
                 regrade table results.jsonl
                 regrade report results.jsonl -o report.html
    """
