"""``regrade audit grader``: run a grader over the sealed control pack and count its mistakes.

A positive control the grader fails is a *false fail*; a negative control it passes is a
*false pass*. Counts are per control category, with the failing controls named. Every
report carries the pack digest, the grader's identity and settings and regrade's version;
:func:`audit_table` puts several reports side by side and says so when they were made with
different packs or regrade versions (their numbers do not compare).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field

from regrade.audit.controls import ControlPack
from regrade.grading.graders import Grader, GraderFailure
from regrade.provenance import regrade_version


@dataclass
class CategoryAudit:
    category: str
    kind: str
    probes: int = 0
    false_fail: int = 0
    false_pass: int = 0
    errored: int = 0  # controls the grader could not judge (GraderAudit.errors says why): neither pass nor fail
    failing: list[str] = field(default_factory=list)

    @property
    def wrong(self) -> int:
        return self.false_fail + self.false_pass


@dataclass
class GraderAudit:
    grader: str
    settings: dict
    pack_digest: str
    regrade_version: str
    categories: list[CategoryAudit]
    errors: dict[str, str] = field(default_factory=dict)  # control id -> what went wrong running the grader

    def as_json(self) -> dict:
        data = asdict(self)
        for row, category in zip(data["categories"], self.categories):
            row["false_fail_rate"] = category.false_fail / category.probes if category.kind == "positive" else None
            row["false_pass_rate"] = category.false_pass / category.probes if category.kind == "negative" else None
        return data


def audit_grader(grader: Grader, pack: ControlPack) -> GraderAudit:
    """Run ``grader`` on every control of ``pack``."""
    by_category: dict[tuple[str, str], CategoryAudit] = {}
    errors: dict[str, str] = {}
    for control in pack.controls:
        row = by_category.setdefault((control.kind, control.category), CategoryAudit(control.category, control.kind))
        row.probes += 1
        try:
            passed = grader.passes(control.output, control.answer, control.answer_position)
        except Exception as exc:  # the grader could not judge this control: an error of it, not a fail
            errors[control.id] = str(exc) if isinstance(exc, GraderFailure) else f"{type(exc).__name__}: {exc}"
            row.errored += 1
            continue
        if control.kind == "positive" and not passed:
            row.false_fail += 1
            row.failing.append(control.id)
        elif control.kind == "negative" and passed:
            row.false_pass += 1
            row.failing.append(control.id)
    ordered = sorted(by_category.values(), key=lambda c: (c.kind != "positive", c.category))
    return GraderAudit(grader.name, grader.settings(), pack.digest, regrade_version(), ordered, errors)


def audit_table(reports: list[dict]) -> tuple[list[dict], list[str]]:
    """One row per (grader, category) from several reports (``GraderAudit.as_json``), and the
    warnings a reader needs: reports made with different packs or regrade versions, or one
    grader's reports made with different settings."""
    warnings = []
    for key, what in (("pack_digest", "control packs"), ("regrade_version", "regrade versions")):
        seen = defaultdict(list)
        for report in reports:
            seen[report[key]].append(report["grader"])
        if len(seen) > 1:
            detail = "; ".join(f"{value[:12]}: {', '.join(graders)}" for value, graders in seen.items())
            warnings.append(f"these reports were made with different {what} ({detail}): their counts do not compare")
    settings = defaultdict(set)
    for report in reports:
        settings[report["grader"]].add(json.dumps(report["settings"], sort_keys=True))
    for grader, variants in sorted(settings.items()):
        if len(variants) > 1:
            warnings.append(f"{len(variants)} reports of grader {grader!r} were made with different settings "
                            f"({' | '.join(sorted(variants))}): their rows are not the same grader")
    rows = []
    for report in reports:
        for c in report["categories"]:
            rows.append({"grader": report["grader"], "pack": report["pack_digest"][:12], "kind": c["kind"],
                         "category": c["category"], "probes": c["probes"], "false_fail": c["false_fail"],
                         "false_pass": c["false_pass"], "errored": c.get("errored", 0),
                         "failing": " ".join(c["failing"])})
    return rows, warnings
