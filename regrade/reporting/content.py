"""What a report says, as data: built from results files, rendered by :mod:`regrade.reporting.page`.

A :class:`Report` holds everything the page shows and nothing about how: the provenance of
each results file, verdict counts per condition, what could not be judged, the paired
comparisons in both gradings, the tasks whose transition changed, and every case with its
differing cells (each reason id with its meaning, :mod:`regrade.grading.reasons`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from regrade.grading.reasons import meaning
from regrade.results.summary import shown_verdict, shown_verdicts, summarise
from regrade.paired.sources import refuse_duplicates
from regrade.paired.result import pair
from regrade.results.files import ResultsError, results_warnings
from regrade.results.records import CaseRecord, Results

NOT_JUDGED = ("engines-disagree", "unevaluable", "invalid-golden")


@dataclass(frozen=True)
class Source:
    """One results file and what made it."""

    path: str
    provenance: dict
    cases: int
    inputs_digest: str  # sha256 over the sorted (path, sha256) pairs of its inputs

    @property
    def engines(self) -> dict[str, str]:
        return dict(self.provenance.get("engines") or {})


@dataclass
class Report:
    sources: list[Source]
    baseline: str
    alpha: float
    records: list[CaseRecord]
    comparisons: list[dict]  # Comparison.as_row(), original then regraded
    changed: list[dict]  # changed_transitions()
    warnings: list[str] = field(default_factory=list)  # about the results files (another version, no provenance)
    pairing_warnings: list[str] = field(default_factory=list)  # about the paired table (unpaired, no output)
    refusal: list[dict] = field(default_factory=list)  # a refusal slice's figures per condition (RefusalFigures.row())
    caption: str = ""  # whether a refusal slice stands beside the rates, and the table's channel

    @property
    def varying(self) -> list[str]:
        """Of stack and benchmark, those with more than one value: the others are named once, not per row."""
        return [k for k in ("stack", "benchmark") if len({getattr(r, k) for r in self.records}) > 1]

    @property
    def scope(self) -> str:
        """The stack and benchmark every row shares, as "stack / benchmark" (empty when they vary)."""
        shared = [k for k in ("stack", "benchmark") if k not in self.varying]
        return " / ".join(str(getattr(self.records[0], k)) for k in shared) if self.records else ""

    @property
    def conditions(self) -> list[str]:
        return sorted({r.condition for r in self.records})

    @property
    def shown_verdicts(self) -> tuple[str, ...]:
        """The verdicts the counts show (:func:`regrade.results.summary.shown_verdicts`)."""
        return shown_verdicts(self.records)

    def verdict_counts(self) -> list[dict]:
        """Per (stack, benchmark, condition): cases and the count of each verdict (a missing
        output counted as ``missing-output``, not among the confirmed failures)."""
        groups: dict[tuple[str, str, str], Counter[str]] = {}
        for record in self.records:
            key = (record.stack, record.benchmark, record.condition)
            groups.setdefault(key, Counter())[shown_verdict(record)] += 1
        return [{"stack": s, "benchmark": b, "condition": c, "cases": sum(counts.values()),
                 **{v: counts.get(v, 0) for v in self.shown_verdicts}} for (s, b, c), counts in sorted(groups.items())]

    def left_out(self) -> dict[str, list[str]]:
        """The dataset's tasks that no results file graded, by why (their provenance's ``left_out``)."""
        found: dict[str, list[str]] = {}
        for source in self.sources:
            for why, tasks in (source.provenance.get("left_out") or {}).items():
                found.setdefault(why, [])
                found[why] += [t for t in tasks if t not in found[why]]
        return {why: tasks for why, tasks in found.items() if tasks}

    def not_judged(self) -> list[tuple[str, int]]:
        """What could not be judged, by reason (missing outputs, invalid goldens, unevaluable by reason)."""
        counts = summarise(self.records).not_judged
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    def not_judged_cases(self) -> list[CaseRecord]:
        return [r for r in self.records if r.verdict in NOT_JUDGED or "missing-output" in r.reasons]


def case_anchor(record: CaseRecord) -> str:
    """The page anchor of a case's drill-down."""
    parts = [record.stack, record.benchmark, record.condition, record.task_id, str(record.case), str(record.trial)]
    return "case-" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:12]


def reason_meanings(records: list[CaseRecord]) -> dict[str, str]:
    """Each verdict and reason id found in the records, with its meaning."""
    ids = set()
    for record in records:
        ids.add(record.verdict)
        ids.update(record.reasons)
        for cell in record.cells:
            if cell.reason:
                ids.add(cell.reason)
            for value in cell.engines.values():
                if isinstance(value, dict) and "cannot_evaluate" in value:
                    ids.add(value.get("rule") or value["cannot_evaluate"])
    return {i: meaning(i) for i in sorted(ids)}


def build_report(paths: list[Path], baseline: str = "none", ci: str = "newcombe", alpha: float = 0.05,
                 correction: str = "bonferroni", test: str = "exact", exploratory: bool = False) -> Report:
    """The report of one or several rescore results files (their cases taken together); a
    refusal slice's figures beside its rates, exploratory conditions left out unless
    ``exploratory`` (:func:`regrade.paired.result.pair`)."""
    if not paths:
        raise ResultsError("name at least one results file")
    twice = [str(p) for p in paths if [q.resolve() for q in paths].count(p.resolve()) > 1]
    if twice:
        raise ResultsError(f"{twice[0]} is named twice: name each results file once")
    sources: list[Source] = []
    records: list[CaseRecord] = []
    warnings: list[str] = []
    seen: dict[tuple, Path] = {}
    for path in paths:
        read = Results.read_rescored(path)
        found = read.cases
        provenance = read.provenance.model_dump() if read.provenance is not None else None
        warnings += results_warnings(path, provenance)
        refuse_duplicates(found, path, seen, "task {task_id} case {case} trial {trial} of condition {condition}",
                          "results file")
        sources.append(Source(str(path), provenance or {}, len(found), _inputs_digest(provenance or {})))
        records += found
    paired = pair(records, baseline, ci, alpha, correction, test=test, exploratory=exploratory)
    shown = {r.condition for r in records if exploratory or r.channel != "exploratory"}
    return Report(sources, baseline, alpha, [r for r in records if r.condition in shown], paired.rows(),
                  paired.changed, warnings, paired.warnings, paired.refusal_rows(), paired.caption)


def _inputs_digest(provenance: dict) -> str:
    inputs = provenance.get("inputs") or {}
    text = "\n".join(f"{path}\t{digest}" for path, digest in sorted(inputs.items()))
    return hashlib.sha256(text.encode()).hexdigest()
