"""A paired table as data: what ``regrade table`` prints and ``regrade.api.table`` returns,
made in one place from typed outcomes (:func:`pair`) or from the sources a user names
(:func:`pair_sources`: results files, outcomes files, inspect_ai logs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from regrade.paired.refusal import RefusalFigures, pairing_view, refusal_figures
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
    refusal: list[RefusalFigures] = field(default_factory=list)  # per condition, where the outcomes are of a refusal slice
    channel: str = "unlocked"  # scored: every outcome under a locked protocol's scored channel; exploratory; unlocked

    @property
    def caption(self) -> str:
        """What every format says beside the rates: the channel, and whether abstention figures exist."""
        slice_note = ("success rates with their refusal figures (abstention accuracy, invalid completions, "
                      "false abstentions)" if self.refusal else
                      "no refusal slice: these success rates carry no abstention figures")
        channel = {"scored": "scored under a locked protocol",
                   "exploratory": "exploratory: belongs in no scored table",
                   "unlocked": "no locked protocol"}[self.channel]
        return f"{slice_note}; {channel}"

    def rows(self) -> list[dict[str, Any]]:
        """The comparison rows; on a refusal slice each carries its treatment condition's figures
        (success_rate, abstention_accuracy, invalid_completion_rate, false_abstain_rate, each with
        its _interval and _count, and the covariates), so no row's rates travel without them."""
        figures = {(f.stack, f.benchmark, f.condition): f.row() for f in self.refusal}
        rows = []
        for c in self.comparisons:
            row = c.as_row()
            base = str(row["benchmark"]).rsplit(": ", 1)[0]
            found = figures.get((row["stack"], base, row["condition"]))
            rows.append({**row, **{k: v for k, v in found.items() if k not in row}} if found else row)
        return rows

    def totals(self) -> dict[str, dict]:
        """Per grading: gains, regressions and the share of gains offset (:func:`regrade.paired.tables.aggregate`)."""
        return totals_by_grading(self.comparisons)

    def count_changes(self) -> list[dict]:
        """Per comparison, each count regraded minus original (empty for outcomes that are no regrade results)."""
        return count_changes(self.comparisons) if self.regraded else []

    def refusal_rows(self) -> list[dict[str, Any]]:
        return [f.row() for f in self.refusal]

    def as_json(self) -> dict[str, Any]:
        return {"provenance": self.provenance, "baseline": self.baseline, "aggregate": self.totals(),
                "count_changes": self.count_changes(), "changed_transitions": self.changed,
                "refusal": self.refusal_rows() if self.refusal else None, "channel": self.channel,
                "caption": self.caption}


def pair(records: Records, baseline: str = "none", ci: str = "newcombe", alpha: float = 0.05,
         correction: str = "bonferroni", unit: str = "task", aggregate: str = "hard", test: str = "exact",
         provenance: dict[str, Any] | None = None, notes: Sequence[str] = (), exploratory: bool = False
         ) -> PairedTable:
    """The paired table of ``records`` (typed outcomes, or rows typed at the door). Outcomes of a
    refusal slice give the figures (:mod:`regrade.paired.refusal`) and pair on success and on
    abstention apart. An exploratory condition (its run contradicted its locked protocol) is
    left out, and said, unless ``exploratory``: the whole table is then exploratory."""
    outcomes = typed(records)
    notes = list(notes)
    if not exploratory:
        dropped = sorted({r.condition for r in outcomes if r.channel == "exploratory"})
        if dropped:
            reasons = sorted({d for r in outcomes if r.condition in dropped for d in r.drift})
            notes.append(f"left out of this table: {len(dropped)} exploratory conditions ({', '.join(dropped)}"
                         + (f": {'; '.join(reasons)}" if reasons else "") + "); --exploratory tables them, "
                         "the whole table then exploratory")
            outcomes = [r for r in outcomes if r.channel != "exploratory"]
    refusal = refusal_figures(outcomes)
    channels = {r.channel or "unlocked" for r in outcomes}
    channel = "exploratory" if exploratory else "scored" if channels == {"scored"} else "unlocked"
    outcomes = pairing_view(outcomes)
    regraded = any(r.rescored for r in outcomes)
    comparisons = paired_table(outcomes, baseline, ci, alpha, correction, unit, aggregate, test)
    warnings = [*notes, *table_warnings(comparisons, outcomes, baseline, unit)]
    if not regraded:
        comparisons = [c for c in comparisons if c.grading == "original"]
    if not comparisons:
        warnings.append(f"no condition was paired with {baseline}: the table is empty (see the warning above)")
    changed = changed_transitions(outcomes, baseline, unit, aggregate) if regraded else []
    return PairedTable(comparisons, regraded, baseline, alpha, unit, aggregate, provenance, warnings, changed, refusal,
                       channel)


def pair_sources(sources: Sequence[str | Path], baseline: str = "none", ci: str = "newcombe", alpha: float = 0.05,
                 correction: str = "bonferroni", unit: str = "task", aggregate: str = "hard", test: str = "exact",
                 scorer: str | None = None, stack: str | None = None, benchmark: str | None = None,
                 exploratory: bool = False) -> PairedTable:
    """The paired table of the outcomes of ``sources`` taken together (:func:`regrade.paired.sources.load_outcomes`:
    results files, outcomes files, ``NAME=LOG`` inspect_ai logs), with their notes and, for a single
    regrade results file, what its provenance says a reader should know."""
    loaded = load_outcomes([str(s) for s in sources], scorer, stack, benchmark)
    notes = list(loaded.notes)
    if len(sources) == 1 and any(r.rescored for r in loaded.records):
        notes += results_warnings(Path(sources[0]), loaded.provenance)
    return pair(loaded.records, baseline, ci, alpha, correction, unit, aggregate, test, loaded.provenance, notes,
                exploratory)
