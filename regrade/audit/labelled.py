"""Labelled outputs: agent outputs whose truth is known by construction, made from answer files Excel saved.

From one answer file whose graded formulas carry Excel's cached values, four outputs:

- ``excel``: the answer file itself. Correct, and cached as Excel computed it.
- ``uncached``: the same, its graded formula cells' cached values removed (as a file
  openpyxl wrote would be). Correct; a value-only grader fails it.
- ``changed-stale``: one graded formula (the first written with its text) changed so that its value differs from Excel's
  (``(F)+1`` where Excel cached a number or a date, ``(F)+1/24`` a time, ``NOT(F)`` a boolean,
  ``(F)&"x"`` a text)
  with Excel's old cached value kept. Wrong; a value-only grader passes it.
- ``changed-uncached``: the same change, its cached value removed. Wrong.

A labelled output is the answer file's bytes with the sheet XML edited in place: every
other part, and every other cell's cache, is Excel's own. A recomputing grader should call
the first two correct and the last two wrong; :func:`labelled_score` counts how often it
does, how often it does not judge, and how often it calls a wrong output right (a false
recovery).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from regrade.grading.grade import GoldenError, load_golden
from regrade.grading.policies import Policy, TargetError
from regrade.values import CellRef, ExcelError
from regrade.workbook import cell_xml

LABELS = {"excel": True, "uncached": True, "changed-stale": False, "changed-uncached": False}  # label: correct?


class NotLabellable(ValueError):
    """An answer file the labelled outputs cannot be made from; the message says why."""


@dataclass(frozen=True)
class Labelled:
    """The outputs made from one answer file, by label; ``changed`` is the cell edited (None:
    no graded formula could be changed, so only ``excel`` and ``uncached`` were made)."""

    outputs: dict[str, Path]
    changed: CellRef | None


def make_labelled(answer: Path, position: str, answer_sheet: str | None, policy: Policy, folder: Path,
                  name: str) -> Labelled:
    """Write the labelled outputs of ``answer`` to ``folder/<label>/<name>``."""
    try:
        golden = load_golden(answer)
        targets = golden.targets(policy, position, answer_sheet)
    except (GoldenError, TargetError) as exc:
        raise NotLabellable(f"its graded cells cannot be read: {exc}") from exc
    formulas = [t for t in targets if golden.is_formula(t)]
    if not formulas:
        raise NotLabellable("no graded cell holds a formula")
    if all(golden.value(t) is None for t in formulas):
        raise NotLabellable("its graded formulas hold no cached values: Excel did not save it")
    sheets = cell_xml.read_sheets(answer, {t.sheet for t in formulas})
    cell = sheets.cell

    changed = next((t for t in formulas if _changeable(cell(t), golden.value(t))), None)
    outputs = {}
    for label in LABELS:
        if label.startswith("changed") and changed is None:
            continue
        elements: dict[CellRef, str] = {}
        if label in ("uncached", "changed-uncached"):
            elements = {ref: cell_xml.without_cache(found) for ref in formulas if (found := cell(ref)) is not None}
        if label.startswith("changed") and changed is not None and (found := cell(changed)) is not None:
            elements[changed] = cell_xml.with_formula(found, change_for(golden.value(changed)),
                                                      keep_cache=label == "changed-stale")
        target = folder / label / name
        target.parent.mkdir(parents=True, exist_ok=True)
        sheets.write_edited(answer, target, elements)
        outputs[label] = target
    return Labelled(outputs, changed)


def _changeable(cell: cell_xml.Cell | None, cached: object) -> bool:
    """A formula written with its text (a plain one, an array's, a shared formula's first cell:
    its followers change with it) whose cached value is a number, text or a boolean."""
    return (cell is not None and cell_xml.FORMULA.search(cell.group("content") or "") is not None
            and cached is not None and not isinstance(cached, ExcelError))


def change_for(cached: object) -> str:
    """How a formula is changed so that its value differs from ``cached`` under any policy: a
    number or a date plus 1; a time plus an hour (plus a day would keep the time of day the
    policy compares); a boolean negated; a text with "x" joined (the sheet XML holds the & escaped).
    Each keeps the value's type, so no engine's way of writing a number as text is tested."""
    if isinstance(cached, bool):
        return "NOT({})"
    if isinstance(cached, dt.time):
        return "({})+1/24"
    if isinstance(cached, (int, float)) or hasattr(cached, "year"):
        return "({})+1"
    return '({})&amp;"x"'


@dataclass
class LabelledScore:
    """How a grader's full verdicts match the labels: the table of issue 19."""

    cases: int = 0
    judged: int = 0
    right: int = 0
    false_recoveries: int = 0  # a wrong output called right
    false_failures: int = 0  # a correct output called wrong

    @property
    def right_pct(self) -> float | None:
        return round(100 * self.right / self.judged, 1) if self.judged else None

    @property
    def not_judged_pct(self) -> float | None:
        return round(100 * (self.cases - self.judged) / self.cases, 1) if self.cases else None


def labelled_score(records: list[dict]) -> LabelledScore:
    """Score rescore records whose ``condition`` is a label (their ``full_pass`` against it)."""
    score = LabelledScore()
    for record in records:
        correct = LABELS[record["condition"]]
        score.cases += 1
        if record["full_pass"] is None:
            continue
        score.judged += 1
        if record["full_pass"] == correct:
            score.right += 1
        elif correct:
            score.false_failures += 1
        else:
            score.false_recoveries += 1
    return score
