"""Grading one case: the golden's values against one engine's view of the output.

A :class:`Grade` says whether the output passes under a policy with one engine's
values: ``passed`` is True, False, or None when the engine abstained on a graded
cell or could not evaluate the workbook (never a fail in disguise).
"""

from __future__ import annotations

import contextlib
import operator
import re
import threading
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import compress, filterfalse, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, Collection, Iterator, Sequence

import openpyxl


from regrade.engines.base import Engine
from regrade.values import (EXCEL_ERROR_CODES, CannotEvaluate, CellRef, CellResult, ExcelError, WorkbookValues,
                            cells_by_sheet)
from regrade.engines.cached import EMPTY_CELL, read_cells
from regrade.workbook.cones import VOLATILE_FUNCTIONS, FormulaGraph
from regrade.workbook.external import linked_workbook
from regrade.workbook.formula import boundaries, referenced_cells
from regrade.workbook.openpyxl_reading import formula_cells_of, load_formula_book, read_book
from regrade.engines.readings import decoded_text, number_value
from regrade.workbook.screening import HOSTILE_REASONS, screen
from regrade.workbook.sheets import (
    array_formula_ranges, cell_formula, formula_cells, formulas_may_mention, resolve_sheet,
)
from regrade.grading.policies import Policy, SheetExtent, TargetError, rounding_boundary
from regrade.runs.cases import Case

# A workbook failure that is the output's own fault: the grade is a genuine fail.
OUTPUT_FAULTS = frozenset({"missing-file", *HOSTILE_REASONS})  # the output itself is broken: a fail
LIMIT_FAULTS = frozenset({"timeout", "memory-limit", "crashed"})  # an engine hit a limit or died: nothing is known


def output_fault(reason: str) -> str:
    """The case-level reason for a workbook failure: an engine's missing file is the run's missing output."""
    return "missing-output" if reason == "missing-file" else reason


@dataclass(frozen=True)
class CellOutcome:
    """One graded cell that did not simply match: a mismatch or an abstention."""

    ref: CellRef
    golden: CellResult
    value: CellResult
    formula: str | None

    @property
    def abstained(self) -> bool:
        return isinstance(self.value, CannotEvaluate)


@dataclass
class Grade:
    engine: str
    passed: bool | None
    reason: str | None = None
    message: str = ""
    cells: list[CellOutcome] = field(default_factory=list)
    formulas: dict[CellRef, str] = field(default_factory=dict)
    values: dict[CellRef, CellResult] = field(default_factory=dict)


@dataclass
class Golden:
    """The golden workbook's sheets and cached values (Excel's own results).

    Values are read on demand, streaming only the rows that hold the cells asked for
    (:meth:`read`); a sheet's size is measured (a full load) only when a position asks
    for a whole column or row.
    """

    path: Path
    sheet_names: list[str]
    _cells: dict[CellRef, tuple[CellResult, str]] = field(default_factory=dict)  # value, number format
    _sizes: dict[str, tuple[int, int]] | None = None
    _formula_book: openpyxl.Workbook | None = None
    _values_book: openpyxl.Workbook | None = None  # the read-only book load_golden opened, read again for values
    _graph: FormulaGraph | None = None
    _formula_cells: dict[str, set[tuple[int, int]]] | None = None
    _targets: dict[tuple[str, str, str | None], list[CellRef]] = field(default_factory=dict)  # by policy, position, sheet
    _last_read: tuple[list[CellRef], int, object, list] | None = None  # values_read's last answer, and for what
    _last_formulas: tuple[Sequence[CellRef], list[CellRef]] | None = None  # formulas_among's last answer, and for what
    _mentions_unrepeatable: bool | None = None  # whether a formula may call a volatile function or read another file
    _unrepeatable: dict[tuple[CellRef, ...], tuple[list[CellRef], list[CellRef]]] = field(default_factory=dict)
    _referenced_cells: int | None = None
    _volatile_calls: dict[CellRef, frozenset[str]] = field(default_factory=dict)

    @property
    def extents(self) -> list[SheetExtent]:
        return [_GoldenSheet(self, name) for name in self.sheet_names]

    def targets(self, policy: Policy, position: str, answer_sheet: str | None) -> list[CellRef]:
        """The cells ``position`` grades under ``policy``, their golden values read (TargetError,
        GoldenError). Kept: a task's conditions, and a warm worker's later runs, grade the same
        cells of it; the list is shared, and not to be changed."""
        key = (policy.name, position, answer_sheet)
        if (known := self._targets.get(key)) is not None:
            return known
        targets = policy.targets(position, answer_sheet, self.extents)
        self.read(targets)
        self._targets[key] = targets
        return targets

    def read(self, refs: Collection[CellRef]) -> None:
        """Read the values of those of ``refs`` not read yet (GoldenError if the file breaks)."""
        missing = list(filterfalse(self._cells.__contains__, refs))  # most often none, found without a Python call per cell
        missing = [ref for ref in missing if ref.sheet in self.sheet_names]
        if not missing:
            return
        with _reading(self.path, counted=True):
            self._cells.update(read_cells(self.path, missing, book=self._values_book)[1])

    def forget_books(self) -> None:
        """Let go of the workbooks kept for reading and of the formulas read (a caller still
        reading one keeps it); the values, sheet sizes and formula cells found stay, and what
        is asked again is read again."""
        self._values_book = self._formula_book = self._graph = None

    def size(self, sheet: str) -> tuple[int, int]:
        """The sheet's last row and column as openpyxl's full load counts them."""
        if self._sizes is None:
            with _reading(self.path, counted=True):
                book = read_book(self.path, data_only=True)
            self._sizes = {ws.title: (ws.max_row, ws.max_column) for ws in book.worksheets}
        return self._sizes[sheet]

    def value(self, ref: CellRef) -> CellResult:
        found = self._cells.get(ref)
        if found is None:
            self.read([ref])
            found = self._cells.get(ref, EMPTY_CELL)
        value = found[0]
        if isinstance(value, str) and value in EXCEL_ERROR_CODES:
            return ExcelError(value)
        return value

    def values_read(self, refs: list[CellRef], unread: object) -> list:
        """The value of each of ``refs`` as the file stores it (an error code as its text),
        ``unread`` for one not read yet (:meth:`value` reads it). The list is shared, and not to be
        changed: asked again for the same list of cells (a case's two grades), with no value read
        since (values are only ever added), it is given again."""
        last = self._last_read
        if last is not None and last[0] is refs and last[1] == len(self._cells) and last[2] is unread:
            return last[3]
        values = list(map(_VALUE_OF, map(self._cells.get, refs, repeat((unread, None)))))
        self._last_read = (refs, len(self._cells), unread, values)
        return values

    def number_format(self, ref: CellRef) -> str:
        if ref not in self._cells:
            self.read([ref])
        return self._cells.get(ref, EMPTY_CELL)[1]

    def formula(self, ref: CellRef) -> str | None:
        """The golden cell's formula, or None (the formulas are read on first use)."""
        return cell_formula(self._formulas()[ref.sheet].cell(ref.row, ref.column))

    def volatile_calls(self, ref: CellRef) -> frozenset[str]:
        """The volatile functions (TODAY, RAND ...) the cell's value may depend on (found once)."""
        if (known := self._volatile_calls.get(ref)) is None:
            known = self._volatile_calls[ref] = frozenset(self._formula_graph().calls_in_cone([ref], VOLATILE_FUNCTIONS))
        return known

    def problem(self, targets: list[CellRef]) -> str | None:
        """Why the golden cannot judge these cells, or None.

        Its graded formulas hold no cached value at all (a file openpyxl wrote, never
        opened in Excel), or one depends on a volatile function, whose saved value is
        of the moment the golden was saved.
        """
        formulas = self.formulas_among(targets)
        if not formulas:
            return None
        if all(self.value(t) is None for t in formulas):
            return f"the golden's answer formulas ({len(formulas)}) have no cached values: it was never computed"
        volatile, _ = self.unrepeatable(formulas)
        if volatile:
            calls = ", ".join(sorted(self.volatile_calls(volatile[0])))
            return f"the golden's {volatile[0]} depends on {calls}(): its value is of the day it was saved"
        return None

    def functions_in_cone(self, refs: list[CellRef]) -> set[str]:
        """The functions the cells' values may depend on."""
        return self._formula_graph().cone(refs).functions

    def inputs(self, ref: CellRef) -> tuple | None:
        """Everything the cell's value is computed from (FormulaGraph.inputs), or None."""
        return self._formula_graph().inputs(ref)

    def reads_other_workbooks(self, ref: CellRef) -> bool:
        """Whether the cell's value depends on an external link (``[1]Data!A1``)."""
        return self._formula_graph().cone([ref]).external

    def unrepeatable(self, refs: list[CellRef]) -> tuple[list[CellRef], list[CellRef]]:
        """The cells among ``refs`` whose cone is volatile, and those that read other workbooks.

        The usual case (neither) is settled without the formula graph when no formula of the
        file mentions a volatile function or another workbook (a search of its XML as text),
        else by one walk of the cells' joint cone. Kept per list of cells: a golden's controls, and
        a task's conditions, ask it for the same cells, each answer shared and not to be changed."""
        key = tuple(refs)
        if (known := self._unrepeatable.get(key)) is None:
            known = self._unrepeatable[key] = self._find_unrepeatable(refs)
        return known

    def _find_unrepeatable(self, refs: list[CellRef]) -> tuple[list[CellRef], list[CellRef]]:
        if self._mentions_unrepeatable is None:
            self._mentions_unrepeatable = formulas_may_mention(self.path, _UNREPEATABLE_MENTION)
        if not self._mentions_unrepeatable:
            return [], []
        graph = self._formula_graph()
        joint = graph.cone(refs)
        if not joint.external and not (VOLATILE_FUNCTIONS & (graph.all_functions() if joint.open else joint.functions)):
            return [], []
        volatile = [r for r in refs if self.volatile_calls(r)]
        external = [r for r in refs if r not in volatile and self.reads_other_workbooks(r)]
        return volatile, external

    def _formula_graph(self) -> FormulaGraph:
        """The graph of the golden's formulas as the engines compute them: of its linked copy
        (:mod:`regrade.workbook.external`) when it caches other workbooks' values."""
        if self._graph is None:
            with linked_workbook(self.path) as computed:
                self._graph = FormulaGraph(self._formulas() if computed == self.path else load_formula_book(computed))
        return self._graph

    def _formulas(self) -> openpyxl.Workbook:
        if self._formula_book is None:
            self._formula_book = load_formula_book(self.path)
        return self._formula_book

    def formulas_among(self, refs: Sequence[CellRef]) -> list[CellRef]:
        """Those of ``refs`` on the golden's sheets that hold a formula, in their order. The list
        is shared, and not to be changed: asked again for the same list of cells (a case asks
        several times), it is given again."""
        last = self._last_formulas
        if last is not None and last[0] is refs:
            return last[1]
        if self._formula_cells is None:
            self._formula_cells = formula_cells(self.path) or {}
        if not self._formula_cells:  # the quick scan could not answer
            found = [ref for ref in refs if ref.sheet in self.sheet_names and self.is_formula(ref)]
        else:
            found = []
            for name, run in cells_by_sheet(refs).items():
                if (cells := self._formula_cells.get(name)) and name in self.sheet_names:
                    found.extend(ref for ref in run if (ref.row, ref.column) in cells)
        self._last_formulas = (refs, found)
        return found

    def is_formula(self, ref: CellRef) -> bool:
        if self._formula_cells is None:
            self._formula_cells = formula_cells(self.path) or {}
        if self._formula_cells:  # the quick scan of the sheet XML answered
            return (ref.row, ref.column) in self._formula_cells.get(ref.sheet, ())
        return self.formula(ref) is not None

    def referenced_cells(self) -> int:
        """The cells the golden's formulas reference, whole columns counted whole: a count of
        the work recomputing it asks for (:func:`regrade.workbook.formula.referenced_cells`); counted once."""
        if self._referenced_cells is None:
            with _reading(self.path):
                self._referenced_cells = sum(referenced_cells(c.text) for c in formula_cells_of(self._formulas()))
        return self._referenced_cells

    def all_formulas(self) -> list[CellRef]:
        """Every formula cell of the workbook, sheet by sheet in row order (GoldenError if it breaks)."""
        quick = formula_cells(self.path)
        if quick is not None:
            return [CellRef(sheet, row, column) for sheet in self.sheet_names
                    for row, column in sorted(quick.get(sheet, ()))]
        with _reading(self.path):
            return [CellRef(c.sheet, c.row, c.column) for c in formula_cells_of(self._formulas())]


_UNREPEATABLE_MENTION = re.compile(  # a volatile call, or a reference to another workbook: [1]Data!A1
    r"(?i)\b(?:" + "|".join(sorted(VOLATILE_FUNCTIONS)) + r")\s*\(|\[\d+\]")


_VALUE_OF = itemgetter(0)  # a (value, number format) pair's value


class GoldenError(Exception):
    """The golden workbook cannot be read."""


OPEN_GOLDENS = 4  # goldens kept whole (their files open, their formulas once read): a task's conditions share one
REMEMBERED_GOLDEN_CELLS = 1_000_000  # the values read of goldens past those, kept in this process (some 130 MB)
_GOLDENS: OrderedDict[tuple, Golden] = OrderedDict()  # by the file's identity, the last used last
_GOLDENS_LOCK = threading.Lock()


def load_golden(path: Path) -> Golden:
    """The golden workbook. The last few are kept whole, as every condition of a task reads the
    same one; of those before, the values read are remembered (up to
    :data:`REMEMBERED_GOLDEN_CELLS` cells in all), so that a process grading another run of the
    same benchmark (a warm ``regrade serve`` worker) does not read them again. A golden is known
    by its path, inode, size and modification and change times: a file written again is read again."""
    if (failure := screen(path).failure) is not None:
        raise GoldenError(f"golden file {path}: {failure.reason}: {failure.detail}")
    resolved = path.resolve()
    stat = resolved.stat()
    identity = (str(resolved), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    with _GOLDENS_LOCK:
        if (known := _GOLDENS.get(identity)) is not None:
            _GOLDENS.move_to_end(identity)
            return known
    with _reading(resolved, counted=True):
        book = read_book(resolved, data_only=True, read_only=True)
        names = list(book.sheetnames)
    golden = Golden(resolved, names, _values_book=book)  # kept open: its values are read next, its strings parsed once
    with _GOLDENS_LOCK:
        _GOLDENS[identity] = golden
        kept = list(_GOLDENS.values())
        for older in kept[:-OPEN_GOLDENS]:
            older.forget_books()
        cells = sum(len(g._cells) for g in kept)
        while cells > REMEMBERED_GOLDEN_CELLS and len(_GOLDENS) > OPEN_GOLDENS:
            _, dropped = _GOLDENS.popitem(last=False)
            cells -= len(dropped._cells)
    return golden


def forget_goldens() -> None:
    """Forget every golden this process read (a test's, or a memory-bound caller's, fresh start)."""
    with _GOLDENS_LOCK:
        for golden in _GOLDENS.values():
            golden.forget_books()
        _GOLDENS.clear()


_VALUE_READING = {"cpu_s": 0.0}


def golden_reading_cpu_s() -> float:
    """The CPU seconds this process has spent reading goldens' sheet names, sizes and values:
    what any grader reading them needs (a run's floor counts it, :class:`regrade.run.rescore.EngineWork`)."""
    return _VALUE_READING["cpu_s"]


@contextlib.contextmanager
def _reading(path: Path, counted: bool = False) -> Iterator[None]:
    """openpyxl reading the golden: its warnings silenced, any error it raises on a broken file
    a GoldenError (running out of memory is a limit, not a broken file: it goes on up).
    ``counted``: a reading of values any grader needs, its CPU added to :func:`golden_reading_cpu_s`."""
    started = time.process_time()
    try:
        with warnings.catch_warnings():  # openpyxl warns about every extension it drops
            warnings.simplefilter("ignore")
            yield
    except MemoryError:
        raise
    except Exception as exc:  # openpyxl raises many kinds on a broken file
        raise GoldenError(f"golden file {path} cannot be read: {exc}") from exc
    finally:
        if counted:
            _VALUE_READING["cpu_s"] += time.process_time() - started


class _GoldenSheet:
    """A golden sheet whose size is measured only when a position reads it."""

    def __init__(self, golden: Golden, name: str):
        self._golden = golden
        self.name = name

    @property
    def max_row(self) -> int:
        return self._golden.size(self.name)[0]

    @property
    def max_column(self) -> int:
        return self._golden.size(self.name)[1]


def recomputed_view(
    stored: WorkbookValues, computed: WorkbookValues, spilled: Collection[CellRef] = ()
) -> WorkbookValues:
    """The output as a full engine sees it: formula cells, and the cells an array formula
    covers (``spilled``: openpyxl writes only the anchor), as the engine computed them;
    every other cell as stored in the file.

    A cell without a formula holds a constant; recomputation cannot change it, and an
    engine's reading of it is no better than the file's (IronCalc reads a numeric cell
    stored without a value, ``<c t="n"/>``, as 0 where Excel and openpyxl see it empty).
    A computed number is a date or time when the file's format for that cell says so.
    """
    if computed.failure is not None or stored.failure is not None:
        return computed
    cells = dict(computed.cells)
    for ref, value in stored.cells.items():
        if ref in cells and ref not in stored.formulas and ref not in computed.formulas and ref not in spilled:
            cells[ref] = decoded_text(value)  # compared with the golden's decoded text
        elif isinstance(number := cells.get(ref), float) and ref in stored.number_formats:
            cells[ref] = number_value(number, stored.number_formats[ref])  # the file's format decides
    return WorkbookValues(sheet_names=computed.sheet_names, cells=cells, formulas=computed.formulas)


def _uncached_golden(golden: Golden, ref: CellRef, expected: CellResult, actual: CellResult) -> bool:
    """A golden formula read as empty cannot judge a non-empty computed value: its cache
    may be missing, or may be Excel's "" (openpyxl reads both as None)."""
    return expected is None and actual not in (None, "") and golden.is_formula(ref)


_ABSENT = object()  # a graded cell the values do not hold, or the golden has not read


def _not_surely_equal(policy: Policy, targets: list[CellRef], golden: Golden,
                      values: WorkbookValues) -> Iterator[tuple[CellRef, Any]]:  # Any: a CellResult or _ABSENT
    """Each graded cell with the value ``values`` hold for it (``_ABSENT`` where none), but for
    the cells the policy settles as equal to the golden's at once (``Policy.surely_equal``):
    a cell whose golden value is not read yet is never one, nor any where sheet names must
    match exactly and one does not."""
    actual = list(map(values.cells.get, targets, repeat(_ABSENT)))
    if policy.exact_sheet_names and not cells_by_sheet(targets).keys() <= set(values.sheet_names):
        return zip(targets, actual)
    expected = golden.values_read(targets, _ABSENT)
    return compress(zip(targets, actual), map(operator.not_, _surely_equal(policy, expected, actual)))


_LAST_SETTLED: list[tuple[Policy, list, list, list[bool]]] = []  # _surely_equal's last answer, and for what


def _surely_equal(policy: Policy, expected: list, actual: list) -> list[bool]:
    """``policy.surely_equal(expected, actual)``; given again where asked for the very same
    objects (a case's recomputed grade, where no engine changed a graded cell, after its
    value-only one; ``expected`` is the golden's shared list, :meth:`Golden.values_read`)."""
    if _LAST_SETTLED:
        last_policy, last_expected, last_actual, settled = _LAST_SETTLED[0]
        if last_policy is policy and last_expected is expected and len(last_actual) == len(actual) \
                and all(map(operator.is_, last_actual, actual)):
            return settled
    settled = policy.surely_equal(expected, actual)
    _LAST_SETTLED[:] = [(policy, expected, actual, settled)]
    return settled


def grade(
    policy: Policy, targets: list[CellRef], golden: Golden, engine: str, values: WorkbookValues, recomputed: bool = False
) -> Grade:
    """Compare an engine's values of the output with the golden under ``policy``.

    With ``recomputed`` (a full engine's values), a graded cell whose golden is a formula
    without a cached value abstains (``uncached-golden``) instead of failing, and so does a
    number that only binary rounding sets apart from the golden's (``rounding-boundary``).
    """
    if values.failure is not None:
        fault = values.failure.reason in OUTPUT_FAULTS
        return Grade(engine, False if fault else None, output_fault(values.failure.reason), values.failure.detail)
    result = Grade(engine, True, formulas=values.formulas, values=values.cells)
    missing_sheets: set[str] = set()
    exact_sheets, sheets_present = policy.exact_sheet_names, values.sheet_names
    equal, golden_value = policy.equal, golden.value
    for ref, actual in _not_surely_equal(policy, targets, golden, values):
        if actual is _ABSENT or (exact_sheets and ref.sheet not in sheets_present):
            missing_sheets.add(ref.sheet)
            continue
        expected = golden_value(ref)
        if recomputed:  # Excel's text, and the engine's, hold control characters themselves
            expected = decoded_text(expected)
            if not isinstance(actual, CannotEvaluate) and _uncached_golden(golden, ref, expected, actual):
                actual = CannotEvaluate("uncached-golden", f"the golden's formula at {ref} has no cached value")
        if not isinstance(actual, CannotEvaluate):
            if equal(expected, actual):
                continue
            if recomputed:  # unequal under the policy: an abstention where binary rounding alone sets them apart
                actual = rounding_boundary(policy, expected, actual) or actual
        result.cells.append(CellOutcome(ref, expected, actual, values.formulas.get(ref)))
    mismatches = [c for c in result.cells if not c.abstained]
    if missing_sheets:
        near = {name: resolve_sheet(name, values.sheet_names) for name in missing_sheets}
        result.passed = False
        if all(near.values()):  # an exact-name policy and a sheet named otherwise ("sheet1" for "Sheet1")
            result.reason = "wrong-sheet"
            result.message = "the answer is on " + ", ".join(f"{near[n]!r} (the golden says {n!r})" for n in sorted(near))
        else:
            result.reason = "missing-sheet"
            result.message = f"the output has no sheet {', '.join(sorted(map(repr, missing_sheets)))}"
    elif mismatches:
        result.passed, result.reason = False, "wrong-value"
        verb = "differs" if len(mismatches) == 1 else "differ"
        result.message = f"{len(mismatches)} of {len(targets)} graded cell{'' if len(targets) == 1 else 's'} {verb} " \
                         "from the golden"
    elif result.cells:
        abstentions = [c.value for c in result.cells if isinstance(c.value, CannotEvaluate)]
        details = sorted({f"{a.key}: {a.detail}" for a in abstentions})
        reasons = [a.reason for a in abstentions]
        result.passed = None
        result.reason = "engines-disagree" if "engines-disagree" in reasons else reasons[0]
        result.message = f"{engine} cannot evaluate {len(abstentions)} graded cells ({'; '.join(details)})"
    return result


def grade_case(case: Case, policy: Policy, engine: Engine, stored: Engine) -> Grade:
    """One engine's grade of one case; ``stored`` supplies the constants a full engine's
    view keeps (see :func:`recomputed_view`)."""
    try:
        golden = load_golden(case.answer_path)
        targets = golden.targets(policy, case.answer_position, case.answer_sheet)
    except GoldenError as exc:
        return Grade(engine.name, None, "invalid-golden", str(exc))
    except TargetError as exc:  # the official grader fails such a case whatever the values
        return Grade(engine.name, False if exc.reason == "official-grader-error" else None, exc.reason, str(exc))
    values = engine.evaluate(case.output_path, targets)
    if engine.full:
        kept = stored.evaluate(case.output_path, targets)
        values = recomputed_view(kept, values, spilled_cells(case.output_path, kept))
    return grade(policy, targets, golden, engine.name, values, recomputed=engine.full)


def spilled_cells(path: Path, stored: WorkbookValues) -> set[CellRef]:
    """The cells an array formula of the output covers, other than its anchor."""
    cells: set[CellRef] = set()
    for sheet, area in array_formula_ranges(path):
        if ":" in area and sheet < len(stored.sheet_names):
            min_col, min_row, max_col, max_row = boundaries(area)
            cells.update(CellRef(stored.sheet_names[sheet], r, c) for r in range(min_row, max_row + 1)
                         for c in range(min_col, max_col + 1) if (r, c) != (min_row, min_col))
    return cells
