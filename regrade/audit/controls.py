"""The sealed control pack: outputs whose truth is known, for grader audits.

``fixtures/controls`` holds, per control, an output workbook, the answer workbook it is
graded against, and a record in ``controls.json`` (id, category, positive or negative,
answer_position, why). ``manifest.json`` lists every file with its sha256 and the pack
digest: the sha256 of the lines ``<sha256>  <file name>`` of every listed file, sorted by
name. A pack whose files do not match its manifest is refused, so an audit report always
names exactly the pack it was made with (``fixtures/make_controls.py`` rebuilds the pack
byte for byte).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path

from regrade.results.provenance import sha256_file
from regrade.workbook.calls import calls
from regrade.workbook.formula import bare_name
from regrade.workbook.sheets import formula_texts

PACK = Path(__file__).resolve().parents[2] / "fixtures" / "controls"
MANIFEST = "manifest.json"
KINDS = ("positive", "negative")


class PackError(ValueError):
    """A control pack that is missing, altered, or not the one the user expected."""


@dataclass(frozen=True)
class Control:
    id: str
    category: str
    kind: str
    output: Path
    answer: Path
    answer_position: str
    why: str
    task_id: str | None = None  # the benchmark task a generated control was made from
    answer_sheet: str | None = None
    input: Path | None = None  # the task's input workbook, for graders that need it (TaskContext)
    instruction_type: str | None = None
    perturbation: dict | None = None  # what a perturbed control changed: cell, from, to, relative size


@dataclass(frozen=True)
class ControlPack:
    folder: Path
    digest: str
    controls: list[Control]
    selection: dict | None = None  # when only some controls are graded: what chose them, and the pack's count


def pack_files(folder: Path) -> dict[str, str]:
    """{file name: sha256} of every file of the pack but the manifest."""
    return {p.name: digest for p in sorted(folder.iterdir())
            if p.is_file() and p.name != MANIFEST and (digest := sha256_file(p)) is not None}


def digest_of(files: dict[str, str]) -> str:
    lines = "".join(f"{sha}  {name}\n" for name, sha in sorted(files.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def write_manifest(folder: Path = PACK) -> str:
    """Seal the pack as it is on disk; returns its digest."""
    files = pack_files(folder)
    digest = digest_of(files)
    (folder / MANIFEST).write_text(json.dumps({"digest": digest, "files": files}, indent=1) + "\n")
    return digest


def load_pack(folder: Path = PACK, expect_digest: str | None = None) -> ControlPack:
    """The pack, checked file by file against its manifest (and against ``expect_digest``)."""
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise PackError(f"{folder} has no {MANIFEST}: not a sealed control pack")
    manifest = json.loads(manifest_path.read_text())
    listed, on_disk = manifest.get("files", {}), pack_files(folder)
    changed = sorted(n for n in set(listed) | set(on_disk) if listed.get(n) != on_disk.get(n))
    if changed:
        raise PackError(f"the control pack in {folder} does not match its manifest: {', '.join(changed[:5])}"
                        + (f" and {len(changed) - 5} more" if len(changed) > 5 else ""))
    digest = digest_of(on_disk)
    if digest != manifest.get("digest"):
        raise PackError(f"the manifest of {folder} names digest {manifest.get('digest')}, its files make {digest}")
    if expect_digest is not None and expect_digest != digest:
        raise PackError(f"the control pack's digest is {digest}, not the expected {expect_digest}: "
                        "this is a different pack, and its report would not compare with yours")
    records = json.loads((folder / "controls.json").read_text())
    controls = [Control(r["id"], r["category"], r["kind"], folder / r["output"], folder / r["answer"],
                        r["answer_position"], r["why"], r.get("task_id"), r.get("answer_sheet"),
                        folder / r["input"] if r.get("input") else None, r.get("instruction_type"),
                        r.get("perturbation")) for r in records]
    if bad := [c.id for c in controls if c.kind not in KINDS]:
        raise PackError(f"controls with a kind other than positive/negative: {', '.join(bad)}")
    return ControlPack(folder, digest, controls)


def select_controls(pack: ControlPack, tasks: tuple[str, ...] = (), calling: tuple[str, ...] = ()) -> ControlPack:
    """The controls of ``pack`` that come from one of ``tasks`` and whose output has a formula
    calling one of the functions ``calling`` (a sheet's cell formulas, read from the sheet XML;
    ``_xlfn.`` prefixes and case ignored); either left empty chooses every control. The pack
    keeps its digest (its files are unchanged) and records the selection, which a report
    carries. Raises :class:`PackError` when nothing is selected."""
    if not tasks and not calling:
        return pack
    functions = tuple(sorted({bare_name(name.upper()) for name in calling}))
    chosen = [c for c in pack.controls if (not tasks or c.task_id in tasks)
              and (not functions or _calls_any(c.output, functions))]
    named = sorted(tasks)
    selection = {"tasks": named, "calling": list(functions), "of": len(pack.controls)}
    if not chosen:
        said = [f"comes from task {' or '.join(named)}"] if tasks else []
        said += [f"has a formula calling {' or '.join(functions)}"] if functions else []
        raise PackError(f"no control of the pack in {pack.folder} {' and '.join(said)}")
    return replace(pack, controls=chosen, selection=selection)


def _calls_any(workbook: Path, functions: tuple[str, ...]) -> bool:
    return any(call.name in functions for text in formula_texts(workbook, functions) for call in calls(text))
