"""Excel's coercion of a plain value to a number, shared by the functions regrade computes."""

from __future__ import annotations


def as_number(value: object) -> float | None:
    """An empty cell is 0, TRUE 1, FALSE 0, numeric text its number; None for any other text or value."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
