"""A paired table as data: what ``regrade table`` prints and ``regrade.api.table`` returns,
made in one place from typed outcomes (:func:`pair`) or from the sources a user names
(:func:`pair_sources`: results files, outcomes files, inspect_ai logs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from regrade.paired.sources import load_outcomes
from regrade.paired.tables import (
    Comparison, Records, changed_transitions, count_changes, paired_table, table_warnings, typed,
)
from regrade.paired.tables import aggregate as totals_by_grading
from regrade.results.files import results_warnings


@dataclass
class PairedTable:
    """Each condition against the baseline, in the gradings the outcomes have (original only for
    outcomes that are no regrade results), with everything a reader must be told."""

    comparisons: list[Comparison]
    regraded: bool  # the outcomes are regrade results: the regraded grading is tabled too
    baseline: str
    alpha: float
    unit: str
    aggregate: str
    provenance: dict[str, Any] | None = None  # of a single regrade results file
    warnings: list[str] = field(default_factory=list)  # for stderr: the sources' notes, unpaired units, no output
    changed: list[dict[str, Any]] = field(default_factory=list)  # tasks whose transition regrading changed

    def rows(self) -> list[dict[str, Any]]:
        return [c.as_row() for c in self.comparisons]

    def totals(self) -> dict[str, dict]:
        """Per grading: gains, regressions and the share of gains offset (:func:`regrade.paired.tables.aggregate`)."""
        return totals_by_grading(self.comparisons)

    def count_changes(self) -> list[dict]:
        """Per comparison, each count regraded minus original (empty for outcomes that are no regrade results)."""
        return count_changes(self.comparisons) if self.regraded else []

    def as_json(self) -> dict[str, Any]:
        return {"provenance": self.provenance, "baseline": self.baseline, "aggregate": self.totals(),
                "count_changes": self.count_changes(), "changed_transitions": self.changed}


def pair(records: Records, baseline: str = "none", ci: str = "newcombe", alpha: float = 0.05,
         correction: str = "bonferroni", unit: str = "task", aggregate: str = "hard", test: str = "exact",
         provenance: dict[str, Any] | None = None, notes: Sequence[str] = ()) -> PairedTable:
    """The paired table of ``records`` (typed outcomes, or rows typed at the door)."""
    outcomes = typed(records)
    regraded = any(r.rescored for r in outcomes)
    comparisons = paired_table(outcomes, baseline, ci, alpha, correction, unit, aggregate, test)
    warnings = [*notes, *table_warnings(comparisons, outcomes, baseline, unit)]
    if not regraded:
        comparisons = [c for c in comparisons if c.grading == "original"]
    if not comparisons:
        warnings.append(f"no condition was paired with {baseline}: the table is empty (see the warning above)")
    changed = changed_transitions(outcomes, baseline, unit, aggregate) if regraded else []
    return PairedTable(comparisons, regraded, baseline, alpha, unit, aggregate, provenance, warnings, changed)


def pair_sources(sources: Sequence[str | Path], baseline: str = "none", ci: str = "newcombe", alpha: float = 0.05,
                 correction: str = "bonferroni", unit: str = "task", aggregate: str = "hard", test: str = "exact",
                 scorer: str | None = None, stack: str | None = None, benchmark: str | None = None) -> PairedTable:
    """The paired table of the outcomes of ``sources`` taken together (:func:`regrade.paired.sources.load_outcomes`:
    results files, outcomes files, ``NAME=LOG`` inspect_ai logs), with their notes and, for a single
    regrade results file, what its provenance says a reader should know."""
    loaded = load_outcomes([str(s) for s in sources], scorer, stack, benchmark)
    notes = list(loaded.notes)
    if len(sources) == 1 and any(r.rescored for r in loaded.records):
        notes += results_warnings(Path(sources[0]), loaded.provenance)
    return pair(loaded.records, baseline, ci, alpha, correction, unit, aggregate, test, loaded.provenance, notes)
