"""The corpus the benchmarks read: the shared SpreadsheetBench split beside the clone, or --corpus."""

from __future__ import annotations

import sys
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "spreadsheetbench"


def require_corpus(corpus: Path) -> None:
    """Exit with one line unless ``corpus`` is a SpreadsheetBench folder (it has dataset.json)."""
    if not (corpus / "dataset.json").is_file():
        sys.exit(f"no SpreadsheetBench corpus at {corpus} (dataset.json is missing); pass --corpus")
