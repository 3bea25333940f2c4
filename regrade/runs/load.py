"""A run from what a user names: a SpreadsheetBench folder with its conditions, or a manifest.

The one place the command line and the Python API turn ``--dataset``/``--condition``/``--runs``/
``--manifest`` into cases, with each condition's inventory (:mod:`regrade.runs.inventory`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from regrade.runs.cases import ArgumentError, Case, manifest_cases, parse_conditions, run_conditions, spreadsheetbench_cases
from regrade.runs.harbor import harbor_cases, is_harbor_job
from regrade.runs.inventory import ConditionInventory, take_inventory


@dataclass
class LoadedRun:
    cases: list[Case]
    inventories: list[ConditionInventory]
    described_by: list[Path] = field(default_factory=list)  # dataset.json or the manifest, for provenance
    notes: list[str] = field(default_factory=list)  # what a reader must be told (a Harbor trial without its workbook)


def load_run(dataset: Path | None = None, conditions: Mapping[str, Path] | Sequence[str] = (), runs_dir: Path | None = None,
             manifest: Path | None = None, stack: str = "default", benchmark: str = "spreadsheetbench",
             harbor: Sequence[str] = ()) -> LoadedRun:
    """The cases of a run. ``conditions``: ``{"none": Path(...)}`` or ``["none=OUT", ...]``;
    ``runs_dir``: every subfolder a condition; ``harbor``: Harbor job folders, ``[NAME=]JOB_DIR``
    (the condition is the job folder's name unless named). A condition folder that is a Harbor
    job is read as one. A :class:`RunError` says what is wrong."""
    if (dataset is None) == (manifest is None):
        raise ArgumentError("give either --dataset (with --condition NAME=OUTDIR, --runs DIR or --harbor JOB_DIR) "
                            "or --manifest")
    if manifest is not None:
        if conditions or runs_dir or harbor:
            raise ArgumentError("--condition, --runs and --harbor go with --dataset; a manifest names each case's output")
        cases = manifest_cases(manifest)
        return LoadedRun(cases, take_inventory(cases), [manifest])
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
    cases = spreadsheetbench_cases(dataset, plain, stack=stack, benchmark=benchmark) if plain else []
    notes = []
    for name, folder in jobs.items():
        job = harbor_cases(dataset, name, folder, None if stack == "default" else stack, benchmark)
        cases += job.cases
        notes += job.notes
    if not plain and not jobs:
        raise ArgumentError("name at least one condition: --condition NAME=OUTPUT_DIR, --runs DIR or --harbor JOB_DIR")
    return LoadedRun(cases, take_inventory(cases, plain), [dataset / "dataset.json"], notes)
