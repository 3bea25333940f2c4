"""Matching a requested sheet name to a workbook's sheets."""

from __future__ import annotations


def resolve_sheet(requested: str, sheet_names: list[str]) -> str | None:
    """The workbook's sheet for ``requested``: exact match first, then case-insensitive
    (Excel treats sheet names case-insensitively). None when there is none."""
    if requested in sheet_names:
        return requested
    folded = requested.strip().casefold()
    return next((name for name in sheet_names if name.strip().casefold() == folded), None)
