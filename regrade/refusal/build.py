"""``regrade slice build``: a sealed pack of ordinary tasks and negative controls, in the
benchmark's own layout, so any harness that runs the benchmark runs the pack unchanged.

A **negative control** is a real task with a *specification gap*: from each of its input
workbooks the cells its answer depends on are removed (the constant cells the golden's answer
formulas read, directly or through other formulas: their cone), the instruction unchanged.
Each is **verified by construction**: the golden with the same cells removed is recomputed by
regrade's engines, and its answer formulas must no longer give the golden's values (a full
grade that fails). A task whose answer holds no formula, whose cone regrade cannot place (a
reference it cannot resolve, another workbook), or whose recomputation the engines do not
decide as a failure is left out, counted with the reason.

What the harness sees tells nothing of which is which: task ids are drawn at random (not
derived from the source id), records carry no kind, the tasks are listed in id order, and a
source task gives either an ordinary task or a negative control, never both. The **key** (each
task's kind and source, the cells removed, the answers of ordinary tasks) is written apart,
to its own folder. Both are sealed: ``manifest.json`` lists every file with its sha256 and one
digest over them; the same dataset, settings and seed give byte-identical folders.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

from regrade.audit.controls import digest_of
from regrade.grading.grade import GoldenError, load_golden
from regrade.grading.policies import TargetError, get_policy
from regrade.results.provenance import regrade_version, sha256_file
from regrade.results.records import CaseRecord
from regrade.run import ResultCache, RescoreSettings, rescore_run
from regrade.runs.cases import Case, RunError, golden_files, input_file, load_dataset, task_fields
from regrade.values import CellRef
from regrade.workbook import cell_xml
from regrade.workbook.cones import Area, load_graph

MANIFEST = "manifest.json"
KEY = "key.json"


class SliceError(ValueError):
    """A pack that cannot be built as asked (too few tasks, a folder in the way)."""


@dataclass
class Source:
    """One task of the benchmark: its record and test cases (answer, input)."""

    task_id: str
    record: dict[str, Any]
    position: str
    answer_sheet: str | None
    cases: dict[int, tuple[Path, Path]]  # case number -> (answer, input)


@dataclass
class Removal:
    """What a negative control's input lost, per test case: the cells cleared, and the check."""

    case: int
    cells: list[str]  # 'Sheet'!A1 as CellRef prints them
    verdict: str  # regrade's grade of the golden with the same cells cleared, against the golden


@dataclass
class SliceTask:
    id: str  # opaque: drawn at random
    kind: str  # ordinary or negative
    source: str  # the benchmark's task id
    removals: list[Removal] = field(default_factory=list)


@dataclass
class LeftOut:
    source: str
    reason: str


@dataclass
class SlicePack:
    folder: Path
    key_folder: Path
    digest: str
    key_digest: str
    tasks: list[SliceTask]
    left_out: list[LeftOut]

    def count(self, kind: str) -> int:
        return sum(t.kind == kind for t in self.tasks)


def build_slice(dataset: Path, folder: Path, key_folder: Path, ordinary: int, negative: int, settings: RescoreSettings,
                seed: int = 0, workers: int = 1, cache: ResultCache | None = None,
                on_check: Callable[[int, CaseRecord, bool], None] | None = None) -> SlicePack:
    """Draw ``negative`` negative controls and ``ordinary`` ordinary tasks from ``dataset`` (with
    ``seed``), verify the negatives with the engines of ``settings``, and write and seal the pack
    in ``folder`` and its key in ``key_folder`` (both new or empty)."""
    for target in (folder, key_folder):
        if target.exists() and any(target.iterdir()):
            raise SliceError(f"{target} is not empty: the pack and its key are written to new folders")
    if folder.resolve() == key_folder.resolve():
        raise SliceError("the key goes to a folder of its own, apart from the pack the harness is given")
    sources = _sources(dataset)
    rng = random.Random(seed)
    order = sorted(sources, key=lambda s: s.task_id)
    rng.shuffle(order)
    scratch = key_folder / "checks"
    scratch.mkdir(parents=True)
    negatives, left_out = _negatives(order, negative, scratch, settings, workers, cache, on_check)
    if len(negatives) < negative:
        shutil.rmtree(scratch)
        raise SliceError(f"only {len(negatives)} of the {negative} negative controls asked for could be made and "
                         f"verified from {dataset} ({len(left_out)} tasks left out)")
    used = {source.task_id for source, _ in negatives} | {entry.source for entry in left_out}
    ordinaries = [s for s in order if s.task_id not in used][:ordinary]
    if len(ordinaries) < ordinary:
        shutil.rmtree(scratch)
        raise SliceError(f"{dataset} has {len(ordinaries)} tasks left for the {ordinary} ordinary ones asked for")
    ids = _opaque_ids(rng, len(negatives) + len(ordinaries))
    tasks: list[SliceTask] = []
    records = []
    for (source, removals), task_id in zip(negatives, ids):
        tasks.append(SliceTask(task_id, "negative", source.task_id, removals))
        records.append(_record(source, task_id))
        for case, (_, given) in sorted(source.cases.items()):
            stripped = scratch / f"{source.task_id}-{case}.input.xlsx"
            _copy(stripped, folder / "spreadsheet" / task_id / f"{case}_{task_id}_input.xlsx")
    for source, task_id in zip(ordinaries, ids[len(negatives):]):
        tasks.append(SliceTask(task_id, "ordinary", source.task_id))
        records.append(_record(source, task_id))
        for case, (answer, given) in sorted(source.cases.items()):
            _copy(given, folder / "spreadsheet" / task_id / f"{case}_{task_id}_input.xlsx")
            _copy(answer, key_folder / "answers" / task_id / f"{case}_{task_id}_answer.xlsx")
    shutil.rmtree(scratch)
    records.sort(key=lambda r: r["id"])
    (folder / "dataset.json").write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    digest = seal(folder)
    tasks.sort(key=lambda t: t.id)
    (key_folder / KEY).write_text(json.dumps({
        "pack_digest": digest, "seed": seed, "ordinary": ordinary, "negative": negative,
        "engines": list(settings.engines), "quorum": settings.quorum, "policy": settings.policy,
        "source_dataset": str(dataset), "regrade_version": regrade_version(),
        "tasks": [asdict(t) for t in tasks], "left_out": [asdict(e) for e in left_out]}, indent=1) + "\n")
    return SlicePack(folder, key_folder, digest, seal(key_folder), tasks, left_out)


def seal(folder: Path) -> str:
    """Write ``manifest.json``: the sha256 of every file under ``folder`` (by relative path) and one
    digest over them; returns the digest."""
    files, digest = contents(folder)
    (folder / MANIFEST).write_text(json.dumps({"digest": digest, "files": files}, indent=1) + "\n")
    return digest


def contents(folder: Path) -> tuple[dict[str, str], str]:
    """The sha256 of every file under ``folder`` but the manifest, by relative path, and the digest over them."""
    files = {str(p.relative_to(folder)): str(sha256_file(p)) for p in sorted(folder.rglob("*"))
             if p.is_file() and p.name != MANIFEST}
    return files, digest_of(files)  # the control packs' digest (regrade.audit.controls), over relative paths


def _sources(dataset: Path) -> list[Source]:
    path = dataset / "dataset.json"
    found = []
    for number, record in enumerate(load_dataset(dataset), start=1):
        try:
            task_id, position, sheet = task_fields(path, number, record)
        except RunError:
            continue  # a record regrade cannot read is no candidate; `regrade audit benchmark` names it
        cases = {}
        for case, answer in golden_files(dataset, task_id).items():
            given = input_file(answer, task_id, case)
            if given is not None:
                cases[case] = (answer, given)
        if cases:
            found.append(Source(task_id, record, position, sheet, cases))
    return found


def _negatives(order: list[Source], wanted: int, scratch: Path, settings: RescoreSettings, workers: int,
               cache: ResultCache | None, on_check: Callable[[int, CaseRecord, bool], None] | None
               ) -> tuple[list[tuple[Source, list[Removal]]], list[LeftOut]]:
    """Negative controls from the tasks in ``order``, checked in batches until ``wanted`` are verified."""
    made: list[tuple[Source, list[Removal]]] = []
    left_out: list[LeftOut] = []
    position = 0
    while len(made) < wanted and position < len(order):
        batch = order[position:position + 2 * (wanted - len(made))]
        position += len(batch)
        planned: list[tuple[Source, dict[int, list[CellRef]]]] = []
        checks: list[Case] = []
        for source in batch:
            removed, why = _strip(source, scratch)
            if why is not None:
                left_out.append(LeftOut(source.task_id, why))
                continue
            planned.append((source, removed))
            checks += [Case(condition="negative-check", task_id=source.task_id, case=case,
                            output_path=scratch / f"{source.task_id}-{case}.golden.xlsx", answer_path=answer,
                            answer_position=source.position, answer_sheet=source.answer_sheet)
                       for case, (answer, _) in sorted(source.cases.items())]
        records = iter(rescore_run(checks, settings, workers, cache, on_check))
        for source, removed in planned:
            verdicts = {case: next(records) for case in sorted(source.cases)}
            undone = [case for case, r in verdicts.items() if r.full_pass is not False]
            if undone:
                r = verdicts[undone[0]]
                left_out.append(LeftOut(source.task_id, f"case {undone[0]}: the golden without the removed cells is "
                                        f"{r.verdict}, not a failure regrade decided"))
            elif len(made) < wanted:
                made.append((source, [Removal(case, [str(c) for c in removed[case]], verdicts[case].verdict)
                                      for case in sorted(source.cases)]))
    return made, left_out


def _strip(source: Source, scratch: Path) -> tuple[dict[int, list[CellRef]], str | None]:
    """Each test case's input and golden with the constant cells of the answer's cone cleared,
    written to ``scratch``; or why the task gives no negative control."""
    policy = get_policy("spreadsheetbench")
    removed: dict[int, list[CellRef]] = {}
    for case, (answer, given) in sorted(source.cases.items()):
        try:
            targets = load_golden(answer).targets(policy, source.position, source.answer_sheet)
        except (GoldenError, TargetError) as exc:
            return {}, f"case {case}: invalid golden or position: {exc}"
        graph = load_graph(answer)
        if graph is None:
            return {}, f"case {case}: openpyxl cannot read the golden"
        formulas = [t for t in targets if t in graph.formulas]
        if not formulas:
            return {}, f"case {case}: the answer holds no formula, so nothing in the input is known to be needed"
        cone = graph.cone(formulas)
        if cone.open or cone.external or cone.computed_names:
            return {}, f"case {case}: the answer's cone reads what regrade cannot place (a computed reference, a " \
                       "defined name that is a formula, another workbook)"
        graded = set(targets)
        sheets = {area.sheet for area in cone.areas}
        inputs, goldens = cell_xml.read_sheets(given, sheets), cell_xml.read_sheets(answer, sheets)
        cells = sorted(ref for ref in _stored_in(inputs, cone.areas) if ref not in graded and ref not in graph.formulas
                       and not cell_xml.has_formula(inputs.cell(ref)))  # type: ignore[arg-type]
        if not cells:
            return {}, f"case {case}: the answer's cone reads no constant the input holds"
        inputs.write_edited(given, scratch / f"{source.task_id}-{case}.input.xlsx",
                            {ref: cell_xml.emptied(inputs.cell(ref)) for ref in cells})  # type: ignore[arg-type]
        in_golden = {ref: cell for ref in cells if (cell := goldens.cell(ref)) is not None}
        goldens.write_edited(answer, scratch / f"{source.task_id}-{case}.golden.xlsx",
                             {ref: cell_xml.emptied(cell) for ref, cell in in_golden.items()})
        removed[case] = cells
    return removed, None


def _stored_in(sheets: cell_xml.SheetsXml, areas: Iterable[Area]) -> set[CellRef]:
    """The cells the file stores inside any of ``areas`` (the cone's): a small area is looked up
    cell by cell, a large one (a whole column) in one pass over its sheet's cells, parsed once."""
    found: set[CellRef] = set()
    parsed: dict[str, list[CellRef]] = {}
    for area in areas:
        part = sheets.parts.get(area.sheet)
        if part is None or part not in sheets.index:
            continue
        stored = sheets.index[part]
        if (area.max_row - area.min_row + 1) * (area.max_col - area.min_col + 1) <= len(stored):
            found.update(ref for row in range(area.min_row, area.max_row + 1)
                         for column in range(area.min_col, area.max_col + 1)
                         if (ref := CellRef(area.sheet, row, column)).coordinate in stored)
            continue
        if area.sheet not in parsed:
            parsed[area.sheet] = [CellRef(area.sheet, row, column_index_from_string(letters))
                                  for letters, row in map(coordinate_from_string, stored)]
        found.update(ref for ref in parsed[area.sheet]
                     if area.min_row <= ref.row <= area.max_row and area.min_col <= ref.column <= area.max_col)
    return found


def _opaque_ids(rng: random.Random, count: int) -> list[str]:
    ids: list[str] = []
    while len(ids) < count:
        candidate = f"{rng.getrandbits(40):010x}"
        if candidate not in ids:
            ids.append(candidate)
    return ids


def _record(source: Source, task_id: str) -> dict[str, Any]:
    """The source's dataset record with the new id and folder; nothing that names its kind or source."""
    return {**{k: v for k, v in source.record.items() if k not in ("id", "spreadsheet_path")},
            "id": task_id, "spreadsheet_path": f"spreadsheet/{task_id}"}


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes())
