"""The fixed two-way split of a benchmark's tasks used for cross-validation (bench/halves.py,
bench/labelled_outputs.py): develop on one half, report on the other."""

from __future__ import annotations

import hashlib


def half_of(task_id: str) -> str:
    """"a" or "b": the first byte of the sha256 of the task id, even or odd. Fixed for a task
    whatever else the corpus holds, so a half is the same on every machine and every run."""
    return "ab"[hashlib.sha256(str(task_id).encode()).digest()[0] % 2]
