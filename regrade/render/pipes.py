"""Standard streams whose reader may go away: ``regrade table x | head``, ``regrade rescore ... 2>&1 | head``.

A reader that stops reading closes the pipe; the next write raises ``BrokenPipeError``. For
a command that only prints (``table``, ``diff``) that is the reader saying "enough": the
command ends quietly with exit status 0. For one that works (``rescore``, ``audit``) it
must never cost the work: the results file is still written. So :func:`tolerate_closed_pipes`
makes both streams swallow a closed pipe: the first failed write points the stream's file
descriptor at ``/dev/null`` (as Python's documentation on SIGPIPE advises), so that nothing
written later, nor the interpreter's last flush, fails; the command goes on and ends as it
would have. Processes started afterwards inherit ``/dev/null`` too.
"""

from __future__ import annotations

import io
import os
import sys
from typing import TextIO


class PipeSafeStream(io.TextIOBase):
    """A text stream that forwards to ``stream`` until its reader goes away, then to nothing."""

    def __init__(self, stream: TextIO):
        super().__init__()
        self.stream = stream
        self.reader_gone = False

    @property
    def encoding(self) -> str:  # type: ignore[override]  # click keeps a stream whose encoding it knows
        return self.stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.stream.errors

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return not self.reader_gone and self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._reader_went_away()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._reader_went_away()

    def _reader_went_away(self) -> None:
        self.reader_gone = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.stream.fileno())
            os.close(null)
        except (OSError, ValueError, io.UnsupportedOperation):
            return  # no file descriptor (a test's captured stream): writes are dropped here all the same


def tolerate_closed_pipes() -> tuple[PipeSafeStream, PipeSafeStream]:
    """Make ``sys.stdout`` and ``sys.stderr`` survive their readers going away; the two streams."""
    if not isinstance(sys.stdout, PipeSafeStream):
        sys.stdout = PipeSafeStream(sys.stdout)
    if not isinstance(sys.stderr, PipeSafeStream):
        sys.stderr = PipeSafeStream(sys.stderr)
    return sys.stdout, sys.stderr
