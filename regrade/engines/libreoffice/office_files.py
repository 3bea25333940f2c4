"""Where a private LibreOffice keeps its files, and how every one of them is removed.

The engine gives each soffice a private profile directory (never the user's) and points
its home, temporary files (``lu*.tmp``) and cache (dconf) there, so removing the directory
removes them. Two files soffice always makes outside it, whatever the environment: the
sockets of its pipes in /tmp (or /var/tmp), ``OSL_PIPE_<uid>_<name>``, one for the pipe
regrade talks over and one for LibreOffice's single-instance check, named after the MD5 of
the profile's URL in UTF-16 (each byte in hex, unpadded, as LibreOffice writes it). A
killed soffice leaves both behind; they are removed by name with the profile.

Standard library only: the helper, which runs in Debian's own Python, imports it too.
"""

from __future__ import annotations

import hashlib
import os
import shutil

_PIPE_DIRECTORIES = ("/tmp", "/var/tmp")


def accept_pipe(profile: str) -> str:
    """The name of the pipe regrade talks to the soffice of ``profile`` over."""
    return "regrade-" + os.path.basename(profile.rstrip("/"))


def office_environment(profile: str) -> dict[str, str]:
    """The environment of the helper and its soffice: home, temporary files and cache inside the profile."""
    temporary, cache = os.path.join(profile, "tmp"), os.path.join(profile, "cache")
    os.makedirs(temporary, exist_ok=True)
    os.makedirs(cache, exist_ok=True)
    return {**os.environ, "HOME": profile, "TMPDIR": temporary, "XDG_CACHE_HOME": cache}


def pipe_files(profile: str) -> list[str]:
    """The sockets soffice makes for the pipes of ``profile``, wherever it may make them."""
    digest = hashlib.md5(f"file://{profile}".encode("utf-16-le")).digest()
    single_instance = "SingleOfficeIPC_" + "".join(format(byte, "x") for byte in digest)
    return [os.path.join(folder, f"OSL_PIPE_{os.getuid()}_{name}")
            for folder in _PIPE_DIRECTORIES for name in (accept_pipe(profile), single_instance)]


def kill_office_processes(profile: str) -> int:
    """Kill every process whose command line names ``profile`` (the helper and the soffice of
    a worker that was killed before it could close them); how many. Linux's /proc; elsewhere none."""
    killed = 0
    needle = profile.encode()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if needle not in handle.read():
                    continue
            os.kill(pid, 9)
            killed += 1
        except (OSError, ValueError):
            continue
    return killed


def remove_office_files(profile: str) -> None:
    """Remove the profile and the pipe sockets of its soffice, which must have ended."""
    shutil.rmtree(profile, ignore_errors=True)
    for path in pipe_files(profile):
        try:
            os.unlink(path)
        except OSError:
            pass
