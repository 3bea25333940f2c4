"""A run from what a user names: a SpreadsheetBench folder with its conditions, or a manifest.

The one place the command line and the Python API turn ``--dataset``/``--condition``/``--runs``/
``--manifest`` into cases, with each condition's inventory (:mod:`regrade.runs.inventory`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from regrade.messages import first_few
from regrade.runs.cases import (
    ArgumentError, Case, dataset_tasks, manifest_cases, parse_conditions, run_conditions, spreadsheetbench_cases,
)
from regrade.runs.harbor import harbor_cases, is_harbor_job
from regrade.runs.inventory import ConditionInventory, take_inventory

SHOWN_TASKS = 5  # task ids quoted in a message


@dataclass
class LeftOut:
    """The dataset's tasks that are not graded, by why: said on stderr, kept in the results
    file's provenance (``left_out``) and shown in the report, never dropped without a word."""

    without_answer_files: list[str] = field(default_factory=list)  # spreadsheet/<id>/ holds no answer file
    without_outputs: list[str] = field(default_factory=list)  # --tasks-with-outputs: no condition has an output
    excluded: dict[str, str] = field(default_factory=dict)  # marked exclude in dataset.json, with its reason

    def to_json(self) -> dict[str, list[str]]:
        return {"without_answer_files": list(self.without_answer_files), "without_outputs": list(self.without_outputs),
                "excluded": list(self.excluded)}

    def messages(self, dataset: Path | None) -> list[str]:
        """One line for stderr per reason a task was left out."""
        where = f"{dataset / 'dataset.json'}" if dataset is not None else "the dataset"
        lines = []
        if self.without_answer_files:
            lines.append(f"warning: {len(self.without_answer_files)} tasks of {where} have no answer file under "
                         f"spreadsheet/<id>/ and are not graded ({first_few(self.without_answer_files, SHOWN_TASKS)})")
        if self.excluded:
            reasons = "; ".join(sorted(set(self.excluded.values())))
            lines.append(f"{len(self.excluded)} tasks of {where} are marked exclude and are not graded "
                         f"({first_few(list(self.excluded), SHOWN_TASKS)}: {reasons})")
        if self.without_outputs:
            lines.append(f"--tasks-with-outputs: {len(self.without_outputs)} tasks of {where} that no condition has "
                         f"an output for are left out ({first_few(self.without_outputs, SHOWN_TASKS)})")
        return lines


@dataclass
class LoadedRun:
    cases: list[Case]
    inventories: list[ConditionInventory]
    described_by: list[Path] = field(default_factory=list)  # dataset.json or the manifest, for provenance
    notes: list[str] = field(default_factory=list)  # what a reader must be told (a Harbor trial without its workbook)
    left_out: LeftOut = field(default_factory=LeftOut)

    def missing_outputs(self) -> int:
        return sum(len(i.missing) for i in self.inventories)

    def most_outputs_missing(self) -> str | None:
        """A warning when more than half the cases have no output (a run over part of the
        benchmark, graded as if over all of it), with what to do; else None."""
        missing, total = self.missing_outputs(), len(self.cases)
        if not total or missing * 2 <= total:
            return None
        absent = {path for inventory in self.inventories for path in inventory.missing}  # looked for once already
        with_outputs = len({c.task_id for c in self.cases if c.output_path not in absent})
        return (f"warning: {missing} of {total} cases ({100 * missing / total:.0f}%) have no output and will count "
                f"as failures (missing-output). If you ran part of the benchmark, pass --tasks-with-outputs to "
                f"grade only the {with_outputs} tasks some condition has an output for")


def load_run(dataset: Path | None = None, conditions: Mapping[str, Path] | Sequence[str] = (), runs_dir: Path | None = None,
             manifest: Path | None = None, stack: str = "default", benchmark: str = "spreadsheetbench",
             harbor: Sequence[str] = (), tasks_with_outputs: bool = False) -> LoadedRun:
    """The cases of a run. ``conditions``: ``{"none": Path(...)}`` or ``["none=OUT", ...]``;
    ``runs_dir``: every subfolder a condition; ``harbor``: Harbor job folders, ``[NAME=]JOB_DIR``
    (the condition is the job folder's name unless named). A condition folder that is a Harbor
    job is read as one. ``tasks_with_outputs``: only the tasks some condition has an output for
    (a run over part of the benchmark); the others are in ``left_out``. A :class:`RunError`
    says what is wrong."""
    if (dataset is None) == (manifest is None):
        raise ArgumentError("give either --dataset (with --condition NAME=OUTDIR, --runs DIR or --harbor JOB_DIR) "
                            "or --manifest")
    if manifest is not None:
        if conditions or runs_dir or harbor:
            raise ArgumentError("--condition, --runs and --harbor go with --dataset; a manifest names each case's output")
        cases = manifest_cases(manifest)
        cases, left_out = _with_outputs(cases, LeftOut(), tasks_with_outputs)
        return LoadedRun(cases, take_inventory(cases), [manifest], left_out=left_out)
    assert dataset is not None
    folders = dict(conditions) if isinstance(conditions, Mapping) else parse_conditions(list(conditions))
    folders = {name: Path(folder) for name, folder in folders.items()}
    if runs_dir is not None:
        for name, folder in run_conditions(runs_dir).items():
            if name in folders:
                raise ArgumentError(f"condition {name!r} is both a --condition and a folder of --runs {runs_dir}")
            folders[name] = folder
    jobs = {name: folder for name, folder in folders.items() if is_harbor_job(folder)}  # detected
    for text in harbor:
        label, sep, where = text.partition("=")
        name, job_dir = (label, Path(where)) if sep else (Path(text).name, Path(text))
        if name in folders or name in jobs:
            raise ArgumentError(f"condition {name!r} is named twice (--harbor {text})")
        jobs[name] = job_dir
    plain = {name: folder for name, folder in folders.items() if name not in jobs}
    notes: list[str] = []
    tasks = dataset_tasks(dataset)  # dataset.json read, and each task's folder listed, once
    cases = spreadsheetbench_cases(dataset, plain, stack, benchmark, notes, tasks) if plain else []
    for name, folder in jobs.items():
        job = harbor_cases(dataset, name, folder, None if stack == "default" else stack, benchmark)
        cases += job.cases
        notes += job.notes
    if not plain and not jobs:
        raise ArgumentError("name at least one condition: --condition NAME=OUTPUT_DIR, --runs DIR or --harbor JOB_DIR")
    left_out = LeftOut(without_answer_files=[t.task_id for t in tasks if not t.goldens and t.exclude is None],
                       excluded={t.task_id: t.exclude for t in tasks if t.exclude is not None})
    cases, left_out = _with_outputs(cases, left_out, tasks_with_outputs)
    return LoadedRun(cases, take_inventory(cases, plain), [dataset / "dataset.json"], notes, left_out)


def _with_outputs(cases: list[Case], left_out: LeftOut, chosen: bool) -> tuple[list[Case], LeftOut]:
    """With ``chosen``, the cases of the tasks some condition has an output for (every case
    of such a task, in every condition: a missing one is still a failure), the other tasks
    added to ``left_out``."""
    if not chosen:
        return cases, left_out
    ran = {c.task_id for c in cases if c.output_path.is_file()}
    dropped = list(dict.fromkeys(c.task_id for c in cases if c.task_id not in ran))
    left_out.without_outputs = dropped
    return [c for c in cases if c.task_id in ran], left_out
