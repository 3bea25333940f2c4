"""A run from what a user names: a SpreadsheetBench folder with its conditions, or a manifest.

The one place the command line and the Python API turn ``--dataset``/``--condition``/``--runs``/
``--manifest`` into cases, with each condition's inventory (:mod:`regrade.runs.inventory`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from regrade.runs.cases import ArgumentError, Case, manifest_cases, parse_conditions, run_conditions, spreadsheetbench_cases
from regrade.runs.inventory import ConditionInventory, take_inventory


@dataclass
class LoadedRun:
    cases: list[Case]
    inventories: list[ConditionInventory]
    described_by: list[Path] = field(default_factory=list)  # dataset.json or the manifest, for provenance


def load_run(dataset: Path | None = None, conditions: Mapping[str, Path] | Sequence[str] = (), runs_dir: Path | None = None,
             manifest: Path | None = None, stack: str = "default", benchmark: str = "spreadsheetbench") -> LoadedRun:
    """The cases of a run. ``conditions``: ``{"none": Path(...)}`` or ``["none=OUT", ...]``;
    ``runs_dir``: every subfolder a condition. A :class:`RunError` says what is wrong."""
    if (dataset is None) == (manifest is None):
        raise ArgumentError("give either --dataset (with --condition NAME=OUTDIR or --runs DIR) or --manifest")
    if manifest is not None:
        if conditions or runs_dir:
            raise ArgumentError("--condition and --runs go with --dataset; a manifest names each case's output")
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
    cases = spreadsheetbench_cases(dataset, folders, stack=stack, benchmark=benchmark)
    return LoadedRun(cases, take_inventory(cases, folders), [dataset / "dataset.json"])
