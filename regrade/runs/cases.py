"""Loading a benchmark run from disk into :class:`Case` records.

Two layouts are read:

- SpreadsheetBench: ``DATASET/dataset.json`` with goldens
  ``DATASET/spreadsheet/<id>/<n>_<id>_answer.xlsx`` (Verified: ``1_<id>_golden.xlsx``, a bare
  ``golden.xlsx``, or golden files of another id: :func:`golden_files`)
  and, for each condition, an output folder holding ``<n>_<id>_output.xlsx``
  (directly, or under ``<id>/``). A file name with a space before ``.xlsx`` is found too.
  ``--runs DIR`` makes every subfolder of DIR a condition (:func:`run_conditions`).
- A manifest (CSV or JSONL) with columns ``stack, benchmark, condition, task_id,
  case, output_path, answer_path, answer_position`` and optional ``trial``,
  ``original_pass``, ``answer_sheet``; paths are relative to the manifest's folder.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator


class RunError(Exception):
    """A run that cannot be loaded at all (as opposed to one bad case)."""


class ArgumentError(RunError):
    """What the user named cannot be a run (a condition named twice, NAME=OUTDIR without a name):
    a usage error, exit status 2 on the command line."""


class Case(BaseModel):
    """One graded output of one test case of one task under one condition."""

    model_config = ConfigDict(frozen=True)

    stack: str = "default"
    benchmark: str = "spreadsheetbench"
    condition: str
    task_id: str
    case: int
    trial: int = 1
    output_path: Path
    answer_path: Path
    answer_position: str
    answer_sheet: str | None = None
    original_pass: bool | None = None
    original_grader: str | None = None  # what gave original_pass: "Harbor's verifier reward", an inspect_ai scorer ...

    @field_validator("task_id", mode="before")
    @classmethod
    def _task_id_text(cls, value: object) -> str:
        return str(value)

    @property
    def key(self) -> tuple[str, str, str, str, int, int]:
        return (self.stack, self.benchmark, self.condition, self.task_id, self.case, self.trial)


def load_dataset(dataset_dir: Path) -> list[dict]:
    path = dataset_dir / "dataset.json"
    if not path.is_file():
        raise RunError(f"{dataset_dir} has no dataset.json: is it a SpreadsheetBench folder?")
    records = read_json(path)
    if not isinstance(records, list):
        raise RunError(f"{path} must hold a list of task records")
    return records


def read_json(path: Path) -> object:
    """A JSON file's content, or a :class:`RunError` naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunError(f"{path} is not valid JSON: {exc}") from exc


def golden_files(dataset_dir: Path, task_id: str) -> dict[int, Path]:
    """The golden file of each test case of a task, by case number.

    ``<n>_<id>_answer.xlsx`` (also with a space before ``.xlsx``), or SpreadsheetBench
    Verified's ``<n>_<id>_golden.xlsx``; where no file names the task's own id, Verified's
    other two forms, as the public Harbor adapter reads them: golden files that carry another
    id (``1_39_golden.xlsx`` in folder 40), numbered in name order, and a bare ``golden.xlsx``."""
    folder = dataset_dir / "spreadsheet" / task_id
    if not folder.is_dir():
        return {}
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    own = re.compile(rf"^(\d+)_{re.escape(task_id)}_(answer|golden) ?\.xlsx$")
    found = {int(m.group(1)): folder / name for name in names if (m := own.match(name))}
    if found:
        return found
    others = [name for name in names if name.endswith(("_golden.xlsx", "_answer.xlsx"))]
    if others:
        return {number: folder / name for number, name in enumerate(others, start=1)}
    return {1: folder / "golden.xlsx"} if "golden.xlsx" in names else {}


def input_file(golden: Path, task_id: str, case: int) -> Path | None:
    """The unmodified input beside a golden file (``<n>_<id>_input.xlsx``, with the stray space
    some names have, or Verified's ``<n>_<id>_init.xlsx``, its bare ``initial.xlsx``, or the
    case-th ``_init.xlsx`` where the files carry another id), or None."""
    for name in (f"{case}_{task_id}_input.xlsx", f"{case}_{task_id}_input .xlsx", f"{case}_{task_id}_init.xlsx"):
        if (golden.parent / name).exists():
            return golden.parent / name
    if golden.name == "golden.xlsx":
        return golden.parent / "initial.xlsx" if (golden.parent / "initial.xlsx").exists() else None
    others = sorted(p for p in golden.parent.iterdir() if p.name.endswith(("_init.xlsx", "_input.xlsx")))
    return others[case - 1] if f"_{task_id}_" not in golden.name and len(others) >= case else None


def find_output(output_dir: Path, task_id: str, case: int) -> Path:
    """Where a condition's output for (task, case) is, or where it should have been."""
    name = f"{case}_{task_id}_output.xlsx"
    for candidate in (output_dir / name, output_dir / task_id / name, output_dir / f"{case}_{task_id}_output .xlsx"):
        if candidate.exists():
            return candidate
    return output_dir / name


def spreadsheetbench_cases(
    dataset_dir: Path, conditions: dict[str, Path], stack: str = "default", benchmark: str = "spreadsheetbench",
    notes: list[str] | None = None, tasks: list[DatasetTask] | None = None,
) -> list[Case]:
    """Every (condition, task, test case) of a SpreadsheetBench-layout run. A task whose
    ``spreadsheet/<id>/`` holds no answer file has no case, nor has a task the dataset marks
    ``exclude``: the caller says both (:func:`dataset_tasks`, given as ``tasks`` where it has
    read them already). An output found by :func:`lone_output` is said in ``notes``."""
    if not conditions:
        raise ArgumentError("name at least one condition: --condition NAME=OUTPUT_DIR")
    for name, folder in conditions.items():
        if folder.is_file():
            raise ArgumentError(f"output folder {folder} of condition {name!r} is a file: --condition takes "
                                "NAME=FOLDER, the folder that holds the condition's <n>_<id>_output.xlsx files")
        if not folder.is_dir():
            raise ArgumentError(f"output folder {folder} of condition {name!r} does not exist")
    cases: list[Case] = []
    for task_id, position, sheet, goldens, exclude in tasks if tasks is not None else dataset_tasks(dataset_dir):
        if exclude is not None:
            continue
        for condition, output_dir in conditions.items():
            for number, golden in goldens.items():
                output = find_output(output_dir, task_id, number)
                if not output.exists() and len(goldens) == 1 and (lone := lone_output(output_dir, task_id)):
                    output = lone
                    if notes is not None:
                        notes.append(f"condition {condition} task {task_id}: its one test case's output is read from "
                                     f"{lone.relative_to(output_dir)}, the one *_output.xlsx of its folder")
                cases.append(
                    Case(
                        stack=stack,
                        benchmark=benchmark,
                        condition=condition,
                        task_id=task_id,
                        case=number,
                        output_path=output,
                        answer_path=golden,
                        answer_position=position,
                        answer_sheet=sheet,
                    )
                )
    return cases


def lone_output(output_dir: Path, task_id: str) -> Path | None:
    """The one ``*_output.xlsx`` of ``<output_dir>/<id>/``, if it holds exactly one: the output of
    a task with one test case under another name (a runner of SpreadsheetBench Verified names
    the bare ``initial.xlsx`` tasks' outputs ``initial_output.xlsx``)."""
    folder = output_dir / task_id
    if not folder.is_dir():
        return None
    found = [p for p in folder.iterdir() if p.is_file() and p.name.endswith("_output.xlsx")]
    return found[0] if len(found) == 1 else None


class DatasetTask(NamedTuple):
    """A task of ``dataset.json``, with its golden files by case (none: nothing to grade) and
    the reason the dataset gives for excluding it (None: not excluded)."""

    task_id: str
    position: str
    sheet: str | None
    goldens: dict[int, Path]
    exclude: str | None


def dataset_tasks(dataset_dir: Path) -> list[DatasetTask]:
    """Each task of ``dataset.json``, in its order (see :class:`DatasetTask`)."""
    tasks = []
    for number, record in enumerate(load_dataset(dataset_dir), start=1):
        task_id, position, sheet = task_fields(dataset_dir / "dataset.json", number, record)
        tasks.append(DatasetTask(task_id, position, sheet, golden_files(dataset_dir, task_id), exclusion(record)))
    return tasks


def excluded_tasks(dataset_dir: Path) -> dict[str, str]:
    """The tasks ``dataset.json`` excludes (:func:`exclusion`), each with its reason; their
    golden files are not looked for."""
    found = {}
    for number, record in enumerate(load_dataset(dataset_dir), start=1):
        if (why := exclusion(record)) is not None:
            found[task_fields(dataset_dir / "dataset.json", number, record)[0]] = why
    return found


def exclusion(record: object) -> str | None:
    """A non-empty ``exclude`` of a task record (SpreadsheetBench Verified: "ignore, initial file
    already passes verification"): the task is not graded; else None."""
    if isinstance(record, dict) and record.get("exclude") not in (None, "", False):
        return str(record["exclude"])
    return None


def task_fields(path: Path, number: int, record: object) -> tuple[str, str, str | None]:
    """A dataset.json record's task id, answer_position and answer_sheet, or a :class:`RunError`
    naming the file, the record (or task) and the field."""
    if not isinstance(record, dict):
        raise RunError(f"{path} record {number}: a task record must be an object, not {type(record).__name__}")
    if record.get("id") in (None, ""):
        raise RunError(f"{path} record {number}: id is missing")
    task_id = str(record["id"])
    position = record.get("answer_position")
    if not isinstance(position, str) or not position.strip():
        said = "is missing" if "answer_position" not in record else f"is {position!r}, not a cell range"
        raise RunError(f"{path} task {task_id}: answer_position {said}")
    sheet = record.get("answer_sheet")
    if sheet is not None and not isinstance(sheet, str):
        raise RunError(f"{path} task {task_id}: answer_sheet is {sheet!r}, not a sheet name")
    return task_id, position, sheet or None


def run_conditions(runs_dir: Path) -> dict[str, Path]:
    """``--runs DIR``: every subfolder of DIR is a condition named after it (SpreadsheetBench's
    own ``outputs/{setting}_{model}/``). Hidden folders are skipped."""
    if not runs_dir.is_dir():
        raise ArgumentError(f"runs folder {runs_dir} " + ("is a file, not a folder" if runs_dir.is_file()
                                                          else "does not exist"))
    found = {p.name: p for p in sorted(runs_dir.iterdir()) if p.is_dir() and not p.name.startswith(".")}
    if not found:
        raise RunError(f"runs folder {runs_dir} has no subfolders: each condition's outputs go in a folder of their own")
    return found


def parse_conditions(texts: tuple[str, ...] | list[str]) -> dict[str, Path]:
    """``NAME=OUTDIR`` pairs; a name given twice is an error, not a folder silently dropped."""
    parsed: dict[str, Path] = {}
    for text in texts:
        name, sep, folder = text.partition("=")
        if not sep or not name or not folder:
            raise ArgumentError(f"--condition takes NAME=OUTDIR, got {text!r}")
        if name in parsed:
            raise ArgumentError(f"condition {name!r} is given twice ({parsed[name]} and {folder}); name each folder once")
        parsed[name] = Path(folder)
    return parsed


MANIFEST_COLUMNS = ("stack", "benchmark", "condition", "task_id", "case", "output_path", "answer_path", "answer_position")


def manifest_cases(manifest: Path) -> list[Case]:
    """Cases from a CSV or JSONL manifest."""
    if not manifest.is_file():
        raise RunError(f"manifest {manifest} does not exist")
    rows = read_rows(manifest)
    base = manifest.parent
    cases = []
    for number, row in enumerate(rows, start=1):
        missing = [c for c in MANIFEST_COLUMNS if row.get(c) in (None, "")]
        if missing:
            raise RunError(f"{manifest} row {number} lacks {', '.join(missing)}")
        fields = dict(row)
        fields["output_path"] = base / str(row["output_path"])
        fields["answer_path"] = base / str(row["answer_path"])
        fields["original_pass"] = _optional_bool(row.get("original_pass"), manifest, number)
        if fields["original_pass"] is not None:
            fields["original_grader"] = "the manifest's original_pass"
        for optional in ("trial", "answer_sheet"):
            if fields.get(optional) in ("", None):
                fields.pop(optional, None)
        try:
            cases.append(Case.model_validate(fields))
        except ValidationError as exc:
            raise RunError(f"{manifest} row {number}: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from exc
    return cases


def read_rows(manifest: Path) -> list[dict]:
    """The rows of a CSV or JSON Lines file, as dicts (a :class:`RunError` for a line that is no JSON)."""
    text = manifest.read_text(encoding="utf-8-sig")
    if manifest.suffix.lower() in (".jsonl", ".ndjson"):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise RunError(f"{manifest} line {number} is not JSON: {exc}") from exc
        return rows
    if manifest.suffix.lower() == ".csv":
        return list(csv.DictReader(text.splitlines()))
    raise RunError(f"manifest {manifest} must end in .csv or .jsonl")


def _optional_bool(value: object, manifest: Path, number: int) -> bool | None:
    if value in (None, ""):
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "pass", "yes"):
        return True
    if text in ("0", "false", "fail", "no"):
        return False
    raise RunError(f"{manifest} row {number}: original_pass {value!r} is not a boolean")
