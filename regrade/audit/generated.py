"""Control packs generated from a benchmark's own tasks: outputs whose truth is known by construction.

From each test case's golden file (an answer file Excel saved, with Excel's cached values),
by editing its sheet XML in place (:mod:`regrade.workbook.cell_xml`; every other part and
cell stays Excel's own):

=======================  ========  ==========================================================
category                 kind      the control
=======================  ========  ==========================================================
golden                   positive  the golden itself
uncached                 positive  the golden, its answer formulas' cached values removed (as
                                   openpyxl writes a formula)
constants                positive  the answer range as constants: each formula replaced by the
                                   value Excel cached for it
absolute-references      positive  the answer formulas with every cell reference made absolute
                                   (``A1`` → ``$A$1``): in its own cell the same reference
stale-cache              negative  one answer formula changed so its value changes (``+1``, an
                                   hour, ``NOT``, ``&"x"``), Excel's old cached value kept
changed-uncached         negative  the same change, with no cached value
perturbed-constant       negative  one answer cell's value changed, as a constant
do-nothing               negative  the unmodified input, where a cell of the answer range that
                                   holds no formula differs from the golden's
one-row-off              negative  the answer range's values one row down, as constants
empty-range              negative  the answer range emptied, where the golden's is not empty
=======================  ========  ==========================================================

A cell an array formula fills (a CSE array's or a dynamic array's spill, other than its
anchor) holds the formula's last values, not a constant: no recalculation keeps an edit of
it. Such a cell is never the perturbed one, and where an array formula outside the answer
range fills cells inside it, the constants, one-row-off and empty-range controls are not
made (their edits would not stick).

A control is kept only where its truth is certain:

- where its answer range holds only constants, the policy's comparison of those values
  with the golden's is the truth (no engine can change a constant), and a control whose
  values do not come out as its kind says (a shift that changes no value) is left out;
- where it holds formulas, regrade's own engines must decide it: a control they abstain on
  or disagree about is left out and counted, never guessed. One they decide against its
  kind is kept: it is regrade's own error, which the audit reports like any grader's.

Not generated: the ``_xlfn.`` prefix dropped. Excel reads a newer function written without
it in a file as an unknown name and shows ``#NAME?`` (XlsxWriter's documentation on future
functions, EPPlus's on function prefixes), so that spelling is not equivalent.
Test cases that yield no control (no formula in the range, an invalid golden, an
unreadable position) are listed in ``not_checked`` with the reason.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.utils.cell import column_index_from_string

from regrade.audit.controls import MANIFEST, PackError, write_manifest
from regrade.audit.labelled import change_for
from regrade.grading.grade import GoldenError, load_golden
from regrade.grading.policies import TargetError, get_policy
from regrade.results.provenance import regrade_version, sha256_file
from regrade.results.records import CaseRecord
from regrade.runs.cases import Case, RunError, golden_files, input_file, load_dataset, task_fields
from regrade.values import CellRef, ExcelError
from regrade.workbook import cell_xml
from regrade.workbook.formula import MAX_COLUMNS, MAX_ROWS, boundaries

if TYPE_CHECKING:
    from regrade.run import RescoreSettings, ResultCache

CATEGORIES: dict[str, tuple[str, str]] = {
    "golden": ("positive", "the golden itself"),
    "uncached": ("positive", "the golden with its answer formulas' cached values removed"),
    "constants": ("positive", "the answer range as constants, each formula replaced by Excel's cached value"),
    "absolute-references": ("positive", "the answer formulas with every cell reference made absolute"),
    "stale-cache": ("negative", "one answer formula changed so its value changes, Excel's old cached value kept"),
    "changed-uncached": ("negative", "one answer formula changed so its value changes, with no cached value"),
    "perturbed-constant": ("negative", "one answer cell's value changed, as a constant"),
    "do-nothing": ("negative", "the unmodified input, which differs from the golden in the answer range"),
    "one-row-off": ("negative", "the answer range's values one row down, as constants"),
    "empty-range": ("negative", "the answer range emptied, where the golden's is not empty"),
}
CONSTANT_CATEGORIES = ("constants", "perturbed-constant", "do-nothing", "one-row-off", "empty-range")
PACK_RECORD = "pack.json"


@dataclass(frozen=True)
class TestCase:
    task_id: str
    case: int
    answer: Path
    input: Path | None
    position: str
    answer_sheet: str | None
    instruction_type: str | None = None


@dataclass(frozen=True)
class Candidate:
    """A control written to disk, not yet known to be kept."""

    id: str
    task_id: str
    case: int
    category: str
    output: Path
    answer: Path
    answer_position: str
    answer_sheet: str | None
    has_formulas: bool  # whether a graded cell of it holds a formula (then only an engine can say its value)
    input: Path | None = None  # the task's input, copied into the pack (graders that need it get it)
    instruction_type: str | None = None
    perturbation: dict | None = None  # perturbed-constant: the cell, its value before and after, the relative size

    @property
    def kind(self) -> str:
        return CATEGORIES[self.category][0]

    def as_case(self) -> Case:
        return Case(condition=self.category, task_id=self.task_id, case=self.case, output_path=self.output,
                    answer_path=self.answer, answer_position=self.answer_position, answer_sheet=self.answer_sheet)


@dataclass(frozen=True)
class NotChecked:
    task: str
    case: int | None
    reason: str
    category: str | None = None


@dataclass
class GeneratedPack:
    folder: Path
    digest: str
    kept: list[Candidate]
    not_checked: list[NotChecked] = field(default_factory=list)


def test_cases(dataset: Path, tasks: int | None = None, seed: int = 0) -> tuple[list[TestCase], list[NotChecked]]:
    """Every test case of the dataset's tasks (``tasks`` of them drawn with ``seed``, in dataset order)."""
    path = dataset / "dataset.json"
    records = load_dataset(dataset)
    chosen = list(range(len(records)))
    if tasks is not None and tasks < len(records):
        chosen = sorted(random.Random(seed).sample(chosen, tasks))
    found, skipped = [], []
    for index in chosen:
        try:
            task_id, position, sheet = task_fields(path, index + 1, records[index])
        except RunError as exc:
            skipped.append(NotChecked(str(records[index].get("id", index + 1)) if isinstance(records[index], dict)
                                      else str(index + 1), None, str(exc)))
            continue
        goldens = golden_files(dataset, task_id)
        if not goldens:
            skipped.append(NotChecked(task_id, None, "no golden file"))
        for number, answer in sorted(goldens.items()):
            found.append(TestCase(task_id, number, answer, input_file(answer, task_id, number), position, sheet,
                                  _text_or_none(records[index].get("instruction_type"))))
    return found, skipped


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def dataset_digest(dataset: Path, cases: list[TestCase]) -> str:
    """sha256 over dataset.json and every golden and input file the controls were made from."""
    files = [dataset / "dataset.json", *sorted({p for c in cases for p in (c.answer, c.input) if p is not None})]
    lines = "".join(f"{sha256_file(p)}  {p.relative_to(dataset)}\n" for p in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def write_candidates(case: TestCase, policy_name: str, folder: Path) -> tuple[list[Candidate], list[NotChecked]]:
    """The controls of one test case, written to ``folder``; what could not be made, and why."""
    policy = get_policy(policy_name)
    base = f"{case.task_id}-{case.case}"
    try:
        golden = load_golden(case.answer)
        targets = golden.targets(policy, case.position, case.answer_sheet)
    except (GoldenError, TargetError) as exc:
        return [], [NotChecked(case.task_id, case.case, f"invalid golden or position: {exc}")]
    if not targets:
        return [], [NotChecked(case.task_id, case.case, "the answer position grades no cell")]
    answer = folder / f"{base}.answer.xlsx"
    answer.write_bytes(case.answer.read_bytes())
    given_input = None
    if case.input is not None:
        given_input = folder / f"{base}.input.xlsx"
        given_input.write_bytes(case.input.read_bytes())
    sheets = cell_xml.read_sheets(case.answer, {t.sheet for t in targets})
    if any(t.sheet not in sheets.parts for t in targets):
        return [], [NotChecked(case.task_id, case.case, "an answer cell's sheet has no part in the file")]
    made: list[Candidate] = []
    skipped: list[NotChecked] = []

    def write(category: str, elements: dict[CellRef, str] | None, source: Path | None = None,
              has_formulas: bool | None = None, perturbation: dict | None = None) -> None:
        output = folder / f"{base}.{category}.xlsx"
        if source is not None:
            output.write_bytes(source.read_bytes())
        else:
            assert elements is not None
            sheets.write_edited(case.answer, output, elements)
            has_formulas = any(t not in elements or cell_xml.holds_formula(elements[t]) for t in formulas)
        made.append(Candidate(f"{base}.{category}", case.task_id, case.case, category, output, answer,
                              case.position, case.answer_sheet, bool(has_formulas), given_input,
                              case.instruction_type, perturbation))

    def skip(category: str, reason: str) -> None:
        skipped.append(NotChecked(case.task_id, case.case, reason, category))

    present = {t: c for t in targets if (c := sheets.cell(t)) is not None}
    formulas = [t for t, c in present.items() if cell_xml.has_formula(c)]
    followers = {ref: anchor for sheet in {t.sheet for t in targets}  # they hold an array formula's values
                 for ref, anchor in sheets.array_followers(sheet, present).items()}
    cached = [t for t in formulas if golden.value(t) is not None]
    if formulas and not cached:
        return [], [NotChecked(case.task_id, case.case, "the golden's answer formulas hold no cached values")]
    write("golden", None, case.answer, has_formulas=bool(formulas))
    if formulas:
        write("uncached", {t: cell_xml.without_cache(present[t]) for t in formulas})
        spelled = {t: _absolute(f) for t in formulas if not cell_xml.is_shared(present[t])
                   and (f := cell_xml.formula_text(present[t])) is not None}
        spelled = {t: s for t, s in spelled.items() if s != cell_xml.formula_text(present[t])}
        if spelled:
            write("absolute-references", {t: cell_xml.respelled(present[t], s) for t, s in spelled.items()})
        else:
            skip("absolute-references", "no relative cell reference outside a shared formula")
        changed = next((t for t in cached if cell_xml.FORMULA.search(present[t].group("content") or "")
                        and not isinstance(golden.value(t), ExcelError)), None)
        if changed is not None:
            change = change_for(golden.value(changed))
            for category, keep in (("stale-cache", True), ("changed-uncached", False)):
                write(category, {changed: cell_xml.with_formula(present[changed], change, keep)})
        else:
            for category in ("stale-cache", "changed-uncached"):
                skip(category, "no answer formula with its own text and a value to change")
    else:
        for category in ("uncached", "absolute-references", "stale-cache", "changed-uncached"):
            skip(category, "no formula in the answer range")
    reach = _shared_beyond(present, set(targets))
    spilled_in = next((anchor for ref, anchor in followers.items() if ref in present and anchor not in present), None)
    if reach:
        for category in ("constants", "one-row-off", "empty-range"):
            skip(category, f"a shared formula at {reach} reaches beyond the answer range")
    elif spilled_in is not None:  # its anchor would give those cells its values again
        for category in ("constants", "one-row-off", "empty-range"):
            skip(category, f"an array formula at {spilled_in.coordinate} outside the answer range fills cells in it")
    else:
        write("constants", {t: cell_xml.as_constant(present[t]) for t in formulas})
        if any(CellRef(t.sheet, t.row - 1, t.column) in present for t in present):
            write("one-row-off", _shifted(present, set(targets)))
        else:
            skip("one-row-off", "a one-row answer range")
        write("empty-range", {t: cell_xml.emptied(c) for t, c in present.items()})
    perturbed = _perturbed([t for t in targets if t not in followers], present, golden)
    if perturbed is None:
        skip("perturbed-constant", "no answer cell whose value can be changed on its own")
    else:
        edit, what_changed = perturbed
        write("perturbed-constant", edit, perturbation=what_changed)
    if case.input is None:
        skip("do-nothing", "no input file")
    else:
        write("do-nothing", None, case.input, has_formulas=_holds_formulas(case.input, targets))
    return made, skipped


def write_all_candidates(cases: list[TestCase], policy_name: str, folder: Path, workers: int = 1,
                         on_case: Callable[[TestCase], None] | None = None
                         ) -> list[tuple[list[Candidate], list[NotChecked]]]:
    """Each test case's controls and what could not be made (:func:`write_candidates`), in the
    order of ``cases``, made in ``workers`` case workers (:func:`regrade.run.pool.map_in_workers`):
    each case writes files of its own name only, so the pack on disk is the same however many
    make it. ``on_case`` is called as each case is done."""
    told = on_case or (lambda case: None)
    if workers <= 1 or len(cases) < 2 * workers:
        made = []
        for case in cases:
            made.append(_candidates_of(policy_name, folder, case))
            told(case)
        return made
    from regrade.run.pool import map_in_workers

    return map_in_workers(functools.partial(_candidates_of, policy_name, folder), cases, workers,
                          lambda index: told(cases[index]),
                          lambda case: ([], [NotChecked(case.task_id, case.case, "controls could not be made: "
                                                                                 "the process making them died twice")]))


def _candidates_of(policy_name: str, folder: Path, case: TestCase) -> tuple[list[Candidate], list[NotChecked]]:
    """:func:`write_candidates`, an error it raises that case's reason for making none."""
    try:
        return write_candidates(case, policy_name, folder)
    except Exception as exc:  # an answer file no edit can be made in: that case, not the pack
        return [], [NotChecked(case.task_id, case.case, f"controls could not be made: {type(exc).__name__}: {exc}")]


def _holds_formulas(workbook: Path, targets: list[CellRef]) -> bool:
    """Whether any of ``targets`` holds a formula in ``workbook`` (a file that cannot be read: True,
    so that only an engine would judge it)."""
    try:
        sheets = cell_xml.read_sheets(workbook, {t.sheet for t in targets})
    except (OSError, zipfile.BadZipFile, KeyError, UnicodeDecodeError):
        return True
    return any((c := sheets.cell(t)) is not None and cell_xml.has_formula(c) for t in targets)


def _left_out(candidate: Candidate, record: CaseRecord) -> str | None:
    """Why a control is not kept, from regrade's rescore of it (None: it is kept)."""
    if record.full_pass is None:  # an engine abstained, or the golden itself could not be judged
        reasons = ", ".join(record.reasons) or "no reason"
        return f"regrade did not decide it ({record.verdict}: {reasons})"
    if not candidate.has_formulas:  # constants: the value-only grade is the truth
        truth = record.shallow_pass
        if truth is (candidate.kind == "positive"):
            return None
        return "its values equal the golden's" if truth else "its values do not pass against the golden"
    return None


def seal(folder: Path, kept: list[Candidate], not_checked: list[NotChecked], settings: dict, source: dict) -> str:
    """Write controls.json and pack.json for the kept controls, remove every other file, and
    seal the pack (manifest.json); returns its digest."""
    records = [{"id": c.id, "task_id": c.task_id, "case": c.case, "category": c.category, "kind": c.kind,
                "output": c.output.name, "answer": c.answer.name, "answer_position": c.answer_position,
                "answer_sheet": c.answer_sheet, "why": CATEGORIES[c.category][1],
                "input": c.input.name if c.input is not None else None, "instruction_type": c.instruction_type,
                **({"perturbation": c.perturbation} if c.perturbation is not None else {})} for c in kept]
    (folder / "controls.json").write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    (folder / PACK_RECORD).write_text(json.dumps({
        "generator": settings, "source": source, "regrade_version": regrade_version(),
        "not_checked": [asdict(n) for n in not_checked]}, indent=1, ensure_ascii=False) + "\n")
    wanted = {"controls.json", PACK_RECORD, MANIFEST} | {c.output.name for c in kept} | {c.answer.name for c in kept} \
        | {c.input.name for c in kept if c.input is not None}
    for path in folder.iterdir():
        if path.is_file() and path.name not in wanted:
            path.unlink()
    return write_manifest(folder)


def not_checked_of(folder: Path) -> list[dict]:
    """The ``not_checked`` list a generated pack records (an empty list for a hand-made pack)."""
    record = folder / PACK_RECORD
    return json.loads(record.read_text()).get("not_checked", []) if record.is_file() else []


# --- the edits -------------------------------------------------------------------------------


def _shifted(present: dict[CellRef, cell_xml.Cell], graded: set[CellRef]) -> dict[CellRef, str]:
    """Each answer cell given the value the golden holds one row up (the top row emptied);
    cells the sheet XML does not hold stay empty."""
    return {ref: cell_xml.copied_from(cell, present.get(above) if (above := CellRef(ref.sheet, ref.row - 1, ref.column))
                                      in graded else None)
            for ref, cell in present.items()}


def _perturbed(targets: list[CellRef], present: dict[CellRef, cell_xml.Cell],
               golden) -> tuple[dict[CellRef, str], dict] | None:  # noqa: ANN001: a Golden
    """The first answer cell holding a constant changed (a number + 1, a text + "x", a boolean
    negated); else the first formula's cached value so changed, as a constant. ``targets``
    leaves out the cells an array formula fills (their value is the formula's, not a constant).
    With the edit, what it changed: the cell, its value before and after,
    and for a number the change relative to it, so a reader tells a grader's tolerance from a
    defect (a 1% relative tolerance accepts 1000 -> 1001)."""
    order = sorted((t for t in targets if t in present), key=lambda t: cell_xml.has_formula(present[t]))
    for ref in order:
        cell = present[ref]
        if cell.group("content") is None or cell_xml.shared_master_range(cell):
            continue
        value = golden.value(ref)
        kind, text = cell_xml.cell_type(cell), cell_xml.cached_text(cell)
        change: dict = {"cell": f"{ref.sheet}!{ref.coordinate}"}
        if isinstance(value, bool):
            return {ref: cell_xml.with_boolean(cell, not value)}, {**change, "from": value, "to": not value}
        if kind in ("n", "d") and text not in (None, ""):
            try:
                before = float(text or "")
            except ValueError:
                continue
            return ({ref: cell_xml.with_number(cell, repr(before + 1))},
                    {**change, "from": before, "to": before + 1, "relative": 1 / abs(before) if before else None})
        if isinstance(value, str) and kind in ("s", "str", "inlineStr"):
            return {ref: cell_xml.with_text(cell, value + "x")}, {**change, "from": value, "to": value + "x"}
    return None


def _shared_beyond(present: dict[CellRef, cell_xml.Cell], graded: set[CellRef]) -> str | None:
    """The first answer cell starting a shared formula whose range reaches past the answer range
    (its followers outside would lose the formula they copy)."""
    for ref, cell in present.items():
        if (reach := cell_xml.shared_master_range(cell)) is None:
            continue
        left, top, right, bottom = boundaries(reach)
        if any(CellRef(ref.sheet, row, column) not in graded
               for row in range(top, bottom + 1) for column in range(left, right + 1)):
            return ref.coordinate
    return None


_POINT = re.compile(r"\$?([A-Za-z]{1,3})\$?(\d+)")
_COLUMN = re.compile(r"\$?([A-Za-z]{1,3})")
_ROW = re.compile(r"\$?(\d+)")


def _absolute(formula: str) -> str:
    """``formula`` with every cell reference absolute; names, strings and functions untouched."""
    tokens = Tokenizer(formula if formula.startswith("=") else "=" + formula).items
    for token in tokens:
        if token.type == Token.OPERAND and token.subtype == Token.RANGE:
            token.value = _absolute_reference(token.value)
    return "".join(t.value for t in tokens)


def _absolute_reference(text: str) -> str:
    prefix, bang, address = text.rpartition("!")
    parts = address.split(":")
    written = []
    for part in parts:
        if (point := _POINT.fullmatch(part)) and _in_sheet(point.group(1), int(point.group(2))):
            written.append(f"${point.group(1)}${point.group(2)}")
        elif len(parts) == 2 and (column := _COLUMN.fullmatch(part)) and _in_sheet(column.group(1), 1):
            written.append(f"${column.group(1)}")
        elif len(parts) == 2 and (row := _ROW.fullmatch(part)) and 1 <= int(row.group(1)) <= MAX_ROWS:
            written.append(f"${row.group(1)}")
        else:
            return text  # a defined name, a table, an error: not a cell reference
    return prefix + bang + ":".join(written)


def _in_sheet(column: str, row: int) -> bool:
    return column.isupper() and column_index_from_string(column) <= MAX_COLUMNS and 1 <= row <= MAX_ROWS


# --- making a pack ---------------------------------------------------------------------------


def generate_pack(dataset: Path, folder: Path, settings: RescoreSettings, tasks: int | None = None, seed: int = 0,
                  workers: int = 1, cache: ResultCache | None = None,
                  on_case: Callable[[TestCase], None] | None = None,
                  on_check: Callable[[int], Callable[[int, CaseRecord, bool], None]] | None = None,
                  executor: str = "local", scheduler: str | None = None) -> GeneratedPack:
    """Generate, check and seal the controls of ``dataset`` in ``folder`` (which must be empty or new).

    The controls are written in ``workers`` case workers (:func:`write_all_candidates`).
    ``settings`` are regrade's rescore settings: its policy grades the controls, its engines
    confirm those whose answer range holds formulas (in a pool of ``workers``, or on a Dask
    cluster with ``executor`` "dask" and ``scheduler``, as :func:`regrade.run.rescore_run`; cached).
    ``on_case`` is called as each test case's controls are written; ``on_check(count)`` once they
    all are, returning what is called as each control is checked (``rescore_run``'s ``on_record``)."""
    from regrade.run import rescore_run

    if folder.exists() and any(folder.iterdir()):
        raise PackError(f"{folder} is not empty: a generated pack needs a folder of its own")
    folder.mkdir(parents=True, exist_ok=True)
    cases, not_checked = test_cases(dataset, tasks, seed)
    candidates: list[Candidate] = []
    for made, skipped in write_all_candidates(cases, settings.policy, folder, workers, on_case):
        candidates += made
        not_checked += skipped
    # one rescore of every control: its value-only grade is the truth where the answer range holds
    # only constants; where it holds formulas, the engines must decide it
    unjudgeable = "the input's answer range holds formulas: only an engine could say whether it differs"
    for candidate in candidates:
        if candidate.category == "do-nothing" and candidate.has_formulas:
            not_checked.append(NotChecked(candidate.task_id, candidate.case, unjudgeable, candidate.category))
    checked = [c for c in candidates if not (c.category == "do-nothing" and c.has_formulas)]
    on_record = on_check(len(checked)) if on_check is not None else None
    records = rescore_run([c.as_case() for c in checked], settings, workers, cache, on_record,
                          executor=executor, scheduler=scheduler)
    kept = []
    for candidate, record in zip(checked, records):
        left_out = _left_out(candidate, record)
        if left_out is None:
            kept.append(candidate)
        else:
            not_checked.append(NotChecked(candidate.task_id, candidate.case, left_out, candidate.category))
    kept.sort(key=lambda c: (c.task_id, c.case, list(CATEGORIES).index(c.category)))
    generator = {"tasks": tasks, "seed": seed, "policy": settings.policy, "engines": list(settings.engines),
                 "timeout_s": settings.timeout_s, "quorum": settings.quorum, "categories": list(CATEGORIES)}
    source = {"dataset": str(dataset), "digest": dataset_digest(dataset, cases), "test_cases": len(cases)}
    digest = seal(folder, kept, not_checked, generator, source)
    return GeneratedPack(folder, digest, kept, not_checked)
