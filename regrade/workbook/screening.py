"""Screening a workbook before any parser or engine opens it.

Every output was written by an agent under test; treat it as hostile. ``screen``
looks at the bytes only (``zipfile`` and ``zlib``, no XML parser) and refuses, with a
typed reason, what no engine should be handed:

=====================  ============================================================
``missing-file``       no such file, or a dangling link
``unreadable-output``  not a regular file (a folder, a device, a pipe), empty, not a
                       zip archive, a truncated or corrupt zip, a zip that is not a
                       spreadsheet (a Word document renamed)
``encrypted``          a password-protected workbook (an OLE2 container holding
                       ``EncryptionInfo``)
``legacy-format``      a binary ``.xls`` workbook under another name
``too-large``          the file is over ``Limits.max_file_bytes``
``zip-bomb``           too many parts, more than ``Limits.max_inflated_bytes`` once
                       inflated (declared or actual), a part inflating past its
                       declared size, or a part compressed beyond any real workbook
``hostile-xml``        an XML part with a document type declaration (``<!DOCTYPE``,
                       ``<!ENTITY``): entity-expansion bombs and external entities.
                       Excel never writes one
=====================  ============================================================

Decompressed sizes are capped before anything is parsed: each part is inflated in
chunks with a running count. The verdict is kept per (path, size, mtime), so the
engines of one case screen a file once.

``Screening.network_functions`` names the functions in the workbook that fetch from
the network when computed (``WEBSERVICE``); an engine that would fetch declines.
"""

from __future__ import annotations

import copy
import functools
import os
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from regrade.values import WorkbookFailure, WorkbookValues

MiB = 1024 * 1024
HOSTILE_REASONS = ("unreadable-output", "encrypted", "legacy-format", "too-large", "zip-bomb", "hostile-xml")


@dataclass(frozen=True)
class Limits:
    # the largest of SpreadsheetBench's 3,700 workbooks: 1.2 MB on disk, 20 MB inflated,
    # 603 parts, 35:1 for a part over 1 MB
    max_file_bytes: int = 256 * MiB
    max_inflated_bytes: int = 1024 * MiB
    max_parts: int = 100_000
    max_ratio: float = 200.0  # for a part that inflates past ratio_floor_bytes
    ratio_floor_bytes: int = 16 * MiB


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Screening:
    failure: WorkbookFailure | None = None
    network_functions: tuple[str, ...] = ()
    # False only where the whole file was screened and no part holds ``t="array"``, which
    # every array formula's ``<f>`` does: then no search for one is needed (sheets.array_formula_ranges)
    array_formulas: bool = True


OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
NOT_A_ZIP = {b"%PDF": "a PDF document", b"\x1f\x8b": "a gzip file", b"<": "an XML or HTML document",
             b"\xef\xbb\xbf<": "an XML or HTML document"}
SPREADSHEET_CONTENT = re.compile(rb"spreadsheetml\.(sheet|template)\.main\+xml|ms-excel\.(sheet|template|addin)\.macroEnabled")
_CODECS = ("utf-8", "utf-16-le", "utf-16-be")
DECLARATIONS = tuple(marker.encode(codec) for marker in ("<!DOCTYPE", "<!ENTITY") for codec in _CODECS)
DECLARATION_OPENINGS = tuple("<!".encode(codec) for codec in _CODECS)  # one of them begins each of DECLARATIONS
_NETWORK_FUNCTION_NAMES = ("WEBSERVICE",)
NETWORK_FUNCTIONS = re.compile(rb"\b(" + "|".join(_NETWORK_FUNCTION_NAMES).encode() + rb")\s*\(", re.IGNORECASE)
NETWORK_FUNCTION_NAMES = tuple(name.lower().encode() for name in _NETWORK_FUNCTION_NAMES)  # what a match holds, lowered
ARRAY_FORMULA_MARKER = b't="array"'
XML_PART = (".xml", ".rels", ".vml")
CHUNK = MiB
# A file's screening is kept, by its path, size, modification time and inode, for as long as the
# process lives: the goldens a warm case worker (regrade.run.pool) screened in one run are not
# inflated again in the next. SpreadsheetBench's goldens number 1,857; an entry is a few hundred
# bytes. An engine's worker keeps none from one workbook to the next (forget_screenings).
SCREENINGS_KEPT = 4096


def screen(path: Path, limits: Limits = DEFAULT_LIMITS) -> Screening:
    """Whether ``path`` may be handed to a parser, and what it calls that reaches the network."""
    try:
        info = os.stat(path)  # follows links: a dangling one is missing
    except FileNotFoundError:
        return Screening(WorkbookFailure("missing-file", f"{path} does not exist"))
    except OSError as exc:
        return Screening(WorkbookFailure("unreadable-output", f"{path} cannot be read: {exc.strerror}"))
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
        return Screening(WorkbookFailure("unreadable-output", f"{path} is {kind}, not a workbook file"))
    return _screen_file(str(path), info.st_size, info.st_mtime_ns, info.st_ino, limits)


def forget_screenings() -> None:
    """Forget every screening this process kept: an engine's worker screens each workbook it is
    sent afresh, as it would a file it never saw (what it costs is the engine's, the floor's)."""
    _screen_file.cache_clear()


def refusal(path: Path, limits: Limits = DEFAULT_LIMITS) -> WorkbookValues | None:
    """The result an engine gives for a workbook it must not open, else None."""
    failure = screen(path, limits).failure
    return None if failure is None else WorkbookValues(failure=failure)


@functools.lru_cache(maxsize=SCREENINGS_KEPT)
def _screen_file(path: str, size: int, mtime_ns: int, inode: int, limits: Limits) -> Screening:
    if size == 0:
        return Screening(WorkbookFailure("unreadable-output", "the file is empty"))
    if size > limits.max_file_bytes:
        return Screening(WorkbookFailure("too-large", f"{size / MiB:.0f} MB is over the {limits.max_file_bytes / MiB:.0f} MB limit"))
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
            if head == OLE2_MAGIC:
                return Screening(_ole2_failure(handle.read(limits.max_file_bytes)))
            if not head.startswith(ZIP_MAGICS):
                looks = next((what for magic, what in NOT_A_ZIP.items() if head.startswith(magic)), "no zip archive")
                return Screening(WorkbookFailure("unreadable-output", f"not an Excel workbook: the file is {looks}"))
            handle.seek(0)
            return _screen_zip(handle, limits)
    except OSError as exc:
        return Screening(WorkbookFailure("unreadable-output", f"cannot be read: {exc}"))


def _ole2_failure(body: bytes) -> WorkbookFailure:
    if "EncryptionInfo".encode("utf-16-le") in body:
        return WorkbookFailure("encrypted", "the workbook is password-protected (encrypted); no engine can read it")
    return WorkbookFailure("legacy-format", "a legacy binary workbook (.xls), not an Office Open XML (.xlsx) file")


def _screen_zip(handle, limits: Limits) -> Screening:
    try:
        archive = zipfile.ZipFile(handle)
        parts = archive.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        return Screening(WorkbookFailure("unreadable-output", f"a truncated or corrupt zip archive: {exc}"))
    if len(parts) > limits.max_parts:
        return Screening(WorkbookFailure("zip-bomb", f"{len(parts):,} parts (limit {limits.max_parts:,})"))
    declared = sum(p.file_size for p in parts)
    if declared > limits.max_inflated_bytes:
        return Screening(_bomb(f"its parts declare {declared / MiB:,.0f} MB inflated"))
    names = {p.filename for p in parts}
    if "[Content_Types].xml" not in names:
        return Screening(WorkbookFailure("unreadable-output", "not an Excel workbook: a zip without [Content_Types].xml"))
    network: set[str] = set()
    inflated, arrays = 0, False
    try:
        if not SPREADSHEET_CONTENT.search(archive.read("[Content_Types].xml")[: 4 * MiB]):
            return Screening(WorkbookFailure("unreadable-output", "not an Excel workbook: the package holds no spreadsheet"))
        for part in parts:
            found = _inflate(archive, part, limits, limits.max_inflated_bytes - inflated)
            if isinstance(found, WorkbookFailure):
                return Screening(found)
            size, calls, marked = found
            inflated += size
            network |= calls
            arrays = arrays or marked
    except Exception as exc:  # zipfile and zlib raise many kinds: a bad CRC, a broken deflate stream,
        # an unknown compression method, an encrypted zip entry ... all mean the archive is corrupt
        return Screening(WorkbookFailure("unreadable-output", f"a corrupt zip archive: {exc}"))
    return Screening(network_functions=tuple(sorted(network)), array_formulas=arrays)


def _inflate(archive: zipfile.ZipFile, part: zipfile.ZipInfo, limits: Limits,
             room: int) -> tuple[int, set[str], bool] | WorkbookFailure:
    """Inflate one part in chunks, never holding more than a chunk or inflating past ``room``;
    returns its actual size, the network functions it mentions and whether it holds
    :data:`ARRAY_FORMULA_MARKER`."""
    unbounded = copy.copy(part)
    unbounded.file_size = room + 1  # read what the data really inflates to, not what the header claims
    scan = part.filename.lower().endswith(XML_PART)
    size, tail, calls, arrays = 0, b"", set[str](), False
    with archive.open(unbounded) as stream:
        while chunk := stream.read(CHUNK):
            size += len(chunk)
            if size > room:
                return _bomb(f"{part.filename} inflates past the {limits.max_inflated_bytes / MiB:,.0f} MB limit")
            if size > part.file_size:
                return _bomb(f"{part.filename} inflates past its declared {part.file_size:,} bytes")
            window = tail + chunk if tail else chunk  # a part's first chunk, most often its only one: no copy
            arrays = arrays or ARRAY_FORMULA_MARKER in window  # in any part: a sheet's part may be named anyhow
            if scan:
                if any(opening in window for opening in DECLARATION_OPENINGS) and \
                        any(marker in window for marker in DECLARATIONS):
                    return WorkbookFailure("hostile-xml", f"{part.filename} declares a document type or entities "
                                           "(an entity-expansion bomb or an external entity); Excel never writes one")
                lowered = window.lower()  # ASCII only, as a bytes pattern's IGNORECASE folds
                if any(name in lowered for name in NETWORK_FUNCTION_NAMES):  # else the search finds none, 9x slower
                    calls.update(m.group(1).decode().upper() for m in NETWORK_FUNCTIONS.finditer(window))
            tail = window[-32:]
    if size > limits.ratio_floor_bytes and part.compress_size and size / part.compress_size > limits.max_ratio:
        return _bomb(f"{part.filename} is compressed {size / part.compress_size:,.0f}:1")
    return size, calls, arrays


def _bomb(detail: str) -> WorkbookFailure:
    return WorkbookFailure("zip-bomb", f"a zip bomb: {detail}")
