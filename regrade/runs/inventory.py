"""What a run holds before anything is graded: per condition, the outputs found, missing and unmatched.

A mistyped or misnamed output folder must not become a table of confident failures. So,
before grading, each condition is counted: how many of its cases have an output file, which
are missing (with one path where an output was expected), and which files of its folder match
no case (``1_38462.xlsx`` where ``1_38462_output.xlsx`` was expected, an ``.xls`` or ``.csv``
output). A condition none of whose outputs exist is an error of the run
(:class:`EmptyCondition`), unless the caller allows it; the same holds for a run none of whose
answer files exist (a manifest whose paths were written relative to another folder). A Harbor
condition says why from its trials' artifact manifests, and one whose trials' output folders
were all collected empty is graded (its agents wrote nothing: genuine failures).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from regrade.runs.cases import Case, RunError
from regrade.runs.harbor import HARBOR_GRADER, NONE_WRITTEN, why_missing

WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xls", ".xlsb", ".ods", ".csv")  # what an agent may have written as its output
SHOWN = 3  # file names quoted in a message
OUTPUT_NAME = re.compile(r"^\d+_.+_output ?\.xlsx$")  # named as an output is: a case the dataset does not have


class EmptyCondition(RunError):
    """Every output of a condition (or every answer file of the run) is missing: exit status 2."""


@dataclass
class ConditionInventory:
    """One condition's cases, by whether their output file exists, and the files that match none."""

    condition: str
    cases: int = 0
    found: int = 0
    missing: list[Path] = field(default_factory=list)  # where each missing output was expected
    missing_answers: list[Path] = field(default_factory=list)
    unmatched: list[Path] = field(default_factory=list)  # workbook-like files of its folders that no case reads
    unknown_tasks: list[Path] = field(default_factory=list)  # named <n>_<id>_output.xlsx for an id the dataset lacks
    folder: Path | None = None  # the condition's output folder: files are named relative to it
    harbor_missing: Counter[str] = field(default_factory=Counter)  # a Harbor job's missing outputs, by why (its manifests)

    @property
    def none_written(self) -> bool:
        """A Harbor condition whose every missing output was collected empty: its agents wrote none,
        genuine failures rather than a wrong folder."""
        return bool(self.missing) and self.harbor_missing.get(NONE_WRITTEN, 0) == len(self.missing)

    @property
    def complete(self) -> bool:
        """Every case has its output and answer file, and no file of the folder is left unread."""
        return not (self.missing or self.missing_answers or self.unmatched or self.unknown_tasks)

    def to_json(self) -> dict:
        return {"condition": self.condition, "cases": self.cases, "outputs_found": self.found,
                "outputs_missing": len(self.missing), "answers_missing": len(self.missing_answers),
                "unmatched_files": len(self.unmatched), "outputs_of_unknown_tasks": len(self.unknown_tasks),
                "first_missing": str(self.missing[0]) if self.missing else None,
                "first_unmatched": [str(p) for p in self.unmatched[:SHOWN]]}

    def message(self) -> str:
        """One line for stderr."""
        text = f"condition {self.condition}: {self.found} of {self.cases} outputs found"
        if self.missing:
            text += f", {len(self.missing)} missing (e.g. {self.missing[0]})"
        if self.missing_answers:
            text += f", {len(self.missing_answers)} answer files missing (e.g. {self.missing_answers[0]})"
        if self.unmatched:
            text += f"; {len(self.unmatched)} files match no case ({self._listed(self.unmatched)}): outputs are read " \
                    "as <n>_<id>_output.xlsx"
        if self.unknown_tasks:
            text += f"; {len(self.unknown_tasks)} outputs name a task or test case the dataset does not have " \
                    f"({self._listed(self.unknown_tasks)}): is --dataset the benchmark they were run on?"
        return text

    def _listed(self, paths: list[Path]) -> str:
        """The first few files, each by its path within the condition's folder, and how many more."""
        names = ", ".join(p.relative_to(self.folder).as_posix() if self.folder and p.is_relative_to(self.folder)
                          else p.name for p in paths[:SHOWN])
        return names + (f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else "")


def take_inventory(cases: list[Case], folders: dict[str, Path] | None = None) -> list[ConditionInventory]:
    """Each condition's inventory, in the order conditions first appear. ``folders`` (a
    condition's output folder, for a SpreadsheetBench-layout run) is searched for unmatched files."""
    by_condition: dict[str, ConditionInventory] = {}
    expected: dict[str, set[Path]] = {}
    harbor_why: dict[Path, str] = {}  # a Harbor trial's manifest, read once whatever it misses
    for case in cases:
        inventory = by_condition.setdefault(case.condition, ConditionInventory(case.condition))
        inventory.cases += 1
        if case.output_path.is_file():
            inventory.found += 1
        else:
            inventory.missing.append(case.output_path)
            if case.original_grader == HARBOR_GRADER:  # <trial>/artifacts/<name>: its manifest says why
                trial = case.output_path.parent.parent
                if trial not in harbor_why:
                    harbor_why[trial] = why_missing(trial)
                inventory.harbor_missing[harbor_why[trial]] += 1
        if not case.answer_path.is_file():
            inventory.missing_answers.append(case.answer_path)
        expected.setdefault(case.condition, set()).add(case.output_path.resolve())
    for condition, folder in (folders or {}).items():
        if condition in by_condition:
            unread = unmatched_files(folder, expected.get(condition, set()))
            inventory = by_condition[condition]
            inventory.folder = folder
            inventory.unknown_tasks = [p for p in unread if OUTPUT_NAME.match(p.name)]
            inventory.unmatched = [p for p in unread if not OUTPUT_NAME.match(p.name)]
    return list(by_condition.values())


def unmatched_files(folder: Path, expected: set[Path]) -> list[Path]:
    """The workbook-like files in ``folder`` and its task subfolders that are no case's output."""
    if not folder.is_dir():
        return []
    candidates = [*folder.iterdir(), *(p for sub in folder.iterdir() if sub.is_dir() for p in sub.iterdir())]
    return sorted(p for p in candidates if p.is_file() and p.suffix.lower() in WORKBOOK_SUFFIXES
                  and not p.name.startswith((".", "~$")) and p.resolve() not in expected)


def check_inventory(inventories: list[ConditionInventory], allow_missing: bool, manifest: Path | None = None) -> None:
    """Raise :class:`EmptyCondition` where no case has its answer file, or a condition has no
    output at all, unless ``allow_missing``. ``manifest``: the run's manifest, whose folder its
    relative paths are read from (the message says so). A run with no case at all is an
    error whatever ``allow_missing`` says: there is nothing to grade."""
    if not inventories:
        raise EmptyCondition("the run has no case to grade: no task of the dataset has an answer file"
                             + (", or none has an output (--tasks-with-outputs)" if not manifest else ""))
    if allow_missing:
        return
    hint = f"; a manifest's paths are read relative to the manifest's own folder, {manifest.parent}" if manifest else ""
    total = sum(i.cases for i in inventories)
    if total and sum(len(i.missing_answers) for i in inventories) == total:
        first = next(i.missing_answers[0] for i in inventories if i.missing_answers)
        raise EmptyCondition(f"none of the {total} cases' answer files exists (e.g. {first}){hint}")
    empty = [i for i in inventories if i.cases and not i.found and not i.none_written]
    if any(i.harbor_missing for i in empty):
        whys = sorted({why for i in empty for why in i.harbor_missing})
        raise EmptyCondition(f"{len(empty)} Harbor condition(s) have no output workbook at all: "
                             + "; ".join(i.message() for i in empty) + f". Why, by the trials' manifests: {'; '.join(whys)}")
    if empty:
        lines = [i.message() for i in empty]
        raise EmptyCondition(
            f"{len(empty)} condition(s) have no output at all; is the folder right? " + "; ".join(lines)
            + f"{hint}. Pass --allow-missing to grade them as failures anyway")
