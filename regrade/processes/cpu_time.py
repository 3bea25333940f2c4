"""CPU seconds spent by a process and its descendants: what the time limits count.

A limit on wall-clock time makes a verdict depend on how busy the machine is: the same
workbook that IronCalc computes in 40 s alone can take 70 s beside another run and end
``timeout``. A limit on CPU time does not stretch with the load (a process waiting for a
core spends none), so regrade's limits count CPU seconds, read from ``/proc``, with a wall
clock only as a backstop, :data:`WALL_BACKSTOP` times longer, for a process that hangs
without computing (a deadlock, a sleep), whose verdict is ``timeout`` on any machine.

CPU time is not a count of work: a workbook that needs almost exactly its limit can still
fall either side of it from one run to the next (caches, frequency scaling). A limit moves
no verdict of a workbook that needs well under it, busy machine or quiet.
"""

from __future__ import annotations

import os

WALL_BACKSTOP = 4  # a limit of N CPU seconds also ends after WALL_BACKSTOP × N seconds of wall clock

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def wall_backstop_s(cpu_limit_s: float) -> float:
    """The wall-clock seconds after which work under a CPU limit of ``cpu_limit_s`` ends anyway."""
    return WALL_BACKSTOP * cpu_limit_s


def process_tree_cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of ``pid`` and every live process descended from it,
    counting the children they have already waited for; None where ``/proc`` cannot say
    (not Linux, or the process is gone)."""
    own = _stat_cpu_seconds(pid)
    if own is None:
        return None
    total, pending, seen = own, _children(pid), {pid}
    while pending:
        child = pending.pop()
        if child in seen:
            continue
        seen.add(child)
        total += _stat_cpu_seconds(child) or 0.0
        pending.extend(_children(child))
    return total


def _stat_cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after the command name: state, ppid, ... utime (field 14 of proc(5)), stime, cutime, cstime
    try:
        return sum(int(field) for field in fields[11:15]) / _TICKS
    except ValueError:
        return None


def _children(pid: int) -> list[int]:
    """The pids of ``pid``'s children: from its threads' ``children`` lists where the kernel
    keeps them, else by a scan of every process's parent."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children", encoding="ascii") as children:
                found.extend(int(child) for child in children.read().split())
        except FileNotFoundError:
            return _children_by_scan(pid)
        except (OSError, ValueError):
            continue
    return found


def _children_by_scan(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found
