"""Engine work shared between workbooks that differ only in what no engine reads.

A full engine recomputes every formula of a workbook: what it computes depends on the
formulas and the constant cells, not on the values Excel cached for its formula cells
(Formulon recalculates every formula, a stale cache replaced and a missing one computed;
LibreOffice computes every formula with ``calculateAll`` after loading; IronCalc's
``evaluate`` computes every formula cell; regrade's own rules read the formulas, loaded
without their cached values). So two workbooks whose packages are the same once each formula
cell's cached value and its type (``<v>``, ``t=``) are removed get the same values from an
engine, for the same cells asked.

Two workbooks like that are common in a grader audit: a task's golden and its ``uncached``
control, its ``stale-cache`` and ``changed-uncached`` controls (:mod:`regrade.audit.generated`)
differ only in those caches. :class:`SharingEngine` keys each evaluation by
:func:`computation_key` and the cells asked for, and answers a repeated one from what it
remembers, a copy of the first answer, within one case worker (the cases of one golden are
graded by the same worker, :func:`regrade.run.rescore.same_golden`). An evaluation that
failed (a timeout, a crash, a memory limit) is not remembered: the next asks the engine again,
as it would have.

Where a formula cell's cached value does matter (the value-only view; a golden's cache against
which an engine is checked, :mod:`regrade.grading.golden_check`; TODAY() as of the day a
golden was saved, :mod:`regrade.grading.dated`), it is read outside the engines' evaluation,
which is all that is shared here.
"""

from __future__ import annotations

import hashlib
import pickle
import re
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

from regrade.values import CellRef, WorkbookValues
from regrade.workbook import cell_xml

REMEMBERED = 16  # evaluations one engine keeps in a case worker: a golden's controls come one after another
_ANY_CELL = re.compile(r"<c[\s>/]")
_SHEET_PART = re.compile(r"xl/(?:worksheets|dialogsheets|macrosheets)/[^/]+\.xml")


def computation_key(path: Path) -> str | None:
    """The sha256 of the workbook's package as an engine reads it: every part by name, the
    formula cells of each sheet without their cached value and its type. None when the file
    is no readable zip (the engine reports that itself, and nothing is shared). A sheet whose
    cells the patterns of :mod:`regrade.workbook.cell_xml` do not all find is taken as it is:
    only byte-identical copies of it then share."""
    try:
        with zipfile.ZipFile(path) as archive:
            digest = hashlib.sha256()
            for info in sorted(archive.infolist(), key=lambda i: i.filename):
                data = archive.read(info)
                if _SHEET_PART.fullmatch(info.filename):
                    data = _without_formula_caches(data)
                digest.update(len(info.filename).to_bytes(4, "big") + info.filename.encode())
                digest.update(len(data).to_bytes(8, "big") + data)
            return digest.hexdigest()
    except (OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError, ValueError, EOFError):
        return None


def _without_formula_caches(data: bytes) -> bytes:
    try:
        xml = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    if "<f" not in xml:
        return data
    found = cell_xml.cells(xml)
    if len(found) != len(_ANY_CELL.findall(xml)):
        return data  # a cell the patterns miss (or two with one address): no normalising
    stripped = {address: cell_xml.without_cache(cell) for address, cell in found.items() if cell_xml.has_formula(cell)}
    return cell_xml.apply(xml, stripped).encode("utf-8")


_LAST_KEY: dict[tuple, str | None] = {}  # the last file's key by its stat: a case's engines ask one after another


def file_computation_key(path: Path) -> str | None:
    """:func:`computation_key` of ``path``, worked out once for the engines of a case that ask
    for the same file one after another: the last file's key is kept by its path, inode, size
    and modification and change times (a file written again gets another key)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    signature = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    if signature not in _LAST_KEY:
        _LAST_KEY.clear()
        _LAST_KEY[signature] = computation_key(path)
    return _LAST_KEY[signature]


class SharingEngine:
    """An engine whose evaluations are remembered by :func:`computation_key` and the cells
    asked for (a few, in this process); ``shared`` counts those answered from memory."""

    def __init__(self, engine: Any):
        self.engine = engine
        self.shared = 0
        self._remembered: OrderedDict[tuple[str, tuple[CellRef, ...]], bytes] = OrderedDict()

    def evaluate(self, path: Path, cells: Sequence[CellRef]) -> WorkbookValues:
        content = file_computation_key(path)
        if content is None:
            return self.engine.evaluate(path, cells)
        key = (content, tuple(cells))
        if key in self._remembered:
            self._remembered.move_to_end(key)
            self.shared += 1
            values: WorkbookValues = pickle.loads(self._remembered[key])  # a copy: the caller may change it
            return values
        values = self.engine.evaluate(path, cells)
        if values.failure is None:
            self._remembered[key] = pickle.dumps(values)
            while len(self._remembered) > REMEMBERED:
                self._remembered.popitem(last=False)
        return values

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)
