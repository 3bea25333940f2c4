"""Excel's coercion of a plain value to a number, shared by the functions regrade computes."""

from __future__ import annotations

import math
import re

# Text Excel reads as a number: digits with an optional sign, point and exponent, spaces around
# (Python's float() would also take "inf", "nan" and "1_000", which Excel reads as text)
_NUMERIC_TEXT = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")


def as_number(value: object) -> float | None:
    """An empty cell is 0, TRUE 1, FALSE 0, numeric text its number; None for any other text or value."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return float(value) if _NUMERIC_TEXT.fullmatch(value) else None
    return None


def general_text(number: float) -> str | None:
    """A number as Excel writes it into text (``A1&""``, TEXTJOIN): its 15 significant digits
    without trailing zeros. None for magnitudes where Excel switches to scientific notation,
    whose exact form regrade does not reproduce."""
    if number == 0:
        return "0"
    if not -4 <= math.floor(math.log10(abs(number))) < 15:
        return None
    return "%.15G" % number
