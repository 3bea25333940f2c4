"""Where a paired table's outcomes come from: regrade results, any grader's outcomes, inspect_ai logs.

``regrade table SOURCE...`` takes one or more sources:

- a regrade results file (JSON Lines, from ``regrade rescore``): both gradings;
- an outcomes file (CSV or JSON Lines with ``stack, benchmark, condition, task_id, passed``);
- ``NAME=LOG``: an inspect_ai log (``.eval`` or ``.json``), or a folder of them, whose samples
  are the outcomes of condition NAME (a log whose eval metadata names its condition needs no NAME).

What could not be read as an outcome (a sample without a score, a log that did not finish) is
returned as a note for stderr, never dropped without a word.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from regrade.messages import first_few
from regrade.results.files import ResultsError
from regrade.results.outcomes import read_outcomes
from regrade.results.records import Outcome, as_outcomes
from regrade.runs.inspect_logs import InspectLogError, is_inspect_log, log_files, read_inspect_log


@dataclass
class TableOutcomes:
    provenance: dict | None  # the provenance record of a single regrade results file
    records: list[Outcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what a reader must be told (stderr)


def load_outcomes(sources: Sequence[str], scorer: str | None = None, stack: str | None = None,
                  benchmark: str | None = None) -> TableOutcomes:
    """Every source's outcomes, combined; see the module docstring. ``stack`` and ``benchmark``,
    where given, label every outcome, so that conditions run with different agents, models or
    task names pair with each other."""
    if not sources:
        raise ResultsError("name a results file, an outcomes file or NAME=LOG")
    combined = TableOutcomes(None)
    provenances = []
    origin: dict[tuple, Path] = {}
    named: dict[Path, str] = {}
    for text in sources:
        name, path = _named(text)
        if not path.exists():
            raise ResultsError(f"results file {path} does not exist")
        if path.resolve() in named:
            raise ResultsError(f"{path} is named twice ({named[path.resolve()]} and {text}): name each source once")
        named[path.resolve()] = text
        if path.is_dir() or (path.is_file() and is_inspect_log(path)):
            samples, files = _inspect_outcomes(name, path, scorer, combined.notes)
            refuse_duplicates(samples, path, origin, "sample {task_id} epoch {trial} of condition {condition}", "log",
                              files)
            combined.records += samples
            continue
        if name is not None:
            raise ResultsError(f"{text}: NAME=PATH names the condition of an inspect_ai log, and {path} is not one "
                               "(a results or outcomes file names its own conditions)")
        provenance, outcomes = read_outcomes(path)
        refuse_duplicates(outcomes, path, origin, "task {task_id} case {case} trial {trial} of condition {condition}",
                           "results or outcomes file")
        provenances.append(provenance)
        combined.records += outcomes
    combined.provenance = provenances[0] if len(provenances) == 1 and len(sources) == 1 else None
    relabel = {k: v for k, v in (("stack", stack), ("benchmark", benchmark)) if v is not None}
    if relabel:
        combined.records = [record.model_copy(update=relabel) for record in combined.records]
        refuse_duplicates(combined.records, Path("the sources"), {}, "task {task_id} case {case} trial {trial} of "
                          "condition {condition}", "condition under one label")
    return combined


def refuse_duplicates(records: Sequence[Outcome], path: Path, origin: dict[tuple, Path], what: str, kind: str,
                      files: list[Path] | None = None) -> None:
    """A :class:`ResultsError` where a case is given twice (in two sources, or twice in one):
    merging them would change the numbers without a word."""
    for number, record in enumerate(records):
        fields = {"task_id": record.task_id, "case": record.case, "trial": record.trial, "condition": record.condition}
        key = (record.stack, record.benchmark, *fields.values())
        source = files[number] if files else path  # the log file within a folder of logs
        if key in origin:
            where = f"twice in {source}" if origin[key] == source else f"in two of them ({origin[key]} and {source})"
            raise ResultsError(f"{what.format(**fields)} is {where}: name each {kind} once (the same run saved as "
                               ".eval and as .json is one run); to compare two runs of one condition, give them "
                               "different condition names or trials")
        origin[key] = source


def _named(text: str) -> tuple[str | None, Path]:
    name, sep, rest = text.partition("=")
    if sep and name and rest and not Path(text).exists():
        return name, Path(rest)
    return None, Path(text)


def _inspect_outcomes(name: str | None, path: Path, scorer: str | None, notes: list[str]
                      ) -> tuple[list[Outcome], list[Path]]:
    """The outcomes of a log or a folder of logs, and the log file each came from."""
    files = log_files(path)
    if not files:
        raise ResultsError(f"{path} is a folder with no inspect_ai log (.eval or .json) in it: regrade table reads "
                           "results files (regrade rescore -o), outcomes files (CSV or JSON Lines) and NAME=LOG "
                           "inspect_ai logs; a folder of output workbooks is graded with regrade rescore first")
    records: list[dict] = []
    sources: list[Path] = []
    for file in files:
        try:
            log = read_inspect_log(file, name, scorer)
        except InspectLogError as exc:
            raise ResultsError(str(exc)) from exc
        if log.status != "success":
            notes.append(f"warning: {file} has status {log.status!r}, not success: its samples may be incomplete")
        if log.unscored:
            notes.append(f"warning: {file}: {len(log.unscored)} samples have no score (they errored or were not "
                         f"scored) and are left out: {first_few(log.unscored)}")
        records += log.outcomes
        sources += [file] * len(log.outcomes)
    return as_outcomes(records, str(path)), sources
