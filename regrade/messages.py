"""How messages quote a list: the first few items, and "..." when there are more."""

from __future__ import annotations

from typing import Sequence


def first_few(items: Sequence[object], shown: int = 3) -> str:
    """``"a, b, c, ..."``: the first ``shown`` items, then an ellipsis if any are left out."""
    return ", ".join(str(item) for item in items[:shown]) + (", ..." if len(items) > shown else "")
