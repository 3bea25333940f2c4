"""A report page as headless Chromium shows it: a screenshot, and the DOM after its script ran.

Used by the tests (the page must render in a real browser) and to make the picture in
``docs/``::

    python3 -m regrade.reporting.browser report.html docs/report-demo.png
    python3 -m regrade.reporting.browser report.html docs/refusal-report.png refusal   # from #refusal on

Needs Debian's ``chromium`` (``.ci/setup`` installs it). Chromium runs with a new empty
profile and with its background networking off, so it fetches nothing of its own either.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--virtual-time-budget=5000")


class BrowserMissing(RuntimeError):
    """No Chromium on this machine."""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise BrowserMissing("no chromium on PATH (Debian: apt-get install chromium)")


def _run(page: Path | str, *arguments: str, fragment: str = "", timeout_s: float = 120) -> str:
    """Chromium on a page file, or an address (a server's, http://...)."""
    address = (page if isinstance(page, str) else page.resolve().as_uri()) + (f"#{fragment}" if fragment else "")
    with tempfile.TemporaryDirectory(prefix="regrade-chromium-") as profile:
        done = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *arguments, address],
                              capture_output=True, text=True, timeout=timeout_s, cwd=profile)
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited with status {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def screenshot(page: Path | str, png: Path, width: int = 1280, height: int = 1600, fragment: str = "") -> Path:
    """A PNG of ``width`` x ``height`` pixels of the page: its top, or from ``#fragment`` on."""
    _run(page, f"--window-size={width},{height}", f"--screenshot={png.resolve()}", fragment=fragment)
    if not png.exists():
        raise RuntimeError(f"chromium wrote no screenshot to {png}")
    return png


def rendered_dom(page: Path | str, fragment: str = "") -> str:
    """The page's DOM as HTML after its script ran (opened at ``#fragment`` if given)."""
    return _run(page, "--dump-dom", fragment=fragment)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: python3 -m regrade.reporting.browser PAGE.html SHOT.png [SECTION]")
    print(screenshot(Path(sys.argv[1]), Path(sys.argv[2]), fragment=sys.argv[3] if len(sys.argv) == 4 else ""))
